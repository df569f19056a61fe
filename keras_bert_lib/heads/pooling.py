"""Pooling: one vector per sequence, from [CLS] or the mean over real tokens."""

import keras
from keras import ops

MODES = ("cls", "mean")


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class Pooling(keras.layers.Layer):
    """Sentence embedding: x[:, 0] ("cls") or Σ_t m_t·x_t / Σ_t m_t ("mean"), optionally L2-normalised.

    Mean pooling over `padding_mask` with L2 normalisation is the sentence embedding of
    Sentence-BERT models such as all-MiniLM-L6-v2. Computed and returned in float32.

    Args:
        mode: "cls" or "mean".
        normalize: bool. Divide by the L2 norm (for cosine similarity).
    Call arguments:
        x: float tensor (B, T, H).
        padding_mask: bool/int tensor (B, T), 1 = real token. Optional.
    Returns:
        float32 tensor (B, H).
    Example:
        ```python
        import numpy as np
        from keras_bert_lib.heads import Pooling
        v = Pooling("mean", normalize=True)(np.ones((2, 5, 8), "float32"),
                                            padding_mask=np.array([[1] * 5, [1, 1, 0, 0, 0]]))
        ```
    Reference:
        Reimers & Gurevych, 2019, §3 (https://arxiv.org/abs/1908.10084)
    """

    def __init__(self, mode="cls", normalize=False, **kwargs):
        super().__init__(**kwargs)
        if mode not in MODES:
            raise ValueError(f"mode={mode!r} is not one of {MODES}.")
        self.mode = mode
        self.normalize = normalize

    def call(self, x, padding_mask=None):
        x = ops.cast(x, "float32")
        if self.mode == "cls":
            pooled = x[:, 0, :]
        else:
            if padding_mask is None:
                padding_mask = ops.ones(ops.shape(x)[:2])
            mask = ops.expand_dims(ops.cast(padding_mask, "float32"), -1)  # (B, T, 1); TFLite has no new-axis slices
            pooled = ops.sum(x * mask, axis=1) / ops.maximum(ops.sum(mask, axis=1), 1e-9)
        if self.normalize:
            pooled = pooled / ops.maximum(ops.norm(pooled, axis=-1, keepdims=True), 1e-12)
        return pooled  # (B, H)

    def compute_output_spec(self, x, padding_mask=None):
        return keras.KerasTensor((x.shape[0], x.shape[-1]), dtype="float32")

    def get_config(self):
        return {**super().get_config(), "mode": self.mode, "normalize": self.normalize}
