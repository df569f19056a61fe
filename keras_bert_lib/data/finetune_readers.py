"""Fine-tuning data: labelled texts (or text pairs) from CSV, TSV or JSONL files, or from TFDS.

Every problem is found when the files are read, before a model is built: a missing file or
column, an empty file or cell, a label the training file lacks, pairs where one text is expected.
Errors name the file, the line and the fix.
"""

import csv
import dataclasses
import json
import os
import sys

from keras_bert_lib.file_checks import open_text

FORMATS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl"}


@dataclasses.dataclass(frozen=True)
class Examples:
    """Texts, their second texts for pairs (or None), labels (or None), where each came from, and
    for a dual encoder's (anchor, positive, hard negative) triples the negatives (or None).

    Example:
        ```python
        from keras_bert_lib.data import Examples
        examples = Examples("mine", texts=["good", "bad"], pairs=None, labels=["pos", "neg"], lines=[2, 3])
        ```
    """

    source: str
    texts: list
    pairs: list | None
    labels: list | None
    lines: list  # the line of each example in its file (1-based; a CSV's header is line 1)
    negatives: list | None = None

    def __len__(self):
        return len(self.texts)

    def where(self, i):
        """'file, line N' of example i, for error messages."""
        return f"{self.source}, line {self.lines[i]}"

    @property
    def inputs(self):
        """What a model of texts takes: the texts, or (texts, second texts) for pairs."""
        return self.texts if self.pairs is None else (self.texts, self.pairs)


def _rows(path):
    """(line, {column: value}) of a CSV/TSV/JSONL file, and its columns."""
    kind = FORMATS.get(os.path.splitext(path)[1].lower())
    if kind is None:
        raise ValueError(f"{path}: the file type is read from its extension, one of {sorted(FORMATS)}; "
                         "rename it (a comma-separated file .csv, tab-separated .tsv, one JSON object a line .jsonl).")
    with open_text(path, newline="") as f:
        if kind == "jsonl":
            rows = []
            for line, text in enumerate(f, 1):
                if text.strip():
                    try:
                        row = json.loads(text)
                    except json.JSONDecodeError as e:
                        raise ValueError(f"{path}, line {line}: not a JSON object ({e.msg}); JSONL holds one "
                                         "object per line.") from None
                    if not isinstance(row, dict):
                        raise ValueError(f"{path}, line {line}: a JSON {type(row).__name__}, not an object.")
                    rows.append((line, row))
            columns = list(dict.fromkeys(k for _, row in rows for k in row))
            return rows, columns
        csv.field_size_limit(min(sys.maxsize, 2**31 - 1))  # a long document is a text too; the model cuts it
        reader = csv.DictReader(f, delimiter="\t" if kind == "tsv" else ",",
                                quoting=csv.QUOTE_NONE if kind == "tsv" else csv.QUOTE_MINIMAL)
        try:
            rows = [(reader.line_num, row) for row in reader]
        except csv.Error as e:
            raise ValueError(f"{path}, line {reader.line_num}: not {kind.upper()} ({e}); fix the file (a quote left "
                             "open is the usual cause).") from None
        return rows, list(reader.fieldnames or [])


def read_examples(path, text_column="text", text_pair_column="text_pair", label_column="label", pairs=None,
                  labelled=True, negative_column=None):
    """Reads labelled texts, or text pairs, from a CSV, TSV or JSONL file.

    Args:
        path: `.csv` (with a header row), `.tsv` (header row, no quoting: GLUE's files) or
            `.jsonl` (one object a line).
        text_column, text_pair_column, label_column: column names.
        pairs: None to read pairs when the file has `text_pair_column`; True to require them;
            False to refuse a file that has them (a model that takes one text).
        labelled: True to require `label_column`; None to read it where the file has one, an
            empty cell giving the label None (texts for distillation, labelled or not); False to
            ignore it.
        negative_column: None, or the column of a hard negative for each pair (read into
            `Examples.negatives`).
    Returns:
        `Examples`.
    Raises:
        ValueError: naming the file, line and fix: no such file, an unknown file type or column,
            no examples, an empty text or label.
    Example:
        ```python
        import os, tempfile
        from keras_bert_lib.data import read_examples
        path = os.path.join(tempfile.mkdtemp(), "train.csv")
        with open(path, "w") as f:
            f.write("text,label\\ngreat film,fresh\\ndull plot,rotten\\n")
        read_examples(path).labels   # ['fresh', 'rotten']
        ```
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ValueError(f"No such file: {path}")
    if not os.path.getsize(path):
        raise ValueError(f"{path} is empty (0 bytes); it needs a header row of column names and one row per "
                         "example.")
    rows, columns = _rows(path)
    flags = {text_column: "--text-column", text_pair_column: "--text-pair-column", label_column: "--label-column",
             negative_column: "--negative-column"}
    optional = [negative_column] if negative_column else []
    needed = [text_column] + ([label_column] if labelled else []) + ([text_pair_column] if pairs else []) + optional
    for name in needed:
        if name not in columns:
            raise ValueError(
                f"{path} has no column {name!r} (its columns: {', '.join(map(repr, columns)) or 'none'}); "
                f"name the right one with {flags[name]} ({flags[name][2:].replace('-', '_')}=... in Python)."
            )
    has_pairs = text_pair_column in columns
    if pairs is False and has_pairs:
        raise ValueError(f"{path} has a {text_pair_column!r} column, but the model takes one text: drop the "
                         "column, or train a pair model on it (the training file must have pairs too).")
    if not rows:
        raise ValueError(f"{path} holds no examples (no rows under its header); fill it, or point to another file.")
    use_pairs = has_pairs if pairs is None else pairs
    some_labels = labelled is None and label_column in columns
    texts, second, labels, lines = [], [] if use_pairs else None, [] if labelled or some_labels else None, []
    negatives = [] if negative_column else None
    for line, row in rows:
        wanted = (
            [text_column] + ([text_pair_column] if use_pairs else []) + ([label_column] if labelled else []) + optional
        )
        for name in wanted:
            value = row.get(name)
            if value is None or (isinstance(value, str) and not value.strip()):
                raise ValueError(f"{path}, line {line}: the {name!r} column is empty; fill it or drop the row.")
        texts.append(str(row[text_column]))
        if use_pairs:
            second.append(str(row[text_pair_column]))
        if labelled:
            labels.append(row[label_column] if not isinstance(row[label_column], str) else row[label_column].strip())
        elif some_labels:
            value = row.get(label_column)
            labels.append(None if value is None or str(value).strip() == "" else
                          value.strip() if isinstance(value, str) else value)
        if negative_column:
            negatives.append(str(row[negative_column]))
        lines.append(line)
    return Examples(path, texts, second, labels, lines, negatives)


def read_splits(train=None, validation=None, tfds=None, tfds_splits=("train", "validation"), *, pairs=None,
                labelled=True, negative_column=None, **columns):
    """(training, validation) `Examples` from two files (`read_examples`, the validation file read
    as the training file was: pairs if it had them, no hard negatives) or from a TFDS data set
    (`read_tfds`, which finds GLUE's text columns itself).

    Example:
        ```python
        from keras_bert_lib.data import movie_reviews, read_splits
        train, validation = read_splits(**movie_reviews())
        len(train), len(validation)   # (400, 200)
        ```
    """
    if tfds:
        return tuple(read_tfds(tfds, split) for split in tfds_splits)
    train_set = read_examples(train, **columns, pairs=pairs, labelled=labelled, negative_column=negative_column)
    return train_set, read_examples(validation, **columns, pairs=train_set.pairs is not None, labelled=labelled)


def label_classes(train, *others):
    """The sorted label values of `train` as class names, and each set's labels as class indices.

    Raises a ValueError naming the file, the line, the label and the fix when another set (the
    validation file) holds a label the training file does not.

    Example:
        ```python
        from keras_bert_lib.data import Examples, label_classes
        train = Examples("train", ["a", "b"], None, ["pos", "neg"], [2, 3])
        names, (train_ids,) = label_classes(train)
        names, train_ids.tolist()   # (['neg', 'pos'], [1, 0])
        ```
    """
    import numpy as np

    names = sorted({str(label) for label in train.labels})
    index = {name: i for i, name in enumerate(names)}
    ids = []
    for examples in (train, *others):
        for i, label in enumerate(examples.labels):
            if str(label) not in index:
                raise ValueError(f"{examples.where(i)}: the label {str(label)!r} is not in the training file "
                                 f"{train.source} (its labels: {', '.join(names)}); add training examples of it, "
                                 "or drop these rows.")
        ids.append(np.array([index[str(label)] for label in examples.labels], "int32"))
    return names, ids


# TFDS text features by role: GLUE names its texts sentence, sentence1/2, question1/2, premise/hypothesis.
_FIRST = ("sentence", "sentence1", "question1", "premise", "question", "text")
_SECOND = ("sentence2", "question2", "hypothesis", "passage")


def read_tfds(name, split, data_dir=None):
    """Labelled texts or pairs of a TFDS data set such as `glue/sst2` or `glue/mrpc`.

    The first and second texts are found by GLUE's feature names; a ClassLabel's integers become
    its names. TFDS downloads and prepares the data on first use (not possible here: the tests
    run this under `tfds.testing.mock_data`).

    Example:
        ```python
        from keras_bert_lib.data import read_tfds
        # examples = read_tfds("glue/sst2", "train")   # downloads GLUE on first use
        ```
    """
    try:
        import tensorflow_datasets as tfds
    except ImportError:
        raise ImportError(
            "Reading TFDS data sets needs tensorflow-datasets: pip install 'keras-bert-lib[tfds]'."
        ) from None
    dataset, info = tfds.load(name, split=split, data_dir=data_dir, with_info=True)
    features = info.features
    first = next((k for k in _FIRST if k in features), None)
    if first is None:
        raise ValueError(f"TFDS {name} has no text feature named one of {_FIRST} (its features: {list(features)}).")
    second = next((k for k in _SECOND if k in features and k != first), None)
    names = getattr(features["label"], "names", None) if "label" in features else None
    texts, pairs, labels = [], [] if second else None, []
    for example in tfds.as_numpy(dataset):
        texts.append(example[first].decode("utf-8"))
        if second:
            pairs.append(example[second].decode("utf-8"))
        label = example["label"]
        if names and not 0 <= int(label) < len(names):  # GLUE's test splits: label -1, no answers
            raise ValueError(f"TFDS {name}[{split}] has no labels (label {int(label)}); use a split with labels, "
                             "e.g. --tfds-splits train validation.")
        labels.append(names[int(label)] if names else float(label))
    return Examples(f"tfds:{name}[{split}]", texts, pairs, labels, list(range(1, len(texts) + 1)))
