"""PositionEmbedding: learned absolute positions (BERT) or fixed sinusoids (Vaswani et al.)."""

import math

import keras
from keras import ops

from keras_bert_lib.layers.initializers import truncated_normal

TYPES = ("learned", "sinusoidal")


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class PositionEmbedding(keras.layers.Layer):
    """The embedding of positions 0..T-1, broadcast to the input's shape.

    `learned`: rows `position_offset .. position_offset + T - 1` of a (max_length, E) table, as in
    BERT; RoBERTa starts at `position_offset = padding_idx + 1 = 2`. `sinusoidal`: the fixed
    PE(p, 2i) = sin(p / 10000^(2i/E)), PE(p, 2i+1) = cos(·) of the original Transformer, no
    weights. Inputs are right-padded, so real token t has position t whatever the padding.

    Args:
        max_length: int. Rows of the table (P); the longest input is max_length - position_offset.
        embedding_type: "learned" or "sinusoidal".
        position_offset: int. First position id used (0 for BERT, 2 for RoBERTa).
        initializer_range: float. Stddev of the truncated-normal initializer.
    Call arguments:
        x: float tensor (B, T, E): the token embeddings the positions are added to.
        positions: int tensor (B, T) or None. Each token's position, where it is not its index:
            packed rows, where several texts lie end to end and each starts again at 0
            (`runtime.packing`). Default: 0..T-1 in every row.
    Returns:
        float tensor (B, T, E) in the layer's compute dtype.
    Raises:
        ValueError: if T exceeds max_length - position_offset (both are named).
    Example:
        ```python
        import numpy as np
        from keras_bert_lib.layers import PositionEmbedding
        layer = PositionEmbedding(max_length=16)
        p = layer(np.zeros((2, 5, 8), "float32"))   # (2, 5, 8)
        q = layer(np.zeros((1, 5, 8), "float32"), positions=np.array([[0, 1, 2, 0, 1]]))
        assert np.allclose(q[0, 3:], p[0, :2])     # a second text from position 0 again
        ```
    Reference:
        Devlin et al., 2019, §3.2; Vaswani et al., 2017, §3.5
    """

    def __init__(self, max_length, embedding_type="learned", position_offset=0,
                 initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        if embedding_type not in TYPES:
            raise ValueError(f"embedding_type={embedding_type!r} is not one of {TYPES}.")
        if not 0 <= position_offset < max_length:
            raise ValueError(f"position_offset={position_offset} must be in [0, max_length={max_length}).")
        self.max_length = max_length
        self.embedding_type = embedding_type
        self.position_offset = position_offset
        self.initializer_range = initializer_range

    def build(self, input_shape):
        self.embedding_size = input_shape[-1]
        if self.embedding_type == "learned":
            self.embeddings = self.add_weight(
                shape=(self.max_length, self.embedding_size), name="embeddings",
                initializer=truncated_normal(self.initializer_range),
            )

    def call(self, x, positions=None):
        if positions is not None:  # position p is row p + position_offset, as below
            positions = ops.cast(positions, "int32")
            if self.embedding_type == "learned":
                table = ops.take(ops.convert_to_tensor(self.embeddings), positions + self.position_offset, axis=0)
            else:
                table = ops.take(self._sinusoids(self.max_length - self.position_offset), positions, axis=0)
            return ops.cast(table, self.compute_dtype)  # (B, T, E)
        length = x.shape[1]
        longest = self.max_length - self.position_offset
        if length is not None and length > longest:
            raise ValueError(
                f"The input has {length} positions but this PositionEmbedding takes at most "
                f"{longest} (max_length={self.max_length}, position_offset={self.position_offset}). "
                "Truncate the text (e.g. a packer with sequence_length) or use a larger table."
            )
        length = ops.shape(x)[1]
        if self.embedding_type == "learned":
            table = ops.slice(ops.convert_to_tensor(self.embeddings), (self.position_offset, 0),
                              (length, self.embedding_size))  # (T, E)
        else:
            table = self._sinusoids(length)
        return ops.broadcast_to(ops.cast(table, self.compute_dtype)[None], ops.shape(x))

    def _sinusoids(self, length):
        positions = ops.cast(ops.arange(length) + self.position_offset, "float32")  # (T,)
        i = ops.arange(self.embedding_size // 2, dtype="float32")
        inv_freq = ops.exp(i * (-2.0 * math.log(10000.0) / self.embedding_size))  # (E/2,)
        angles = positions[:, None] * inv_freq[None, :]  # (T, E/2)
        # Interleave sin (even dims) and cos (odd dims).
        pe = ops.reshape(ops.stack([ops.sin(angles), ops.cos(angles)], axis=-1), (length, -1))
        if self.embedding_size % 2:
            pe = ops.pad(pe, ((0, 0), (0, 1)))
        return pe

    def compute_output_shape(self, x_shape, positions_shape=None):
        return x_shape

    def get_config(self):
        return {**super().get_config(), "max_length": self.max_length,
                "embedding_type": self.embedding_type, "position_offset": self.position_offset,
                "initializer_range": self.initializer_range}
