"""Pre-training TFRecords in Google's format (create_pretraining_data.py), written and read."""

import os

import numpy as np
import tensorflow as tf

from keras_bert_lib.data.pipeline_options import without_autotune


def google_feature_spec(max_seq_length=128, max_predictions=20, albert=False):
    """The feature spec of Google's pre-training records (create_pretraining_data.py); ALBERT adds
    `token_boundary`.

    Example:
        ```python
        from keras_bert_lib.data.tfrecords import google_feature_spec
        spec = google_feature_spec(128, 20)
        sorted(spec)[:2]   # ['input_ids', 'input_mask']
        ```
    """
    ints = lambda n: tf.io.FixedLenFeature([n], tf.int64)  # noqa: E731
    spec = {
        "input_ids": ints(max_seq_length), "input_mask": ints(max_seq_length),
        "segment_ids": ints(max_seq_length), "masked_lm_positions": ints(max_predictions),
        "masked_lm_ids": ints(max_predictions),
        "masked_lm_weights": tf.io.FixedLenFeature([max_predictions], tf.float32),
        "next_sentence_labels": ints(1),
    }
    if albert:
        spec["token_boundary"] = ints(max_seq_length)
    return spec


def write_pretraining_tfrecords(batches, path_prefix, num_shards=1, compression=None):
    """Writes masked batches (from `mask_tokens`, with sentence labels) as Google-format records.

    Each shard is written to a temporary name and renamed when complete, so a reader never sees
    half a file. Inputs that carry `token_boundary` (ALBERT's files: 1 where a word begins) have
    it written too. Returns the shard paths.

    Args:
        batches: iterable of (inputs, labels, weights) as the pre-training dataset yields them.
        path_prefix: shards are `{path_prefix}-{i:05d}-of-{n:05d}.tfrecord`.
        num_shards: int. Examples are dealt round robin over the shards.
        compression: None, "GZIP" or "ZLIB".
    Example:
        ```python
        # write_pretraining_tfrecords(dataset.take(100), "data/pretrain", num_shards=4)
        ```
    """
    paths = [f"{path_prefix}-{i:05d}-of-{num_shards:05d}.tfrecord" for i in range(num_shards)]
    os.makedirs(os.path.dirname(os.path.abspath(path_prefix)), exist_ok=True)
    options = tf.io.TFRecordOptions(compression_type=compression or "")
    writers = [tf.io.TFRecordWriter(p + ".partial", options) for p in paths]
    count = 0
    for inputs, labels, weights in batches:
        arrays = {
            "input_ids": inputs["token_ids"], "input_mask": inputs["padding_mask"],
            "segment_ids": inputs["segment_ids"], "masked_lm_positions": inputs["masked_positions"],
            "masked_lm_ids": labels["mlm_logits"], "masked_lm_weights": weights["mlm_logits"],
            "next_sentence_labels": np.reshape(labels["nsp_logits"], (-1, 1)),
        }
        if "token_boundary" in inputs:
            arrays["token_boundary"] = inputs["token_boundary"]
        arrays = {k: np.asarray(v) for k, v in arrays.items()}
        for row in range(len(arrays["input_ids"])):
            feature = {
                k: tf.train.Feature(float_list=tf.train.FloatList(value=v[row].tolist()))
                if v.dtype.kind == "f" else tf.train.Feature(int64_list=tf.train.Int64List(value=v[row].tolist()))
                for k, v in arrays.items()
            }
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writers[count % num_shards].write(example.SerializeToString())
            count += 1
    for writer, path in zip(writers, paths):
        writer.close()
        os.replace(path + ".partial", path)
    return paths


def read_pretraining_tfrecords(pattern, max_seq_length=128, max_predictions=20, batch_size=32,
                               compression=None, skip_corrupt=False, shuffle_files=True, seed=None,
                               albert=False):
    """Reads Google-format pre-training records as (inputs, labels, weights) batches.

    Files are read in parallel (interleave), parsed in batches, and prefetched. A corrupt record
    raises `tf.errors.DataLossError` ("corrupted record at N"; TensorFlow does not say which
    file, so run `check_tfrecords` to name it); with `skip_corrupt=True` the damaged rest of that
    file is skipped instead, with a logged warning. `albert=True` reads ALBERT's files, whose
    `token_boundary` is checked by the parser and not passed to the model.

    Example:
        ```python
        # dataset = read_pretraining_tfrecords("data/pretrain-*.tfrecord", batch_size=256)
        ```
    """
    files = tf.data.Dataset.list_files(pattern, shuffle=shuffle_files, seed=seed)
    spec = google_feature_spec(max_seq_length, max_predictions, albert)

    def records(path):
        ds = tf.data.TFRecordDataset(path, compression_type=compression or "")
        if skip_corrupt:
            return ds.ignore_errors(log_warning=True)
        return ds.map(lambda r: r)  # errors surface at the batch that reads the bad record

    @tf.autograph.experimental.do_not_convert
    def to_model(serialized):
        f = tf.io.parse_example(serialized, spec)
        i32 = lambda k: tf.cast(f[k], tf.int32)  # noqa: E731
        inputs = {"token_ids": i32("input_ids"), "segment_ids": i32("segment_ids"),
                  "padding_mask": i32("input_mask"), "masked_positions": i32("masked_lm_positions")}
        labels = {"mlm_logits": i32("masked_lm_ids"), "nsp_logits": i32("next_sentence_labels")[:, 0]}
        weights = {"mlm_logits": f["masked_lm_weights"],
                   "nsp_logits": tf.ones_like(f["masked_lm_weights"][:, 0])}
        return inputs, labels, weights

    data = (files.interleave(records, cycle_length=tf.data.AUTOTUNE, num_parallel_calls=tf.data.AUTOTUNE,
                             deterministic=seed is not None)
            .batch(batch_size, drop_remainder=True).map(to_model, num_parallel_calls=tf.data.AUTOTUNE)
            .prefetch(tf.data.AUTOTUNE))
    return without_autotune(data)


def check_tfrecords(paths, compression=None):
    """Reads every record of every file once; returns the record count per file, or raises
    `ValueError` naming the first corrupt file and the record where it breaks.

    Example:
        ```python
        # counts = check_tfrecords(glob.glob("data/pretrain-*.tfrecord"))
        ```
    """
    counts = {}
    for path in [paths] if isinstance(paths, str) else paths:
        n = 0
        try:
            for _ in tf.data.TFRecordDataset(path, compression_type=compression or ""):
                n += 1
        except tf.errors.DataLossError as e:
            raise ValueError(f"{path} is corrupt after record {n}: {e.message.split('}')[-1].strip()}. "
                             "Re-create it, or read with skip_corrupt=True to skip the damaged rest.") from None
        counts[path] = n
    return counts
