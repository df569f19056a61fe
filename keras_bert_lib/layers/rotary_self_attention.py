"""RotarySelfAttention: self-attention with rotary positions, over every key or a sliding local window."""

import math

import keras
from keras import ops

from keras_bert_lib.layers.initializers import truncated_normal
from keras_bert_lib.layers.masks import MASK_VALUE, attention_bias, merge_masks
from keras_bert_lib.layers.multi_head_self_attention import IMPLEMENTATIONS, attention_output_spec
from keras_bert_lib.layers.rotary_embedding import RotaryEmbedding


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class RotarySelfAttention(keras.layers.Layer):
    """softmax(R(q)·R(k)ᵀ/√d + bias)·V, with R the rotary embedding and, when `window` is set,
    each position attending only to keys within `window` positions of it (|t − s| ≤ window).

    Q, K and V come from one H → 3H product (HuggingFace's `Wqkv`), split into A heads of
    d = H/A; queries and keys are rotated by their positions (`RotaryEmbedding`); a padded key
    gets probability 0. Global (window None): every position sees every key, as BERT.

    Local (ModernBERT's sliding window, `window` = local_attention / 2 = 64): the sequence is cut
    into blocks of `window` positions, and each block's queries score only the keys of its own
    block and its two neighbours (3·window keys), under a fixed band: the work per token is
    constant, so a 4,096-token document costs in these layers what its tokens cost, not its
    square. Where probabilities are asked for, the same band is applied to the full T × T scores.

    Fused: with no probabilities asked and no dropout on them, the softmax runs as one
    `keras.ops.dot_product_attention` (blocks folded into the batch in local layers) where
    `implementation` allows: "auto" fuses on JAX and PyTorch and keeps the plain path on
    TensorFlow (as `MultiHeadSelfAttention`).

    Args:
        num_heads: int. Attention heads (A).
        rotary_base: float. The rotary wavelength base (ModernBERT: 160,000 global, 10,000 local).
        window: int or None. How far each position sees in local attention; None: global.
        use_bias: bool. Biases on the QKV and output products (ModernBERT has none).
        attention_probs_dropout_prob: float. Dropout on the probabilities.
        initializer_range: float. Stddev of the truncated-normal kernel initializer.
        implementation: "auto", "fused" or "plain".
    Call arguments:
        x: float tensor (B, T, H).
        padding_mask: bool/int tensor (B, T), 1 = real token. Optional.
        return_attention_scores: bool. Also return the probabilities (B, A, T, T).
        output_range: int or None. Only the first `output_range` positions query (global layers
            skip the others' work; local ones compute every block and keep those rows).
    Returns:
        float tensor (B, T, H), or a tuple (output, probabilities).
    Example:
        ```python
        import numpy as np
        from keras_bert_lib.layers import RotarySelfAttention
        layer = RotarySelfAttention(num_heads=2, window=2)
        y, probs = layer(np.random.rand(1, 6, 8).astype("float32"), return_attention_scores=True)
        assert float(np.asarray(probs)[0, 0, 0, 3:].max()) == 0.0   # position 0 sees positions 0 … 2 only
        ```
    Reference:
        Su et al., 2021 (RoFormer); Beltagy et al., 2020 (Longformer's sliding window);
        Warner et al., 2024, ModernBERT §2.1.1 (https://arxiv.org/abs/2412.13663)
    """

    def __init__(self, num_heads, rotary_base=10_000.0, window=None, use_bias=False,
                 attention_probs_dropout_prob=0.0, initializer_range=0.02, implementation="auto", **kwargs):
        super().__init__(**kwargs)
        if implementation not in IMPLEMENTATIONS:
            raise ValueError(f"implementation={implementation!r} is not one of {IMPLEMENTATIONS}.")
        if window is not None and (not isinstance(window, int) or window < 1):
            raise ValueError(f"window={window!r} must be a positive int (positions each side) or None (global).")
        self.num_heads = num_heads
        self.rotary_base = float(rotary_base)
        self.window = window
        self.use_bias = use_bias
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.initializer_range = initializer_range
        self.implementation = implementation
        # === Layers ===
        self.rotary = RotaryEmbedding(rotary_base, name="rotary", dtype=self.dtype_policy)
        self.dropout = keras.layers.Dropout(attention_probs_dropout_prob, name="dropout", dtype=self.dtype_policy)

    def build(self, input_shape):
        hidden = input_shape[-1]
        if hidden % self.num_heads:
            raise ValueError(f"Input width {hidden} is not divisible by num_heads={self.num_heads}.")
        self.head_size = hidden // self.num_heads
        init = truncated_normal(self.initializer_range)
        self.qkv = keras.layers.Dense(3 * hidden, use_bias=self.use_bias, kernel_initializer=init, name="qkv",
                                      dtype=self.dtype_policy)
        self.output_dense = keras.layers.Dense(hidden, use_bias=self.use_bias, kernel_initializer=init,
                                               name="output", dtype=self.dtype_policy)
        self.qkv.build(input_shape)
        self.output_dense.build(input_shape)

    def call(self, x, padding_mask=None, training=None, return_attention_scores=False, output_range=None):
        batch, length = ops.shape(x)[0], ops.shape(x)[1]
        q, k, v = (ops.reshape(t, (batch, length, self.num_heads, self.head_size))  # (B, T, N, d) each
                   for t in ops.split(self.qkv(x), 3, axis=-1))
        q, k = self.rotary(q), self.rotary(k)
        fused = not return_attention_scores and self._fuses(training)
        if self.window is not None and not return_attention_scores:
            context = self._local(q, k, v, padding_mask, training, fused)  # (B, T, N, d)
            if output_range is not None:
                context = context[:, :output_range]
            probs = None
        else:
            if output_range is not None:
                q = q[:, :output_range]
            context, probs = self._full(q, k, v, padding_mask, training, fused)
        rows = ops.shape(context)[1]
        output = self.output_dense(ops.reshape(context, (batch, rows, self.num_heads * self.head_size)))
        return (output, probs) if return_attention_scores else output

    def _attend(self, q, k, v, bias, mask, training, fused):
        """softmax(q·kᵀ/√d + bias)·v for q (…, Tq, N, d), k and v (…, S, N, d); bias (…, 1, Tq, S)."""
        scale = 1.0 / math.sqrt(self.head_size)
        if fused:
            return ops.dot_product_attention(q, k, v, mask=mask, scale=scale), None
        scores = ops.cast(ops.einsum("...tnh,...snh->...nts", q, k), "float32") * scale
        if bias is not None:
            scores = scores + bias
        probs = ops.cast(ops.softmax(scores, axis=-1), self.compute_dtype)
        context = ops.einsum("...nts,...snh->...tnh", self.dropout(probs, training=training), v)
        return context, probs

    def _full(self, q, k, v, padding_mask, training, fused):
        """Every query row against all T keys, within the band when the layer is local."""
        band = None
        if self.window is not None:
            rows, keys = ops.arange(ops.shape(q)[1]), ops.arange(ops.shape(k)[1])
            distance = ops.expand_dims(rows, 1) - ops.expand_dims(keys, 0)  # expand_dims: TFLite has no new axes
            band = ops.expand_dims(ops.abs(distance) <= self.window, 0)  # (1, Tq, S)
        mask = merge_masks(padding_mask, band)  # (B|1, 1|Tq, S) or None
        bias = attention_bias(padding_mask, band)
        return self._attend(q, k, v, bias, None if mask is None else ops.expand_dims(mask, 1), training, fused)

    def _local(self, q, k, v, padding_mask, training, fused):
        """Blocks of w = window queries against their block and its neighbours' 3w keys."""
        w = self.window
        batch, length = ops.shape(q)[0], ops.shape(q)[1]
        blocks = (length + w - 1) // w
        padded = blocks * w
        keep = ops.ones((batch, length), "int32") if padding_mask is None else ops.cast(padding_mask, "int32")

        def split(t):  # (B, T, …) → (B, blocks, w, …), zero rows past T
            tail = [[0, 0]] * (len(t.shape) - 2)
            t = ops.pad(t, [[0, 0], [0, padded - length], *tail])
            return ops.reshape(t, (batch, blocks, w, *t.shape[2:]))

        def neighbours(t):  # (B, T, …) → (B, blocks, 3w, …): block b's keys are positions (b−1)w … (b+2)w − 1
            tail = [[0, 0]] * (len(t.shape) - 2)
            t = ops.pad(t, [[0, 0], [w, padded - length + w], *tail])
            thirds = [ops.reshape(t[:, i * w:i * w + padded], (batch, blocks, w, *t.shape[2:])) for i in range(3)]
            return ops.concatenate(thirds, axis=2)

        # Query r of a block and key c of its 3w are w + r − c apart: one band for every block.
        r, c = ops.expand_dims(ops.arange(w), 1), ops.expand_dims(ops.arange(3 * w), 0)
        band = ops.reshape(ops.abs(w + r - c) <= w, (1, 1, w, 3 * w))
        keys = ops.expand_dims(ops.cast(neighbours(keep), "bool"), 2)  # (B, nb, 1, 3w)
        mask = ops.logical_and(band, keys)  # (B, nb, w, 3w)
        bias = ops.expand_dims(ops.where(mask, 0.0, MASK_VALUE), 2)  # (B, nb, 1, w, 3w)
        q, k, v = split(q), neighbours(k), neighbours(v)
        if fused:  # blocks into the batch: dot_product_attention takes rank-4 tensors
            fold = lambda t: ops.reshape(t, (batch * blocks, *t.shape[2:]))  # noqa: E731
            context, _ = self._attend(fold(q), fold(k), fold(v), None,
                                      ops.reshape(mask, (batch * blocks, 1, w, 3 * w)), training, True)
        else:
            context, _ = self._attend(q, k, v, bias, None, training, False)
        return ops.reshape(context, (batch, padded, self.num_heads, self.head_size))[:, :length]

    def _fuses(self, training):
        if self.implementation == "plain" or (training and self.attention_probs_dropout_prob > 0):
            return False
        return self.implementation == "fused" or keras.backend.backend() in ("jax", "torch")

    def compute_output_spec(self, x, padding_mask=None, training=None, return_attention_scores=False,
                            output_range=None):
        return attention_output_spec(x, self.num_heads, self.compute_dtype, return_attention_scores, output_range)

    def get_config(self):
        return {**super().get_config(), "num_heads": self.num_heads, "rotary_base": self.rotary_base,
                "window": self.window, "use_bias": self.use_bias,
                "attention_probs_dropout_prob": self.attention_probs_dropout_prob,
                "initializer_range": self.initializer_range, "implementation": self.implementation}
