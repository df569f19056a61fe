"""SQuAD v1.1 / v2.0 JSON → question-answering examples, each answer checked against its context."""

import dataclasses
import json
import logging

from keras_bert_lib.file_checks import open_text

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class SquadExample:
    """One question on one context; `answers` are (text, start character) pairs, empty for a
    SQuAD v2.0 question without an answer (`is_impossible`).

    Example:
        ```python
        from keras_bert_lib.data import SquadExample
        example = SquadExample("q1", "Where is Paris?", "Paris is in France.", [("France", 12)])
        ```
    """

    id: str
    question: str
    context: str
    answers: list
    is_impossible: bool = False


def read_squad(path, mismatched="error"):
    """The examples of a SQuAD JSON file (v1.1 or v2.0), in file order.

    Every answer must sit in its context where `answer_start` says: `context[start:start +
    len(text)] == text`. A mismatch is an error naming the question and the two texts
    (`mismatched="error"`), or with `mismatched="skip"` the question is left out and the count
    logged (Google's run_squad.py skips such training questions too).

    Args:
        path: the JSON file.
        mismatched: "error" or "skip".
    Returns:
        list of SquadExample; `squad_scores(json.load(open(path))["data"], predictions)` scores answers.
    Example:
        ```python
        import json, os, tempfile
        from keras_bert_lib.data import read_squad
        data = {"version": "1.1", "data": [{"title": "Paris", "paragraphs": [{"context": "Paris is in France.",
                "qas": [{"id": "q1", "question": "Where is Paris?",
                         "answers": [{"text": "France", "answer_start": 12}]}]}]}]}
        path = os.path.join(tempfile.mkdtemp(), "dev.json")
        json.dump(data, open(path, "w"))
        read_squad(path)[0].answers   # [('France', 12)]
        ```
    """
    if mismatched not in ("error", "skip"):
        raise ValueError(f"mismatched={mismatched!r} is not 'error' or 'skip'.")
    try:
        with open_text(path) as f:
            data = json.load(f)["data"]
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        raise ValueError(f"{path}: not a SQuAD file ({type(e).__name__}: {e}); SQuAD JSON is "
                         '{"data": [{"paragraphs": [{"context": ..., "qas": [...]}]}]}.') from None
    examples, skipped = [], 0
    for article in data:
        for paragraph in article["paragraphs"]:
            context = paragraph["context"]
            for qa in paragraph["qas"]:
                answers = [(a["text"], int(a["answer_start"])) for a in qa.get("answers", [])]
                wrong = [(text, start) for text, start in answers if context[start:start + len(text)] != text]
                if wrong and mismatched == "error":
                    text, start = wrong[0]
                    raise ValueError(f"{path}, question {qa['id']!r}: the answer {text!r} is not at character "
                                     f"{start} of its context, which holds {context[start:start + len(text)]!r} there; "
                                     "fix answer_start (the answer's first character in the context, counted from "
                                     "0), or read with mismatched='skip' to leave such questions out.")
                if wrong:
                    skipped += 1
                    continue
                examples.append(SquadExample(str(qa["id"]), qa["question"], context, answers,
                                             bool(qa.get("is_impossible", False)) or not answers))
    if skipped:
        logger.warning("%s: %d question(s) left out whose answer is not where answer_start says.", path, skipped)
    if not examples:
        raise ValueError(f"{path} holds no questions{' that could be kept' if skipped else ''}.")
    return examples
