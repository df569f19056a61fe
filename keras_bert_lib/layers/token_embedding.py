"""TokenEmbedding: the WordPiece table, also used transposed for tied masked-LM logits."""

import keras
from keras import ops

from keras_bert_lib.layers.initializers import truncated_normal


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class TokenEmbedding(keras.layers.Layer):
    """Looks token ids up in a (V, E) table; `logits(x)` multiplies by its transpose.

    In BERT E = H. ALBERT factorises the embedding: the table is V × E with a small E (128) and
    the encoder projects the summed, normalised embeddings from E to H afterwards (as ALBERT's
    `embedding_hidden_mapping_in` does). The masked-LM head ties its output to this table
    through `logits`: the matmul runs in the input's dtype and the logits are returned as float32.

    Args:
        vocab_size: int. Rows of the table (V).
        embedding_size: int. Width of each row (E).
        initializer_range: float. Stddev of the truncated-normal initializer.
    Call arguments:
        token_ids: int tensor (B, T).
    Returns:
        float tensor (B, T, E) in the layer's compute dtype.
    Example:
        ```python
        import numpy as np
        from keras_bert_lib.layers import TokenEmbedding
        table = TokenEmbedding(vocab_size=100, embedding_size=8)
        x = table(np.array([[1, 2, 3]]))       # (1, 3, 8)
        logits = table.logits(x)                 # (1, 3, 100)
        ```
    """

    def __init__(self, vocab_size, embedding_size, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.embedding_size = embedding_size
        self.initializer_range = initializer_range

    def build(self, input_shape=None):
        self.embeddings = self.add_weight(
            shape=(self.vocab_size, self.embedding_size), name="embeddings",
            initializer=truncated_normal(self.initializer_range),
        )

    def call(self, token_ids):
        return ops.take(self.embeddings, ops.cast(token_ids, "int32"), axis=0)  # (B, T, E)

    def logits(self, x):
        """x (..., E) → logits (..., V) = x · tableᵀ, computed in x's dtype, returned as float32."""
        table = ops.cast(self.embeddings, x.dtype)
        return ops.cast(ops.matmul(x, ops.transpose(table)), "float32")

    def compute_output_shape(self, input_shape):
        return (*input_shape, self.embedding_size)

    def get_config(self):
        return {**super().get_config(), "vocab_size": self.vocab_size,
                "embedding_size": self.embedding_size,
                "initializer_range": self.initializer_range}
