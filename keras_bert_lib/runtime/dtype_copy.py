"""with_dtype: a copy of an encoder or task model whose encoder runs in another dtype policy;
weights_fingerprint: whether a model's weights changed since a copy was made."""

import keras
import numpy as np

from keras_bert_lib.layers.initializers import assigned_next


def with_dtype(model, dtype):
    """A copy of `model` (a `BertEncoder` or a task model) with its encoder in `dtype`, weights cast.

    The serving copy of a bfloat16 model: `mixed_bfloat16` keeps float32 variables (what training
    needs) and casts every kernel to bfloat16 on every call; `with_dtype(model, "bfloat16")`
    stores them in bfloat16 once: faster than both on a CPU with AVX512-BF16, with the same
    outputs as `mixed_bfloat16` (docs/design.md, "Speed"). Task heads and pooling stay float32
    (`HEAD_DTYPE`); the preprocessor is shared. For inference: train in `mixed_bfloat16`
    (bfloat16 variables round away small updates), then copy.

    Args:
        model: a `BertEncoder`, or a task model holding one as `.encoder`.
        dtype: a Keras dtype policy or its name ("bfloat16", "mixed_bfloat16", "float32").
    Returns:
        a new model of the same class and config, its encoder's layers in `dtype`.
    Example:
        ```python
        from keras_bert_lib import bert_tiny
        from keras_bert_lib.runtime import with_dtype
        serving = with_dtype(bert_tiny(dtype="mixed_bfloat16"), "bfloat16")
        serving.token_embedding.embeddings.dtype   # "bfloat16"
        ```
    """
    encoder = getattr(model, "encoder", model)
    if not (isinstance(encoder, keras.Model) and hasattr(encoder, "config") and hasattr(encoder, "token_embedding")):
        raise TypeError(f"with_dtype takes a BertEncoder or a task model with one as `.encoder`; got "
                        f"{type(model).__name__}.")
    with assigned_next():  # every weight is the model's, cast below
        copy = type(encoder).from_config({**encoder.get_config(), "dtype": dtype})
        if encoder is not model:
            copy = type(model).from_config({**model.get_config(), "encoder": copy, "preprocessor": model.preprocessor})
    for new, old in zip(copy.weights, model.weights, strict=True):
        if tuple(new.shape) != tuple(old.shape):
            raise ValueError(f"with_dtype: {new.path} has shape {new.shape} in the copy and {old.shape} in the model.")
        new.assign(keras.ops.cast(old, new.dtype))
    return copy


def weights_fingerprint(weights):
    """A tuple that changes when any of `weights` (Keras variables) is assigned, whole or a row
    at a time: per variable, the integer sum of the bit patterns of one value in every row (row
    i's value i modulo the row's length; every value of a vector). One value a row reads a
    cache line a row, not the whole model, and on TensorFlow one traced graph per set of
    weights reads them where they are (captured, not passed), so `predict` can check every call.

    Example:
        ```python
        from keras_bert_lib import bert_tiny
        from keras_bert_lib.runtime.dtype_copy import weights_fingerprint
        encoder = bert_tiny(num_hidden_layers=1)
        before = weights_fingerprint(encoder.weights)
        encoder.weights[0].assign(encoder.weights[0] + 1.0)
        assert weights_fingerprint(encoder.weights) != before
        ```
    """
    if keras.backend.backend() == "tensorflow":
        return tuple(_tf_fingerprint(weights)().numpy().tolist())
    samples = [_one_a_row(keras.ops.convert_to_numpy(w)) for w in weights]
    return tuple(int(s.view(f"uint{8 * s.itemsize}").sum(dtype=np.uint64)) for s in samples)


def _one_a_row(value):
    if value.ndim < 2:
        return np.ascontiguousarray(value.reshape(-1))
    rows = value.reshape(-1, value.shape[-1])
    return np.ascontiguousarray(rows[np.arange(len(rows)), np.arange(len(rows)) % rows.shape[1]])


def _tf_fingerprint(weights):
    """The compiled fingerprint of these variables, made on first use and kept while they live."""
    key = tuple(map(id, weights))
    cached = _tf_fingerprints.get(key)
    if cached is not None and all(a is b for a, b in zip(cached[0], weights)):
        return cached[1]
    import tensorflow as tf

    variables = [w.value for w in weights]

    def one(v):
        if v.shape.rank < 2:
            sample = tf.reshape(v, [-1])
        else:
            rows = tf.reshape(v, [-1, v.shape[-1]])
            sample = tf.gather(rows, tf.range(tf.shape(rows)[0]) % v.shape[-1], axis=1, batch_dims=1)
        bits = {1: tf.uint8, 2: tf.uint16, 4: tf.uint32, 8: tf.uint64}[v.dtype.size]
        return tf.reduce_sum(tf.cast(tf.bitcast(sample, bits), tf.int64))

    # A graph, not XLA: the same sums, without an XLA compile at each model's first call.
    function = tf.function(lambda: tf.stack([one(v) for v in variables]))
    while len(_tf_fingerprints) >= 8:  # the oldest goes: a test session makes many models
        _tf_fingerprints.pop(next(iter(_tf_fingerprints)))
    _tf_fingerprints[key] = (list(weights), function)
    return function


_tf_fingerprints = {}  # ids of a list of variables -> (those variables, their fingerprint function)
