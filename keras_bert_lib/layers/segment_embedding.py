"""SegmentEmbedding: which sentence (A or B) a token belongs to."""

import keras
from keras import ops

from keras_bert_lib.layers.initializers import truncated_normal


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class SegmentEmbedding(keras.layers.Layer):
    """Looks segment ids up in a (type_vocab_size, E) table: the E_A / E_B of BERT §3.2.

    BERT has two segments, RoBERTa one (all ids 0); DistilBERT has no segment embedding, and its
    encoder does not create this layer at all.

    Args:
        type_vocab_size: int. Number of segments (2 for BERT, 1 for RoBERTa).
        embedding_size: int. Width of each row (E).
        initializer_range: float. Stddev of the truncated-normal initializer.
    Call arguments:
        segment_ids: int tensor (B, T) with values in [0, type_vocab_size).
    Returns:
        float tensor (B, T, E) in the layer's compute dtype.
    Example:
        ```python
        import numpy as np
        from keras_bert_lib.layers import SegmentEmbedding
        x = SegmentEmbedding(type_vocab_size=2, embedding_size=8)(np.array([[0, 0, 1]]))
        ```
    Reference:
        Devlin et al., 2019, §3.2 (https://arxiv.org/abs/1810.04805)
    """

    def __init__(self, type_vocab_size, embedding_size, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        if type_vocab_size < 1:
            raise ValueError(f"type_vocab_size={type_vocab_size} must be >= 1.")
        self.type_vocab_size = type_vocab_size
        self.embedding_size = embedding_size
        self.initializer_range = initializer_range

    def build(self, input_shape=None):
        self.embeddings = self.add_weight(
            shape=(self.type_vocab_size, self.embedding_size), name="embeddings",
            initializer=truncated_normal(self.initializer_range),
        )

    def call(self, segment_ids):
        # A one-hot matmul rather than a gather: the table has 1-2 rows and this stays a
        # dense op on every backend and on TPUs (as Google's modeling.py does).
        one_hot = ops.one_hot(ops.cast(segment_ids, "int32"), self.type_vocab_size,
                              dtype=self.compute_dtype)
        return ops.matmul(one_hot, ops.cast(self.embeddings, self.compute_dtype))  # (B, T, E)

    def compute_output_shape(self, input_shape):
        return (*input_shape, self.embedding_size)

    def get_config(self):
        return {**super().get_config(), "type_vocab_size": self.type_vocab_size,
                "embedding_size": self.embedding_size,
                "initializer_range": self.initializer_range}
