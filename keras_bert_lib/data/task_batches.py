"""tf.data batches for fine-tuning: raw texts tokenized in the pipeline, (anchor, positive) pairs
stacked for in-batch negatives, and packed feature arrays (answer spans, tags).

Every batch is as wide as its longest row, not the fixed `sequence_length`: real text is short
and uneven, and a step then costs what its tokens cost. Where the steps are compiled with XLA
(JAX; TensorFlow on a GPU or TPU) the width is rounded up to a multiple of 8 (`MULTIPLE`), so
that XLA compiles each of at most `sequence_length / 8` widths once; on a CPU, where TensorFlow's
graph traces once for every width (`compile_path.choose_jit_compile`), it is the longest row's
exact width (`width_multiple`). Training batches are shuffled
anew each pass and repeated. With `group_by_length` the rows of a window of `WINDOW` batches are
sorted by their token count, cut into batches and the batches shuffled, so that a batch holds
texts of similar length, as transformers' `group_by_length` does. Held-out batches keep every
row, sorted by token count (fewer padded tokens; the metrics Keras reports do not depend on the
order): to pair predictions with rows, predict the texts themselves.
"""

import numpy as np
import tensorflow as tf

from keras_bert_lib.data.pipeline_options import parallel_map
from keras_bert_lib.runtime.compile_path import choose_jit_compile
from keras_bert_lib.text.packer import concat_rows

WINDOW = 32  # batches whose rows are grouped by length together
MULTIPLE = 8  # batch widths are multiples of this
LENGTH_CHUNK = 4096  # texts tokenized at a time to count their tokens


def _grouped_by_length(data, size, batch_size, seed, length):
    """Repeated full batches of `data`'s elements, shuffled, grouped by `length` within windows."""
    data = data.shuffle(size, seed=seed).repeat().batch(batch_size * WINDOW, drop_remainder=True)

    def by_length(*window):
        order = tf.argsort(length(*window), stable=True)
        rows = tf.nest.map_structure(lambda t: tf.gather(t, order), window)
        return tf.data.Dataset.from_tensor_slices(rows).batch(batch_size, drop_remainder=True)

    return data.flat_map(by_length).shuffle(WINDOW, seed=seed)


def token_counts(texts, preprocessor):
    """The tokens each text (or pair) packs into, [CLS] and [SEP]s included, at most the
    preprocessor's `sequence_length`: an int array, one entry per row.

    Example:
        ```python
        from keras_bert_lib.data.task_batches import token_counts
        from keras_bert_lib.text import BertPreprocessor, WordPieceTokenizer
        vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "film"]
        token_counts(["good film", "film"], BertPreprocessor(WordPieceTokenizer(vocab)))   # [4, 3]
        ```
    """
    data = tf.data.Dataset.from_tensor_slices(texts).batch(LENGTH_CHUNK)
    counts = [tf.reduce_sum(preprocessor(tuple(t) if isinstance(t, (tuple, list)) else t)["padding_mask"], 1)
              for t in data]
    return np.concatenate([c.numpy() for c in counts]) if counts else np.zeros(0, np.int32)


def width_multiple():
    """What a batch's width is rounded up to here: `MULTIPLE` (8) where training steps are
    compiled per width (XLA: JAX, or TensorFlow on a GPU or TPU), 1 where they are not
    (TensorFlow's graph on a CPU, PyTorch), where every padded column costs a step its share of
    the work (docs/finetuning.md).

    Example:
        ```python
        from keras_bert_lib.data.task_batches import width_multiple
        width_multiple()   # 1 (with TensorFlow on a CPU; 8 on JAX)
        ```
    """
    return MULTIPLE if choose_jit_compile(widths_vary=True)[0] else 1


def _cut_to_longest(features, *rest):
    """A batch's features (and the parts of `rest` with the same token axis) cut to its longest
    row's real tokens, rounded up to `width_multiple()` (read once, when tf.data traces the map)."""
    multiple = width_multiple()
    width = tf.shape(features["padding_mask"])[1]
    longest = tf.reduce_max(tf.reduce_sum(features["padding_mask"], 1))
    keep = tf.minimum((longest + multiple - 1) // multiple * multiple, width)
    static = features["padding_mask"].shape[1]
    per_token = lambda t: t[:, :keep] if t.shape.rank >= 2 and t.shape[1] == static else t  # noqa: E731
    return tuple(tf.nest.map_structure(per_token, part) for part in (features, *rest))


def text_batches(texts, targets, preprocessor, batch_size, training, seed=0, group_by_length=False):
    """Batches of (preprocessed ids, target): `texts` is a list of strings or a (texts, second
    texts) tuple of pairs; `targets` one row per text (class ids, scores, soft targets).

    Each batch is padded to its own longest text (`width_multiple`). `group_by_length` also
    groups the training rows by their token count (within windows of 32 batches), as
    transformers' `group_by_length` does, for fewer padded tokens again: on 2,000 movie reviews
    27.3 tokens a row against 52.3 on a CPU (docs/finetuning.md measures what it learns).

    Example:
        ```python
        from keras_bert_lib.data.task_batches import text_batches
        from keras_bert_lib.text import BertPreprocessor, WordPieceTokenizer
        vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "film"]
        preprocessor = BertPreprocessor(WordPieceTokenizer(vocab), sequence_length=8)
        ids, label = next(iter(text_batches(["good film", "film"], [1, 0], preprocessor, 2, False)))
        ```
    """
    targets = np.asarray(targets)
    lengths = token_counts(texts, preprocessor) if (group_by_length or not training) else None
    if not training:  # sorted by token count, as sentence-transformers sorts
        order = np.argsort(lengths, kind="stable")
        texts = tuple(np.asarray(c, dtype=str)[order] for c in texts) if isinstance(texts, tuple) else \
            np.asarray(texts, dtype=str)[order]
        targets = targets[order]
    if training and group_by_length:
        data = tf.data.Dataset.from_tensor_slices((texts, targets, lengths))
        data = _grouped_by_length(data, len(targets), batch_size, seed, lambda *window: window[-1])
    else:
        data = tf.data.Dataset.from_tensor_slices((texts, targets))
        if training:
            data = data.shuffle(len(targets), seed=seed).repeat()
        data = data.batch(batch_size, drop_remainder=training)

    @tf.autograph.experimental.do_not_convert
    def tokenize(texts, target, *_):
        return _cut_to_longest(preprocessor(tuple(texts) if isinstance(texts, (tuple, list)) else texts), target)

    return parallel_map(data, tokenize)


def pair_batches(columns, preprocessor, batch_size, training, seed=0):
    """Full batches of (anchor, positive[, hard negative]) rows for `InBatchNegativesLoss`: each
    column tokenized and the columns stacked (B·k rows, padded to the widest), so that every other
    positive of the batch, and every hard negative, is a negative. `columns` is a tuple of
    equal-length lists. Not grouped by length: the negatives are the batch's other rows.

    Example:
        ```python
        from keras_bert_lib.data.task_batches import pair_batches
        from keras_bert_lib.text import BertPreprocessor, WordPieceTokenizer
        vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "film"]
        preprocessor = BertPreprocessor(WordPieceTokenizer(vocab), sequence_length=8, padding="max_length")
        ids, _ = next(iter(pair_batches((["good", "film"], ["film", "good"]), preprocessor, 2, False)))
        ids["token_ids"].shape   # (4, 8): two anchors, then two positives
        ```
    """
    data = tf.data.Dataset.from_tensor_slices(tuple(columns))
    if training:
        data = data.shuffle(len(columns[0]), seed=seed).repeat()
    data = data.batch(batch_size, drop_remainder=True)  # held out too: in-batch negatives need full batches

    @tf.autograph.experimental.do_not_convert
    def stack(*texts):
        return concat_rows([preprocessor(t) for t in texts]), tf.zeros((tf.shape(texts[0])[0], len(texts)))

    return parallel_map(data, stack)


def array_batches(inputs, labels, batch_size, training, seed=0, weights=None):
    """Batches of packed arrays (a dict of (N, T) ids, their labels and optional sample weights),
    for the features the span and token tasks make ahead (`squad_features`, `token_features`).
    Each batch is cut to its longest row (`width_multiple`), and so are the labels and weights
    that have a token axis; training batches are shuffled, not grouped by length.

    Example:
        ```python
        import numpy as np
        from keras_bert_lib.data.task_batches import array_batches
        inputs = {"token_ids": np.ones((4, 64), "int32"), "padding_mask": np.ones((4, 64), "int32")}
        inputs["padding_mask"][:, 20:] = 0
        ids, labels = next(iter(array_batches(inputs, np.zeros((4, 64), "int32"), batch_size=2, training=False)))
        ids["token_ids"].shape, labels.shape   # (2, 20), (2, 20): cut to the longest row
        ```
    """
    data = tf.data.Dataset.from_tensor_slices((inputs, labels) if weights is None else (inputs, labels, weights))
    if training:  # not grouped by length: windows of a context are mostly full, and grouping cost the
        # cloze test (tests/runs/test_finetune_spans_run.py) 8 points of exact match in 48 steps
        data = data.shuffle(len(next(iter(inputs.values()))), seed=seed).repeat()
    data = data.batch(batch_size, drop_remainder=training)

    return parallel_map(data, _cut_to_longest)
