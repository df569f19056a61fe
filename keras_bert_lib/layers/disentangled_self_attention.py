"""DisentangledSelfAttention: DeBERTa's attention over content and relative position, separately."""

import math

import keras
import numpy as np
from keras import ops

from keras_bert_lib.layers.initializers import truncated_normal
from keras_bert_lib.layers.masks import attention_bias
from keras_bert_lib.layers.multi_head_self_attention import attention_output_spec


def relative_position_buckets(length, buckets=256, max_position=512):
    """(T, T) int32: the bucket of each query i and key j's distance i − j, shifted to index the
    2·buckets rows of the relative table: distances within ±buckets/2 keep their own bucket, longer
    ones share log-spaced buckets up to `max_position` (DeBERTa's make_log_bucket_position).

    Example:
        ```python
        import numpy as np
        from keras_bert_lib.layers.disentangled_self_attention import relative_position_buckets
        rows = np.asarray(relative_position_buckets(3, buckets=4, max_position=8))
        assert rows.tolist() == [[4, 3, 2], [5, 4, 3], [6, 5, 4]]   # 4 + (i − j)
        ```
    """
    positions = ops.arange(length, dtype="int32")
    relative = ops.expand_dims(positions, 1) - ops.expand_dims(positions, 0)  # i − j
    distance = ops.take(_bucket_of_distance(buckets, max_position), ops.minimum(ops.abs(relative), max_position))
    return ops.clip(ops.sign(relative) * distance + buckets, 0, 2 * buckets - 1)


def _bucket_of_distance(buckets, max_position):
    """int32 (max_position + 1,): the bucket of each distance d = |i − j| up to `max_position`
    (a longer one takes max_position's): d itself within buckets/2, else
    ⌈log(d/mid) / log((max_position − 1)/mid) · (mid − 1)⌉ + mid, in float32 as transformers
    takes it. A constant of the graph, made in NumPy, so that no backend's or CPU's float32 log can
    move a distance across a bucket edge (at d = max_position − 1 the ratio is exactly 1: a log in
    TensorFlow's graph put it one bucket off on some CPUs)."""
    mid = buckets // 2
    distance = np.arange(max_position + 1, dtype=np.float32)
    far = np.maximum(distance, np.float32(mid))
    logs = np.ceil(np.log(far / np.float32(mid)) / np.log(np.float32((max_position - 1) / mid)) * (mid - 1)) + mid
    return np.where(distance <= mid, distance, logs).astype(np.int32)


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class DisentangledSelfAttention(keras.layers.Layer):
    """DeBERTa's attention: each score adds content-to-content, content-to-position and
    position-to-content terms,

        s(i, j) = [ q_i·k_j  +  q_i·K_r[δ(i, j)]  +  k_j·Q_r[δ(i, j)] ] / √(3d)
        K_r = P·W_k + b_k,   Q_r = P·W_q + b_q                        keys shared: the content projections

    where P is the relative-position table (2·buckets × H, normalised by the encoder and passed in)
    and δ(i, j) the log bucket of i − j (`relative_position_buckets`). Softmax over the keys (padded
    keys get probability 0), then ·V and Wᴼ, as BERT.

    Args:
        num_heads: int. Attention heads (A).
        position_buckets: int. Buckets per direction (DeBERTa-v3: 256).
        max_relative_positions: int. The distance the last bucket reaches (512).
        attention_probs_dropout_prob: float. Dropout on the probabilities.
        position_dropout: float. Dropout on the relative table as it enters (the hidden dropout).
        initializer_range: float. Stddev of the truncated-normal kernel initializer.
    Call arguments:
        x: float tensor (B, T, H).
        relative_embeddings: float tensor (2·buckets, H): the encoder's normalised table P.
        padding_mask: bool/int tensor (B, T), 1 = real token. Optional.
        return_attention_scores: bool. Also return the probabilities (B, A, T, T).
        output_range: int or None. Return only the first `output_range` positions.
    Returns:
        float tensor (B, T, H), or a tuple (output, probabilities).
    Example:
        ```python
        import numpy as np
        from keras_bert_lib.layers import DisentangledSelfAttention
        layer = DisentangledSelfAttention(num_heads=2, position_buckets=4, max_relative_positions=8)
        y = layer(np.ones((1, 5, 8), "float32"), relative_embeddings=np.ones((8, 8), "float32"))   # (1, 5, 8)
        ```
    Reference:
        He et al., 2021, DeBERTa §3.1 (https://arxiv.org/abs/2006.03654); He et al., 2023, DeBERTaV3
    """

    def __init__(self, num_heads, position_buckets=256, max_relative_positions=512, attention_probs_dropout_prob=0.0,
                 position_dropout=0.0, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.position_buckets = position_buckets
        self.max_relative_positions = max_relative_positions
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.position_dropout_rate = position_dropout
        self.initializer_range = initializer_range
        self.dropout = keras.layers.Dropout(attention_probs_dropout_prob, name="dropout", dtype=self.dtype_policy)
        self.position_dropout = keras.layers.Dropout(position_dropout, name="position_dropout", dtype=self.dtype_policy)

    def build(self, x_shape, relative_embeddings_shape=None):
        hidden = x_shape[-1]
        if hidden % self.num_heads:
            raise ValueError(f"Input width {hidden} is not divisible by num_heads={self.num_heads}.")
        self.head_size = hidden // self.num_heads
        init = truncated_normal(self.initializer_range)
        dense = lambda name: keras.layers.Dense(hidden, kernel_initializer=init, name=name,  # noqa: E731
                                                dtype=self.dtype_policy)
        self.query, self.key, self.value, self.output_dense = (dense(n) for n in ("query", "key", "value", "output"))
        for layer in (self.query, self.key, self.value, self.output_dense):
            layer.build(x_shape)

    def call(self, x, relative_embeddings, padding_mask=None, training=None, return_attention_scores=False,
             output_range=None):
        batch, length = ops.shape(x)[0], ops.shape(x)[1]
        heads = lambda t, rows: ops.reshape(t, (rows[0], rows[1], self.num_heads, self.head_size))  # noqa: E731
        q, k, v = (heads(layer(x), (batch, length)) for layer in (self.query, self.key, self.value))  # (B, T, N, d)
        table = self.position_dropout(ops.cast(relative_embeddings, self.compute_dtype), training=training)
        rows = ops.shape(table)[0]
        table = ops.expand_dims(table, 0)  # expand_dims, not [None]: TFLite has no new axes
        q_r = heads(self.query(table), (1, rows))[0]  # (2S, N, d): the shared projections
        k_r = heads(self.key(table), (1, rows))[0]
        index = relative_position_buckets(length, self.position_buckets, self.max_relative_positions)  # (T, T)
        index = ops.broadcast_to(ops.reshape(index, (1, 1, length, length)), (batch, self.num_heads, length, length))
        content = ops.einsum("btnh,bsnh->bnts", q, k)
        c2p = ops.take_along_axis(ops.einsum("btnh,rnh->bntr", q, k_r), index, axis=-1)  # q_i·K_r[δ(i, j)]
        p2c = ops.take_along_axis(ops.einsum("bsnh,rnh->bnsr", k, q_r), ops.swapaxes(index, -1, -2), axis=-1)
        scores = ops.cast(content + c2p + ops.swapaxes(p2c, -1, -2), "float32") / math.sqrt(3 * self.head_size)
        bias = attention_bias(padding_mask)
        if bias is not None:
            scores = scores + bias
        probs = ops.cast(ops.softmax(scores, axis=-1), self.compute_dtype)
        context = ops.einsum("bnts,bsnh->btnh", self.dropout(probs, training=training), v)
        output = self.output_dense(ops.reshape(context, (batch, length, self.num_heads * self.head_size)))
        if output_range is not None:
            output, probs = output[:, :output_range], probs[:, :, :output_range]
        return (output, probs) if return_attention_scores else output

    def compute_output_spec(self, x, relative_embeddings=None, padding_mask=None, training=None,
                            return_attention_scores=False, output_range=None):
        return attention_output_spec(x, self.num_heads, self.compute_dtype, return_attention_scores, output_range)

    def get_config(self):
        return {**super().get_config(), "num_heads": self.num_heads, "position_buckets": self.position_buckets,
                "max_relative_positions": self.max_relative_positions,
                "attention_probs_dropout_prob": self.attention_probs_dropout_prob,
                "position_dropout": self.position_dropout_rate, "initializer_range": self.initializer_range}
