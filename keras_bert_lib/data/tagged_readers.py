"""Token-level labels: CoNLL column files or JSONL of (tokens, tags) → sentences of words and tags.

IOB entity tags are read as IOB2 (CoNLL-2003's original IOB1 `I-X` that opens an entity becomes
`B-X`); other tag sets (part of speech) are kept as they are. Errors name the file, the line and
the fix.
"""

import dataclasses
import json

from keras_bert_lib.file_checks import open_text
from keras_bert_lib.metrics.entities import to_iob2


@dataclasses.dataclass(frozen=True)
class TaggedSentences:
    """Sentences as word lists with one tag per word, and the line where each sentence starts.

    Example:
        ```python
        from keras_bert_lib.data import TaggedSentences
        data = TaggedSentences("mine", words=[["Ann", "runs"]], tags=[["B-PER", "O"]], lines=[1])
        ```
    """

    source: str
    words: list
    tags: list
    lines: list

    def __len__(self):
        return len(self.words)

    def labels(self):
        """The sorted set of tags in these sentences."""
        return sorted({t for sentence in self.tags for t in sentence})


def _is_iob(tags):
    return all(t == "O" or (len(t) > 2 and t[0] in "BI" and t[1] == "-") for t in tags)


def read_tagged(path, word_column=0, tag_column=-1, labels=None, tokens_key="tokens", tags_key="tags"):
    """The sentences of a CoNLL file (whitespace-separated columns, a blank line between sentences,
    `-DOCSTART-` lines skipped) or, for `.jsonl`, of one {"tokens": [...], "tags": [...]} per line.

    Args:
        path: the file.
        word_column, tag_column: CoNLL columns of the word and its tag (CoNLL-2003: 0 and -1).
        labels: the allowed tags (from the training file: `train.labels()`), or None for any.
        tokens_key, tags_key: the JSONL keys.
    Returns:
        TaggedSentences.
    Raises:
        ValueError: a line without the tag column, a sentence whose tags and words differ in
            number, a tag outside `labels`, an empty file.
    Example:
        ```python
        import os, tempfile
        from keras_bert_lib.data import read_tagged
        path = os.path.join(tempfile.mkdtemp(), "train.conll")
        open(path, "w").write("-DOCSTART- -X- O O\\n\\nAnn NNP B-NP I-PER\\nruns VBZ B-VP O\\n")
        read_tagged(path).tags   # [['B-PER', 'O']]
        ```
    """
    words, tags, lines = [], [], []
    with open_text(path) as f:
        if path.lower().endswith((".jsonl", ".json", ".ndjson")):
            for line, text in enumerate(f, 1):
                if text.strip():
                    row = json.loads(text)
                    if not isinstance(row, dict) or tokens_key not in row or tags_key not in row:
                        raise ValueError(f"{path}, line {line}: expected a JSON object with {tokens_key!r} and "
                                         f"{tags_key!r} lists (tokens_key=..., tags_key=... name others).")
                    if len(row[tokens_key]) != len(row[tags_key]):
                        raise ValueError(f"{path}, line {line}: {len(row[tokens_key])} tokens but "
                                         f"{len(row[tags_key])} tags; give one tag per token.")
                    words.append(list(row[tokens_key]))
                    tags.append(list(row[tags_key]))
                    lines.append(line)
        else:
            sentence, sentence_tags, start = [], [], 0
            for line, text in enumerate([*f, ""], 1):
                columns = text.split()
                if columns and columns[0] != "-DOCSTART-":
                    n = len(columns)
                    if not (-n <= word_column < n and -n <= tag_column < n) or word_column % n == tag_column % n:
                        raise ValueError(f"{path}, line {line}: {n} column(s), so no separate word column "
                                         f"{word_column} and tag column {tag_column}; every line needs both (set "
                                         "word_column= and tag_column=).")
                    sentence.append(columns[word_column])
                    sentence_tags.append(columns[tag_column])
                    start = start or line
                elif sentence:
                    words.append(sentence)
                    tags.append(sentence_tags)
                    lines.append(start)
                    sentence, sentence_tags, start = [], [], 0
    if not words:
        raise ValueError(f"{path} holds no sentences.")
    if _is_iob([t for s in tags for t in s]):
        tags = [to_iob2(s) for s in tags]
    if labels is not None:
        allowed = set(labels)
        for sentence_tags, line in zip(tags, lines):
            unknown = [t for t in sentence_tags if t not in allowed]
            if unknown:
                raise ValueError(f"{path}, sentence at line {line}: tag {unknown[0]!r} is not among the "
                                 f"{len(allowed)} tags of the training data ({', '.join(sorted(allowed))}); "
                                 "add examples of it to the training file or map it to one of those.")
    return TaggedSentences(path, words, tags, lines)
