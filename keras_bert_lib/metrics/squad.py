"""SQuAD's exact match and F1, by the rules of the official evaluation scripts (v1.1; v2.0 for
questions without an answer)."""

import collections
import re
import string

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = set(string.punctuation)


def normalize_answer(text):
    """SQuAD's answer normal form: lower-cased, ASCII punctuation removed, the articles a/an/the
    removed, runs of whitespace collapsed to one space.

    Example:
        ```python
        from keras_bert_lib.metrics import normalize_answer
        normalize_answer("The  Eiffel Tower!")   # 'eiffel tower'
        ```
    """
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _exact(prediction, gold):
    return float(normalize_answer(prediction) == normalize_answer(gold))


def _f1(prediction, gold):
    """Token F1 of the normalised answers; 0 when they share no token (v1.1, also when both
    normalise to nothing)."""
    predicted, actual = normalize_answer(prediction).split(), normalize_answer(gold).split()
    shared = sum((collections.Counter(predicted) & collections.Counter(actual)).values())
    if shared == 0:
        return 0.0
    precision, recall = shared / len(predicted), shared / len(actual)
    return 2 * precision * recall / (precision + recall)


def squad_scores(dataset, predictions):
    """Exact match and F1 in percent over every question of a SQuAD file, each question scored
    against the best of its gold answers; a question missing from `predictions` scores 0.

    SQuAD v2.0's unanswerable questions (`is_impossible`, no answers) count as right only when the
    prediction is the empty string, as in the official v2.0 script.

    Args:
        dataset: the SQuAD JSON's `data` list (articles → paragraphs → qas).
        predictions: {question id: answer text}.
    Returns:
        {"exact_match": float, "f1": float, "questions": int, "missing": int}
    Example:
        ```python
        from keras_bert_lib.metrics import squad_scores
        data = [{"paragraphs": [{"context": "Paris is in France.", "qas": [
            {"id": "q1", "question": "Where is Paris?", "answers": [{"text": "France", "answer_start": 12}]}]}]}]
        squad_scores(data, {"q1": "in France"})   # exact_match 0.0, f1 66.7
        ```
    """
    exact = f1 = 0.0
    total = missing = 0
    for article in dataset:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                total += 1
                if qa["id"] not in predictions:
                    missing += 1
                    continue
                golds, prediction = [a["text"] for a in qa.get("answers", [])], predictions[qa["id"]]
                if not golds:  # v2.0's unanswerable question: right only when nothing is predicted
                    exact += float(not normalize_answer(prediction))
                    f1 += float(not normalize_answer(prediction))
                    continue
                exact += max(_exact(prediction, g) for g in golds)
                f1 += max(_f1(prediction, g) for g in golds)
    if total == 0:
        raise ValueError("The SQuAD dataset has no questions: pass the JSON's 'data' list "
                         "(articles → paragraphs → qas).")
    return {"exact_match": 100.0 * exact / total, "f1": 100.0 * f1 / total, "questions": total, "missing": missing}
