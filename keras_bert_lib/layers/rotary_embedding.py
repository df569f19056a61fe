"""RotaryEmbedding: rotary position embedding (RoPE), which rotates queries and keys by their position."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class RotaryEmbedding(keras.layers.Layer):
    """x'ₜ = xₜ·cos(t·θ) + rotate_half(xₜ)·sin(t·θ),   θᵢ = base^(−2i/d),  i = 0 … d/2 − 1

    Feature i of a head's first half and feature i of its second half form a pair that turns
    by the angle t·θᵢ at position t; rotate_half([x₁, x₂]) = [−x₂, x₁] (GPT-NeoX's layout, which
    HuggingFace's ModernBERT uses). A rotated query at t and key at s score q·R(s − t)·k: through
    their distance alone, so the model has no position table and no length limit of its own.
    The angles and the rotation are computed in float32; the result has the input's dtype. No
    weights.

    Args:
        base: float. The wavelength base (RoFormer: 10,000; ModernBERT: 160,000 in its global
            layers, 10,000 in its local ones).
    Call arguments:
        x: float tensor (B, T, N, d): a query or key per head, d even.
    Returns:
        tensor of x's shape and dtype, position t rotated by t·θ.
    Example:
        ```python
        import numpy as np
        from keras_bert_lib.layers import RotaryEmbedding
        x = np.ones((1, 3, 1, 2), "float32")
        y = RotaryEmbedding(base=10_000.0)(x)   # position 1 turns by 1 radian: [cos 1 − sin 1, sin 1 + cos 1]
        assert np.allclose(np.asarray(y)[0, 1, 0], [np.cos(1) - np.sin(1), np.sin(1) + np.cos(1)], atol=1e-6)
        ```
    Reference:
        Su et al., 2021, RoFormer §3.4 (https://arxiv.org/abs/2104.09864)
    """

    def __init__(self, base=10_000.0, **kwargs):
        super().__init__(**kwargs)
        self.base = float(base)
        self.built = True

    def call(self, x):
        length, dim = ops.shape(x)[1], x.shape[-1]
        if dim % 2:
            raise ValueError(f"RotaryEmbedding rotates pairs of features: the head size {dim} must be even.")
        inverse_frequency = 1.0 / ops.power(self.base, ops.arange(0, dim, 2, dtype="float32") / dim)  # (d/2,)
        angles = ops.outer(ops.arange(length, dtype="float32"), inverse_frequency)  # (T, d/2)
        angles = ops.expand_dims(ops.expand_dims(ops.concatenate([angles, angles], axis=-1), 0), 2)  # (1, T, 1, d)
        first, second = ops.split(ops.cast(x, "float32"), 2, axis=-1)
        rotated = ops.concatenate([-second, first], axis=-1)  # rotate_half
        return ops.cast(ops.cast(x, "float32") * ops.cos(angles) + rotated * ops.sin(angles), x.dtype)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "base": self.base}
