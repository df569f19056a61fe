"""Our pre-training TFRecords parse with Google's feature spec, and Google-spec files parse with ours."""

import pathlib

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lib.data.tfrecords import (
    check_tfrecords,
    read_pretraining_tfrecords,
    write_pretraining_tfrecords,
)

T, P = 16, 4

# create_pretraining_data.py's reader spec (run_pretraining.py input_fn_builder), written out.
GOOGLE_FEATURES = {
    "input_ids": tf.io.FixedLenFeature([T], tf.int64),
    "input_mask": tf.io.FixedLenFeature([T], tf.int64),
    "segment_ids": tf.io.FixedLenFeature([T], tf.int64),
    "masked_lm_positions": tf.io.FixedLenFeature([P], tf.int64),
    "masked_lm_ids": tf.io.FixedLenFeature([P], tf.int64),
    "masked_lm_weights": tf.io.FixedLenFeature([P], tf.float32),
    "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
}


def _batches(n=3, size=4, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        inputs = {"token_ids": rng.integers(0, 99, (size, T)).astype("int32"),
                  "segment_ids": rng.integers(0, 2, (size, T)).astype("int32"),
                  "padding_mask": np.ones((size, T), "int32"),
                  "masked_positions": rng.integers(0, T, (size, P)).astype("int32")}
        labels = {"mlm_logits": rng.integers(0, 99, (size, P)).astype("int32"),
                  "nsp_logits": rng.integers(0, 2, size).astype("int32")}
        weights = {"mlm_logits": (rng.random((size, P)) > 0.3).astype("float32"),
                   "nsp_logits": np.ones(size, "float32")}
        yield inputs, labels, weights


@pytest.mark.parametrize("compression", [None, "GZIP"])
def test_our_records_parse_with_googles_spec_and_read_back(tmp_path, compression):
    batches = list(_batches())
    paths = write_pretraining_tfrecords(batches, str(tmp_path / "pre"), num_shards=2, compression=compression)
    assert [p.split("/")[-1] for p in paths] == ["pre-00000-of-00002.tfrecord", "pre-00001-of-00002.tfrecord"]
    parsed = [tf.io.parse_single_example(r, GOOGLE_FEATURES)
              for r in tf.data.TFRecordDataset(paths, compression_type=compression or "")]
    assert len(parsed) == 12
    ours = list(read_pretraining_tfrecords(str(tmp_path / "pre-*"), T, P, batch_size=12,
                                           compression=compression, shuffle_files=False, seed=0))
    inputs, labels, weights = ours[0]
    expected_ids = np.concatenate([b[0]["token_ids"] for b in batches])
    assert sorted(map(tuple, inputs["token_ids"].numpy())) == sorted(map(tuple, expected_ids))
    assert inputs["masked_positions"].dtype == tf.int32 and weights["mlm_logits"].dtype == tf.float32


def test_files_written_with_googles_spec_parse_with_our_reader(tmp_path):
    path = str(tmp_path / "google.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        for row in range(5):
            values = {k: list(range(row, row + spec.shape[0])) for k, spec in GOOGLE_FEATURES.items()}
            values["next_sentence_labels"] = [row % 2]
            feature = {
                k: tf.train.Feature(float_list=tf.train.FloatList(value=[float(x) for x in v]))
                if GOOGLE_FEATURES[k].dtype == tf.float32
                else tf.train.Feature(int64_list=tf.train.Int64List(value=v))
                for k, v in values.items()
            }
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    records = read_pretraining_tfrecords(path, T, P, batch_size=5, shuffle_files=False)
    assert not records.options().autotune.enabled  # see keras_bert_lib.data.pipeline_options
    inputs, labels, weights = next(iter(records))
    np.testing.assert_array_equal(inputs["token_ids"].numpy()[2], np.arange(2, 2 + T))
    np.testing.assert_array_equal(labels["nsp_logits"].numpy(), [0, 1, 0, 1, 0])
    np.testing.assert_array_equal(weights["mlm_logits"].numpy()[1], np.arange(1, 1 + P, dtype="float32"))


def test_a_corrupt_record_fails_or_is_skipped_on_request(tmp_path):
    paths = write_pretraining_tfrecords(list(_batches(n=2)), str(tmp_path / "pre"))
    data = open(paths[0], "rb").read()
    open(paths[0], "wb").write(data[: len(data) // 2] + b"\x00" * 64 + data[len(data) // 2 + 64:])
    with pytest.raises(tf.errors.DataLossError):
        list(read_pretraining_tfrecords(paths[0], T, P, batch_size=1, shuffle_files=False))
    with pytest.raises(ValueError, match=r"pre-00000-of-00001.tfrecord is corrupt after record \d+: corrupted record"):
        check_tfrecords(paths)
    kept = list(read_pretraining_tfrecords(paths[0], T, P, batch_size=1, shuffle_files=False, skip_corrupt=True))
    assert 0 < len(kept) < 8


@pytest.mark.xdist_group("finished_run")
def test_the_recipe_writes_static_masked_albert_records_once(finished_run):
    """--masking static: dupe_factor copies masked once, in ALBERT's format (SOP adds
    token_boundary), sharded; the same output_dir reads them again instead of rewriting."""
    from keras_bert_lib.data import build_pretraining_datasets
    from keras_bert_lib.text import WordPieceTokenizer

    _, configs, run_report = finished_run
    config, report = configs["phase2"], run_report["phases"][1]
    T, P, folder = config.max_seq_length, config.max_predictions, pathlib.Path(config.output_dir) / "pretraining_data"
    shards = sorted(folder.glob("train-*.tfrecord"))
    assert [s.name for s in shards] == ["train-00000-of-00002.tfrecord", "train-00001-of-00002.tfrecord"]
    albert = {**{k: tf.io.FixedLenFeature([T if k in ("input_ids", "input_mask", "segment_ids") else P],
                                          v.dtype) for k, v in GOOGLE_FEATURES.items() if k != "next_sentence_labels"},
              "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
              "token_boundary": tf.io.FixedLenFeature([T], tf.int64)}
    records = [tf.io.parse_single_example(r, albert) for r in tf.data.TFRecordDataset([str(s) for s in shards])]
    assert len(records) == report["train_instances"]
    vocabulary = pathlib.Path(config.vocab).read_text().splitlines()
    for record in records[:50]:
        ids, mask = record["input_ids"].numpy(), record["input_mask"].numpy()
        starts = np.array([not vocabulary[i].startswith("##") for i in ids]) & (mask == 1)
        np.testing.assert_array_equal(record["token_boundary"].numpy(), starts.astype(int))
        weights = record["masked_lm_weights"].numpy()
        assert 1 <= weights.sum() <= P and set(np.unique(record["next_sentence_labels"].numpy())) <= {0, 1}
    written = [s.stat().st_mtime_ns for s in shards]
    settings = dict(
        max_seq_length=T,
        max_predictions=P,
        dupe_factor=2,
        sentence_task="sop",
        batch_size=config.batch_size,
        eval_fraction=config.eval_fraction,
        static_records=str(folder),
        num_shards=2,
        verbose=False,
    )
    tokenizer = WordPieceTokenizer(config.vocab)
    build_pretraining_datasets(config.corpus, tokenizer, **settings)  # reads, does not rewrite
    assert [s.stat().st_mtime_ns for s in shards] == written
    with pytest.raises(ValueError, match=r"other settings \{'dupe_factor': \(2, 3\)\}"):
        build_pretraining_datasets(config.corpus, tokenizer, **{**settings, "dupe_factor": 3})
