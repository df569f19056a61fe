"""BERT's initializer for kernels and tables (truncated normal), and a scope in which it draws
nothing, for models whose every weight a checkpoint overwrites next."""

import contextlib
import contextvars

import keras

_ASSIGNED_NEXT = contextvars.ContextVar("keras_bert_lib_assigned_next", default=False)


def truncated_normal(stddev):
    """`keras.initializers.TruncatedNormal(stddev=stddev)`, BERT's initializer (the published
    `initializer_range`); `keras.initializers.Zeros()` inside `assigned_next()`.

    Example:
        ```python
        import keras
        from keras_bert_lib.layers.initializers import assigned_next, truncated_normal
        assert isinstance(truncated_normal(0.02), keras.initializers.TruncatedNormal)
        with assigned_next():
            assert isinstance(truncated_normal(0.02), keras.initializers.Zeros)
        ```
    """
    return keras.initializers.Zeros() if _ASSIGNED_NEXT.get() else keras.initializers.TruncatedNormal(stddev=stddev)


@contextlib.contextmanager
def assigned_next():
    """Layers built inside draw no random kernels or tables: they start at zero, for a caller that
    assigns every weight right after (`load_checkpoint`, whose strict name maps fail on any weight
    left without a tensor, and `load_model_file`, whose Keras loader fails likewise). Drawing is
    most of the time it takes to build a model (transformers skips it in `from_pretrained` for the
    same reason).

    Example:
        ```python
        import numpy as np
        from keras_bert_lib import bert_tiny
        from keras_bert_lib.layers.initializers import assigned_next
        with assigned_next():
            encoder = bert_tiny(num_hidden_layers=1)
        assert not np.any(encoder.get_layer("token_embedding").embeddings.numpy())   # zeros until assigned
        assert np.any(bert_tiny(num_hidden_layers=1).get_layer("token_embedding").embeddings.numpy())
        ```
    """
    token = _ASSIGNED_NEXT.set(True)
    try:
        yield
    finally:
        _ASSIGNED_NEXT.reset(token)


__all__ = ["assigned_next", "truncated_normal"]
