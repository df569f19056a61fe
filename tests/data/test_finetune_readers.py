"""Fine-tuning readers: the three file formats give the same examples, every bad input is an error
naming the file, the line and the fix, and TFDS data sets read under tfds.testing.mock_data."""

import csv
import json
import os

import numpy as np
import pytest

from keras_bert_lib.data import label_classes, movie_reviews, read_examples, read_splits, read_tfds

HERE = os.path.dirname(os.path.abspath(__file__))
ROWS = [{"text": "A fine film, \"tense\", and warm.", "text_pair": "It was good.", "label": "fresh"},
        {"text": "Dull\tand long", "text_pair": "It was bad.", "label": "rotten"}]


def _write(path, rows, columns=("text", "text_pair", "label")):
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps({c: r[c] for c in columns}) + "\n" for r in rows))
    elif path.suffix == ".tsv":  # GLUE's way: no quoting at all, quotes kept as they are
        path.write_text("".join("\t".join(line) + "\n" for line in
                                [columns, *([r[c].replace("\t", " ") for c in columns] for r in rows)]))
    else:
        with open(path, "w", newline="") as f:
            writer = csv.DictWriter(f, columns, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)
    return path


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".jsonl"])
def test_each_format_reads_texts_pairs_labels_and_lines(tmp_path, suffix):
    examples = read_examples(_write(tmp_path / f"train{suffix}", ROWS))
    expected_text = [r["text"].replace("\t", " ") if suffix == ".tsv" else r["text"] for r in ROWS]
    assert examples.texts == expected_text
    assert examples.pairs == ["It was good.", "It was bad."] and examples.labels == ["fresh", "rotten"]
    assert examples.lines == ([2, 3] if suffix != ".jsonl" else [1, 2])
    single = read_examples(_write(tmp_path / f"single{suffix}", ROWS, ("text", "label")))
    assert single.pairs is None and len(single) == 2


def test_a_hard_negative_column_is_read_when_named_and_refused_by_name_when_missing(tmp_path):
    rows = [{"text": "what is ai?", "text_pair": "machines that think", "negative": "a kind of fruit"}]
    path = _write(tmp_path / "triples.jsonl", rows, ("text", "text_pair", "negative"))
    examples = read_examples(path, pairs=True, labelled=False, negative_column="negative")
    assert examples.negatives == ["a kind of fruit"] and examples.pairs == ["machines that think"]
    assert read_examples(path, pairs=True, labelled=False).negatives is None
    with pytest.raises(ValueError, match=r"no column 'hard' .*name the right one with --negative-column "
                                         r"\(negative_column=\.\.\. in Python\)"):
        read_examples(path, pairs=True, labelled=False, negative_column="hard")
    (tmp_path / "hole.csv").write_text("text,text_pair,negative\nq,a,\n")
    with pytest.raises(ValueError, match=r"hole.csv, line 2: the 'negative' column is empty"):
        read_examples(tmp_path / "hole.csv", pairs=True, labelled=False, negative_column="negative")


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_optional_labels_are_read_where_given(tmp_path, suffix):
    rows = [{"text": "good", "label": "fresh"}, {"text": "fine", "label": ""}, {"text": "dull", "label": "rotten"}]
    some = read_examples(_write(tmp_path / f"some{suffix}", rows, ("text", "label")), labelled=None)
    assert some.texts == ["good", "fine", "dull"] and some.labels == ["fresh", None, "rotten"]
    assert read_examples(_write(tmp_path / f"none{suffix}", rows, ("text",)), labelled=None).labels is None
    with pytest.raises(ValueError, match="line 2: the 'label' column is empty" if suffix == ".jsonl" else
                       "line 3: the 'label' column is empty"):
        read_examples(tmp_path / f"some{suffix}")  # labels required: an empty one is an error


def test_the_committed_movie_reviews_read_with_their_counts():
    train = read_examples(movie_reviews()["train"])
    validation = read_examples(movie_reviews()["validation"])
    names, (train_ids, validation_ids) = label_classes(train, validation)
    assert names == ["fresh", "rotten"] and len(train) == 400 and len(validation) == 200
    assert np.bincount(train_ids).tolist() == [235, 165] and np.bincount(validation_ids).tolist() == [116, 84]


def test_bad_files_are_named_with_the_line_and_the_fix(tmp_path):
    train = _write(tmp_path / "train.csv", ROWS)
    with pytest.raises(ValueError, match=r"train.csv has no column 'sentence' \(its columns: 'text', 'text_pair', "
                                         r"'label'\); name the right one with --text-column"):
        read_examples(train, text_column="sentence")
    (tmp_path / "empty.csv").write_text("text,label\n")
    with pytest.raises(ValueError, match="empty.csv holds no examples"):
        read_examples(tmp_path / "empty.csv")
    (tmp_path / "hole.csv").write_text("text,label\ngood,fresh\n ,rotten\n")
    with pytest.raises(ValueError, match=r"hole.csv, line 3: the 'text' column is empty; fill it or drop the row"):
        read_examples(tmp_path / "hole.csv")
    (tmp_path / "broken.jsonl").write_text('{"text": "a", "label": 1}\n{"text": "b", \n')
    with pytest.raises(ValueError, match=r"broken.jsonl, line 2: not a JSON object"):
        read_examples(tmp_path / "broken.jsonl")
    with pytest.raises(ValueError, match=r"train.csv has a 'text_pair' column, but the model takes one text"):
        read_examples(train, pairs=False)
    with pytest.raises(ValueError, match=r"the file type is read from its extension"):
        read_examples(_write(tmp_path / "train.txt", ROWS))
    with pytest.raises(ValueError, match="No such file"):
        read_examples(tmp_path / "missing.csv")


def test_a_validation_label_the_training_file_lacks_is_named():
    from keras_bert_lib.data import Examples

    train = Examples("train.csv", ["a", "b"], None, ["fresh", "rotten"], [2, 3])
    validation = Examples("validation.csv", ["c", "d", "e"], None, ["fresh", "plot", "rotten"], [2, 3, 4])
    with pytest.raises(ValueError, match=r"validation.csv, line 3: the label 'plot' is not in the training file "
                                         r"train.csv \(its labels: fresh, rotten\); add training examples"):
        label_classes(train, validation)


@pytest.mark.slow
def test_tfds_glue_texts_pairs_and_label_names_under_mock_data():
    """Read directly and as a run reads `--tfds` (its train and validation splits)."""
    import tensorflow_datasets as tfds

    with tfds.testing.mock_data(num_examples=5):
        sst2, mrpc = read_tfds("glue/sst2", "train"), read_tfds("glue/mrpc", "validation")
        train, validation = read_splits(tfds="glue/mrpc")
    assert (train.source, validation.source) == ("tfds:glue/mrpc[train]", "tfds:glue/mrpc[validation]")
    assert len(train.pairs) == len(validation.pairs) == 5
    assert len(sst2) == 5 and sst2.pairs is None and set(sst2.labels) <= {"negative", "positive"}
    assert len(mrpc) == 5 and len(mrpc.pairs) == 5 and set(mrpc.labels) <= {"not_equivalent", "equivalent"}
    assert all(isinstance(t, str) for t in sst2.texts + mrpc.pairs)
