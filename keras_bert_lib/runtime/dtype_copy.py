"""with_dtype: a copy of an encoder or task model whose encoder runs in another dtype policy;
weights_fingerprint: whether a model's weights changed since a copy was made."""

import keras
import numpy as np


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
    copy = type(encoder).from_config({**encoder.get_config(), "dtype": dtype})
    if encoder is not model:
        copy = type(model).from_config({**model.get_config(), "encoder": copy, "preprocessor": model.preprocessor})
    for new, old in zip(copy.weights, model.weights, strict=True):
        if tuple(new.shape) != tuple(old.shape):
            raise ValueError(f"with_dtype: {new.path} has shape {new.shape} in the copy and {old.shape} in the model.")
        new.assign(keras.ops.cast(old, new.dtype))
    return copy


_SAMPLE = 61  # every 61st value of each variable: any row of an embedding, any whole-tensor assignment


def weights_fingerprint(weights):
    """A tuple that changes when any of `weights` (Keras variables) is assigned: per variable,
    the integer sum of the bit patterns of every 61st value (every row of an embedding table
    has some): a few milliseconds for a model's variables, not a pass over their values.

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
        return tuple(_tf_fingerprint([w.value for w in weights]).numpy().tolist())
    samples = [np.ascontiguousarray(keras.ops.convert_to_numpy(w).reshape(-1)[::_SAMPLE]) for w in weights]
    return tuple(int(s.view(f"uint{8 * s.itemsize}").sum(dtype=np.uint64)) for s in samples)


def _tf_fingerprint(values):
    global _tf_fingerprint_function
    if _tf_fingerprint_function is None:
        import tensorflow as tf

        def sums(values):
            def one(v):
                sample = tf.reshape(v, [-1])[::_SAMPLE]
                bits = {1: tf.uint8, 2: tf.uint16, 4: tf.uint32, 8: tf.uint64}[v.dtype.size]
                return tf.reduce_sum(tf.cast(tf.bitcast(sample, bits), tf.int64))
            return tf.stack([one(v) for v in values])

        _tf_fingerprint_function = tf.function(sums, jit_compile=True, reduce_retracing=True)
    return _tf_fingerprint_function(values)


_tf_fingerprint_function = None
