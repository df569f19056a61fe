"""SentencePairHead: next-sentence (BERT) or sentence-order (ALBERT) prediction from [CLS]."""

import keras

from keras_bert_lib.heads.classification_head import ClassificationHead


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class SentencePairHead(ClassificationHead):
    """2-way logits = pooled·W + b: IsNext / NotNext (NSP, BERT) or in order / swapped (SOP, ALBERT).

    `ClassificationHead` with two classes and no dropout (pre-training's pooled output goes to
    the dense layer as it is). Google's code names both `cls/seq_relationship`. Logits are float32.

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
        super().__init__(2, dropout=0.0, initializer_range=initializer_range, **kwargs)

    def get_config(self):
        config = super().get_config()
        del config["num_classes"], config["dropout"]
        return config
