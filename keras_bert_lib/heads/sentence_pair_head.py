"""SentencePairHead: BERT's next-sentence or ALBERT's sentence-order prediction."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class SentencePairHead(keras.layers.Layer):
    """2-way logits = pooled·W + b: IsNext / NotNext (NSP, BERT) or in order / swapped (SOP, ALBERT).

    Google's code names both `cls/seq_relationship`. Logits are float32.

    Args:
        initializer_range: float. Stddev of the kernel initializer.
    Call arguments:
        pooled: float tensor (B, H): the encoder's `pooled_output`.
    Returns:
        float32 tensor (B, 2).
    Example:
        ```python
        import numpy as np
        from keras_bert_lib.heads import SentencePairHead
        logits = SentencePairHead()(np.ones((3, 8), "float32"))  # (3, 2)
        ```
    Reference:
        Devlin et al., 2019, §3.1 Task #2; Lan et al., 2020, §3.1 (SOP)
    """

    def __init__(self, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.initializer_range = initializer_range
        self.dense = keras.layers.Dense(
            2, kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
            name="dense", dtype=self.dtype_policy)

    def build(self, input_shape):
        self.dense.build(input_shape)

    def call(self, pooled):
        return ops.cast(self.dense(pooled), "float32")

    def compute_output_shape(self, input_shape):
        return (*input_shape[:-1], 2)

    def compute_output_spec(self, pooled):
        return keras.KerasTensor(self.compute_output_shape(pooled.shape), dtype="float32")

    def get_config(self):
        return {**super().get_config(), "initializer_range": self.initializer_range}
