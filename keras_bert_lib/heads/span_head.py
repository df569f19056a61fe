"""SpanHead: start and end logits over the tokens, for extractive question answering."""

import keras
from keras import ops

from keras_bert_lib.layers.initializers import truncated_normal
from keras_bert_lib.layers.masks import MASK_VALUE


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class SpanHead(keras.layers.Layer):
    """[start, end] = x·W + b with W ∈ ℝ^{H×2}; padded positions get MASK_VALUE (SQuAD, BERT §4.2).

    Logits are float32; masking padded tokens keeps a span from ever landing on padding.

    Args:
        initializer_range: float. Stddev of the kernel initializer.
    Call arguments:
        x: float tensor (B, T, H): the encoder's `sequence_output`.
        padding_mask: bool/int tensor (B, T), 1 = real token. Optional.
    Returns:
        dict of float32 tensors `start_logits` (B, T) and `end_logits` (B, T).
    Example:
        ```python
        import numpy as np
        from keras_bert_lib.heads import SpanHead
        out = SpanHead()(np.ones((2, 5, 8), "float32"), padding_mask=np.array([[1] * 5, [1] * 3 + [0] * 2]))
        out["start_logits"].shape  # (2, 5)
        ```
    Reference:
        Devlin et al., 2019, §4.2
    """

    def __init__(self, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.initializer_range = initializer_range
        self.dense = keras.layers.Dense(
            2, kernel_initializer=truncated_normal(initializer_range),
            name="dense", dtype=self.dtype_policy)

    def build(self, input_shape):
        self.dense.build(input_shape)

    def call(self, x, padding_mask=None):
        logits = ops.cast(self.dense(x), "float32")  # (B, T, 2)
        if padding_mask is not None:
            logits = ops.where(ops.expand_dims(ops.cast(padding_mask, "bool"), -1), logits, MASK_VALUE)
        return {"start_logits": logits[:, :, 0], "end_logits": logits[:, :, 1]}

    def compute_output_spec(self, x, padding_mask=None):
        # Two distinct tensors: one object under both keys would give a functional model the
        # same logits (the last computed) as its start and its end.
        return {name: keras.KerasTensor(x.shape[:-1], dtype="float32", name=name)
                for name in ("start_logits", "end_logits")}

    def get_config(self):
        return {**super().get_config(), "initializer_range": self.initializer_range}
