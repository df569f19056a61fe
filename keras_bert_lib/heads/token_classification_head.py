"""TokenClassificationHead: a label per token, for named-entity recognition and tagging."""

import keras

from keras_bert_lib.heads.classification_head import ClassificationHead


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class TokenClassificationHead(ClassificationHead):
    """logits = Dropout(x)·W + b at every position, float32 (CoNLL-2003 NER, BERT §5.3):
    `ClassificationHead`'s computation on (B, T, H) instead of (B, H), under the name and the
    argument (`num_labels`) that taggers use.

    Args:
        num_labels: int. Number of tags.
        dropout: float. Dropout before the dense layer.
        initializer_range: float. Stddev of the kernel initializer.
    Call arguments:
        pooled: float tensor (B, T, H): the encoder's `sequence_output`.
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
        super().__init__(num_labels, dropout, initializer_range, **kwargs)
        self.num_labels = num_labels

    def get_config(self):
        config = super().get_config()
        config["num_labels"] = config.pop("num_classes")
        return config
