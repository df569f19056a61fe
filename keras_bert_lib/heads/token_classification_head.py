"""TokenClassificationHead: a label per token, for named-entity recognition and tagging."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class TokenClassificationHead(keras.layers.Layer):
    """logits = Dropout(x)·W + b at every position, float32 (CoNLL-2003 NER, BERT §5.3).

    Args:
        num_labels: int. Number of tags.
        dropout: float. Dropout before the dense layer.
        initializer_range: float. Stddev of the kernel initializer.
    Call arguments:
        x: float tensor (B, T, H): the encoder's `sequence_output`.
    Returns:
        float32 tensor (B, T, num_labels).
    Example:
        ```python
        import numpy as np
        from keras_bert_lib.heads import TokenClassificationHead
        logits = TokenClassificationHead(num_labels=9)(np.ones((2, 5, 8), "float32"))  # (2, 5, 9)
        ```
    Reference:
        Devlin et al., 2019, §5.3
    """

    def __init__(self, num_labels, dropout=0.1, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.num_labels = num_labels
        self.dropout = dropout
        self.initializer_range = initializer_range
        self.dropout_layer = keras.layers.Dropout(dropout, name="dropout", dtype=self.dtype_policy)
        self.dense = keras.layers.Dense(
            num_labels, kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
            name="dense", dtype=self.dtype_policy)

    def build(self, input_shape):
        self.dense.build(input_shape)

    def call(self, x, training=None):
        return ops.cast(self.dense(self.dropout_layer(x, training=training)), "float32")

    def compute_output_shape(self, input_shape):
        return (*input_shape[:-1], self.num_labels)

    def compute_output_spec(self, x, training=None):
        return keras.KerasTensor(self.compute_output_shape(x.shape), dtype="float32")

    def get_config(self):
        return {**super().get_config(), "num_labels": self.num_labels, "dropout": self.dropout,
                "initializer_range": self.initializer_range}
