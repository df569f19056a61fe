"""GatedFeedForward: the gated linear unit feed-forward (GeGLU with GELU) of ModernBERT's blocks."""

import keras
from keras import ops

from keras_bert_lib.layers.activations import get_activation
from keras_bert_lib.layers.initializers import truncated_normal


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class GatedFeedForward(keras.layers.Layer):
    """FFN(x) = (act(x·Wᵢ) ⊙ x·W_g)·Wₒ   (GeGLU where act is GELU)

    One H → 2I product gives the input half and the gate half (Wᵢ and W_g side by side, as
    HuggingFace's `Wi`); the activated input times the gate goes back I → H. Bias-free by
    default, as ModernBERT.

    Args:
        intermediate_size: int. The inner width I (ModernBERT-base: 1,152).
        hidden_act: str. "gelu" (exact erf: GeGLU), "gelu_tanh" or "relu" (ReGLU).
        use_bias: bool. Biases on both products.
        dropout: float. Dropout on the gated inner activations.
        initializer_range: float. Stddev of the truncated-normal kernel initializer.
    Call arguments:
        x: float tensor (B, T, H).
    Returns:
        float tensor (B, T, H) in the layer's compute dtype.
    Example:
        ```python
        import numpy as np
        from keras_bert_lib.layers import GatedFeedForward
        y = GatedFeedForward(intermediate_size=16)(np.ones((1, 4, 8), "float32"))   # (1, 4, 8)
        ```
    Reference:
        Shazeer, 2020, GLU Variants Improve Transformer (https://arxiv.org/abs/2002.05202)
    """

    def __init__(self, intermediate_size, hidden_act="gelu", use_bias=False, dropout=0.0, initializer_range=0.02,
                 **kwargs):
        super().__init__(**kwargs)
        self.activation = get_activation(hidden_act)  # fails early on an unknown name
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.use_bias = use_bias
        self.dropout_rate = dropout
        self.initializer_range = initializer_range
        self.dropout = keras.layers.Dropout(dropout, name="dropout", dtype=self.dtype_policy)

    def build(self, input_shape):
        init = truncated_normal(self.initializer_range)
        # === Layers ===
        self.input_gate = keras.layers.Dense(2 * self.intermediate_size, use_bias=self.use_bias,
                                             kernel_initializer=init, name="input_gate", dtype=self.dtype_policy)
        self.output_dense = keras.layers.Dense(input_shape[-1], use_bias=self.use_bias, kernel_initializer=init,
                                               name="output", dtype=self.dtype_policy)
        self.input_gate.build(input_shape)
        self.output_dense.build((*input_shape[:-1], self.intermediate_size))

    def call(self, x, training=None):
        inner, gate = ops.split(self.input_gate(x), 2, axis=-1)  # (B, T, I) each
        return self.output_dense(self.dropout(self.activation(inner) * gate, training=training))  # (B, T, H)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "intermediate_size": self.intermediate_size, "hidden_act": self.hidden_act,
                "use_bias": self.use_bias, "dropout": self.dropout_rate, "initializer_range": self.initializer_range}
