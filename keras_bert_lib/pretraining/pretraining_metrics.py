"""MaskedLMPerplexity: exp of the weighted mean cross-entropy over the masked positions."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class MaskedLMPerplexity(keras.metrics.Mean):
    """exp(Σ w·CE / Σ w) over the predicted positions, in float32.

    Example:
        ```python
        import numpy as np
        from keras_bert_lib.pretraining.pretraining_metrics import MaskedLMPerplexity
        metric = MaskedLMPerplexity()
        metric.update_state(np.array([[1]]), np.zeros((1, 1, 4), "float32"))
        float(metric.result())   # 4.0: uniform over 4 tokens
        ```
    """

    def update_state(self, y_true, y_pred, sample_weight=None):
        ce = keras.losses.sparse_categorical_crossentropy(y_true, ops.cast(y_pred, "float32"), from_logits=True)
        return super().update_state(ce, sample_weight=sample_weight)

    def result(self):
        return ops.exp(super().result())
