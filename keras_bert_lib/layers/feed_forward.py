"""FeedForward: the position-wise dense → activation → dense of every Transformer block."""

import keras

from keras_bert_lib.layers.activations import get_activation
from keras_bert_lib.layers.bias_activation_dense import BiasActivationDense
from keras_bert_lib.layers.initializers import truncated_normal


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class FeedForward(keras.layers.Layer):
    """FFN(x) = act(x·W₁ + b₁)·W₂ + b₂, widening H → I → H at every position.

    Args:
        intermediate_size: int. The inner width (I; 4H in BERT).
        hidden_act: str. "gelu" (exact erf), "gelu_tanh" or "relu".
        initializer_range: float. Stddev of the truncated-normal kernel initializer.
    Call arguments:
        x: float tensor (B, T, H).
    Returns:
        float tensor (B, T, H) in the layer's compute dtype.
    Example:
        ```python
        import numpy as np
        from keras_bert_lib.layers import FeedForward
        y = FeedForward(intermediate_size=32)(np.ones((1, 4, 8), "float32"))  # (1, 4, 8)
        ```
    Reference:
        Vaswani et al., 2017, §3.3; Devlin et al., 2019, §3.1 (GELU)
    """

    def __init__(self, intermediate_size, hidden_act="gelu", initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        get_activation(hidden_act)  # fails early on an unknown name
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.initializer_range = initializer_range

    def build(self, input_shape):
        # === Layers ===
        self.intermediate = BiasActivationDense(
            self.intermediate_size, activation=get_activation(self.hidden_act),
            kernel_initializer=truncated_normal(self.initializer_range), name="intermediate",
            dtype=self.dtype_policy,
        )
        self.output_dense = keras.layers.Dense(
            input_shape[-1], kernel_initializer=truncated_normal(self.initializer_range),
            name="output", dtype=self.dtype_policy,
        )
        self.intermediate.build(input_shape)
        self.output_dense.build((*input_shape[:-1], self.intermediate_size))

    def call(self, x):
        return self.output_dense(self.intermediate(x))  # (B, T, H) → (B, T, I) → (B, T, H)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "intermediate_size": self.intermediate_size,
                "hidden_act": self.hidden_act, "initializer_range": self.initializer_range}
