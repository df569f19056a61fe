"""ClassificationHead: sentence or sentence-pair classification from the pooled [CLS] vector."""

import keras
from keras import ops

from keras_bert_lib.layers.initializers import truncated_normal


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class ClassificationHead(keras.layers.Layer):
    """logits = Dropout(pooled)·W + b, float32: the GLUE head of BERT §4.1.

    Args:
        num_classes: int. Number of labels (1 for regression such as STS-B).
        dropout: float. Dropout before the dense layer (0.1 in BERT).
        initializer_range: float. Stddev of the kernel initializer.
    Call arguments:
        pooled: float tensor (B, H): the encoder's `pooled_output` (or a pooled embedding).
    Returns:
        float32 tensor (B, num_classes).
    Example:
        ```python
        import numpy as np
        from keras_bert_lib.heads import ClassificationHead
        logits = ClassificationHead(num_classes=3)(np.ones((2, 8), "float32"))  # (2, 3)
        ```
    Reference:
        Devlin et al., 2019, §4.1
    """

    def __init__(self, num_classes, dropout=0.1, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.num_classes = num_classes
        self.dropout = dropout
        self.initializer_range = initializer_range
        self.dropout_layer = keras.layers.Dropout(dropout, name="dropout", dtype=self.dtype_policy)
        self.dense = keras.layers.Dense(
            num_classes, kernel_initializer=truncated_normal(initializer_range),
            name="dense", dtype=self.dtype_policy)

    def build(self, input_shape):
        self.dense.build(input_shape)

    def call(self, pooled, training=None):
        return ops.cast(self.dense(self.dropout_layer(pooled, training=training)), "float32")

    def compute_output_shape(self, input_shape):
        return (*input_shape[:-1], self.num_classes)

    def compute_output_spec(self, pooled, training=None):
        return keras.KerasTensor(self.compute_output_shape(pooled.shape), dtype="float32")

    def get_config(self):
        return {**super().get_config(), "num_classes": self.num_classes, "dropout": self.dropout,
                "initializer_range": self.initializer_range}
