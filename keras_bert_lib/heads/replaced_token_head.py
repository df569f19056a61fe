"""ReplacedTokenHead: ELECTRA's discriminator head, one logit per token (replaced or original)."""

import keras
from keras import ops

from keras_bert_lib.layers.activations import get_activation
from keras_bert_lib.layers.initializers import truncated_normal


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class ReplacedTokenHead(keras.layers.Layer):
    """logit_t = w·act(x_t·W + b) + c: whether token t was replaced by the generator (ELECTRA's RTD).

    A dense layer H → H with the encoder's activation, then one output per token; the logit is
    positive where the head believes the token was replaced. Logits are float32.

    Args:
        hidden_act: str. The activation after the first dense layer ("gelu", "gelu_tanh", "relu").
        initializer_range: float. Stddev of the kernels' initializer.
    Call arguments:
        x: float tensor (B, T, H): the discriminator's `sequence_output`.
    Returns:
        float32 tensor (B, T).
    Example:
        ```python
        import numpy as np
        from keras_bert_lib.heads import ReplacedTokenHead
        logits = ReplacedTokenHead()(np.ones((2, 5, 8), "float32"))
        logits.shape   # (2, 5)
        ```
    Reference:
        Clark et al., 2020, §2 (https://arxiv.org/abs/2003.10555); transformers'
        ElectraDiscriminatorPredictions
    """

    def __init__(self, hidden_act="gelu", initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.hidden_act = hidden_act
        self.initializer_range = initializer_range
        # === Layers ===
        self.dense = None  # built with the input's width
        self.prediction = keras.layers.Dense(1, kernel_initializer=truncated_normal(initializer_range),
                                             name="prediction", dtype=self.dtype_policy)

    def build(self, input_shape):
        self.dense = keras.layers.Dense(
            input_shape[-1], activation=get_activation(self.hidden_act),
            kernel_initializer=truncated_normal(self.initializer_range), name="dense",
            dtype=self.dtype_policy)
        self.dense.build(input_shape)
        self.prediction.build((*input_shape[:-1], input_shape[-1]))

    def call(self, x):
        return ops.cast(self.prediction(self.dense(x))[..., 0], "float32")  # (B, T)

    def compute_output_spec(self, x):
        return keras.KerasTensor(x.shape[:-1], dtype="float32")

    def get_config(self):
        return {**super().get_config(), "hidden_act": self.hidden_act, "initializer_range": self.initializer_range}
