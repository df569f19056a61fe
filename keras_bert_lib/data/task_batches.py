"""tf.data batches for fine-tuning: raw texts tokenized in the pipeline, (anchor, positive) pairs
stacked for in-batch negatives, and packed feature arrays (answer spans, tags).

Training batches are shuffled anew each pass, repeated and cut into full batches (static shapes
for XLA); held-out batches keep every row, in order.
"""

import tensorflow as tf

from keras_bert_lib.text.packer import concat_rows


def _shuffled(data, size, batch_size, training, seed):
    if training:
        data = data.shuffle(size, seed=seed).repeat()
    return data.batch(batch_size, drop_remainder=training)


def text_batches(texts, targets, preprocessor, batch_size, training, seed=0):
    """Batches of (preprocessed ids, target): `texts` is a list of strings or a (texts, second
    texts) tuple of pairs; `targets` one row per text (class ids, scores, soft targets).

    Example:
        ```python
        from keras_bert_lib.data.task_batches import text_batches
        from keras_bert_lib.text import BertPreprocessor, WordPieceTokenizer
        vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "film"]
        preprocessor = BertPreprocessor(WordPieceTokenizer(vocab), sequence_length=8)
        ids, label = next(iter(text_batches(["good film", "film"], [1, 0], preprocessor, 2, False)))
        ```
    """
    data = _shuffled(tf.data.Dataset.from_tensor_slices((texts, targets)), len(targets), batch_size, training, seed)

    @tf.autograph.experimental.do_not_convert
    def tokenize(texts, target):
        return preprocessor(tuple(texts) if isinstance(texts, (tuple, list)) else texts), target

    return data.map(tokenize, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def pair_batches(columns, preprocessor, batch_size, training, seed=0):
    """Full batches of (anchor, positive[, hard negative]) rows for `InBatchNegativesLoss`: each
    column tokenized and the columns stacked (B·k rows), so that every other positive of the
    batch, and every hard negative, is a negative. `columns` is a tuple of equal-length lists.

    Example:
        ```python
        from keras_bert_lib.data.task_batches import pair_batches
        from keras_bert_lib.text import BertPreprocessor, WordPieceTokenizer
        vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "film"]
        preprocessor = BertPreprocessor(WordPieceTokenizer(vocab), sequence_length=8)
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

    return data.map(stack, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def array_batches(inputs, labels, batch_size, training, seed=0, weights=None):
    """Batches of packed arrays (a dict of (N, T) ids, their labels and optional sample weights),
    for the features the span and token tasks make ahead (`squad_features`, `token_features`).

    Example:
        ```python
        import numpy as np
        from keras_bert_lib.data.task_batches import array_batches
        inputs = {"token_ids": np.ones((4, 8), "int32")}
        batches = array_batches(inputs, np.zeros((4, 8), "int32"), batch_size=2, training=False)
        ```
    """
    data = tf.data.Dataset.from_tensor_slices((inputs, labels) if weights is None else (inputs, labels, weights))
    size = len(next(iter(inputs.values())))
    return _shuffled(data, size, batch_size, training, seed).prefetch(tf.data.AUTOTUNE)
