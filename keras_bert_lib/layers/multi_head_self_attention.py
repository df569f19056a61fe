"""MultiHeadSelfAttention: softmax(QKᵀ/√d_k + bias)·V over A heads."""

import math

import keras
from keras import ops

from keras_bert_lib.layers.initializers import truncated_normal
from keras_bert_lib.layers.masks import attention_bias, merge_masks

IMPLEMENTATIONS = ("auto", "fused", "plain")


def _dense(units, initializer_range, name, dtype):
    return keras.layers.Dense(
        units, name=name, dtype=dtype,
        kernel_initializer=truncated_normal(initializer_range),
    )


def output_rows(length, output_range):
    """How many positions a call with `output_range` outputs, for a static `length` (or None).

    Example:
        ```python
        from keras_bert_lib.layers.multi_head_self_attention import output_rows
        output_rows(None, 1), output_rows(6, None), output_rows(3, 4)   # (1, 6, 3)
        ```
    """
    if output_range is None:
        return length
    return output_range if length is None else min(length, output_range)


def attention_output_spec(x, num_heads, dtype, return_attention_scores=False, output_range=None):
    """The output (B, T', H) of a self-attention layer on `x` (B, T, H), and with
    `return_attention_scores` its probabilities (B, A, T', T), T' the rows `output_range` keeps.

    Example:
        ```python
        import keras
        from keras_bert_lib.layers.multi_head_self_attention import attention_output_spec
        out, probs = attention_output_spec(keras.KerasTensor((2, 6, 8)), 2, "float32", True, output_range=1)
        out.shape, probs.shape   # ((2, 1, 8), (2, 2, 1, 6))
        ```
    """
    batch, length = x.shape[0], x.shape[1]
    rows = output_rows(length, output_range)
    output = keras.KerasTensor((batch, rows, x.shape[2]), dtype=dtype)
    if not return_attention_scores:
        return output
    return output, keras.KerasTensor((batch, num_heads, rows, length), dtype=dtype)


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class MultiHeadSelfAttention(keras.layers.Layer):
    """Scaled dot-product self-attention with A heads: softmax(QKᵀ/√d_k + bias)·V, then Wᴼ.

    Q, K and V are (H → H) dense projections split into A heads of d_k = H/A; each head's scores
    are masked by an additive bias built from `padding_mask` (keys only: a padded key gets
    probability 0, so padding never changes a real position). QKᵀ is computed in the compute dtype
    (the matmul units' dtype); the scores are then cast to float32 for the bias and the softmax,
    and the probabilities cast back. The kernels are (H, H), the layout of
    Google's checkpoints (`attention/self/query/kernel`).

    Fused: where no probability is asked for and no dropout falls on them (inference, or
    `attention_probs_dropout_prob=0`), the same softmax(QKᵀ/√d_k)V can run as one
    `keras.ops.dot_product_attention` with the padding as a boolean mask: cuDNN flash
    attention on JAX GPUs (bfloat16/float16), PyTorch's SDPA on torch, XLA's plain math on CPUs.
    `implementation="auto"` (the default) fuses on JAX and PyTorch and keeps the plain path on
    TensorFlow, where the plain graph is what the exports read (ONNX Runtime fuses it into its
    own Attention operator) and where Keras' op is the same math with the softmax in the
    compute dtype. Training with attention dropout always takes the plain path: no fused kernel
    drops attention probabilities.

        scores[b,n,t,s] = Σ_h q[b,t,n,h]·k[b,s,n,h] / √d_k + bias[b,s]
        out[b,t,n,h] = Σ_s softmax_s(scores)[b,n,t,s]·v[b,s,n,h]

    Args:
        num_heads: int. Number of attention heads (A); must divide the input width H.
        attention_probs_dropout_prob: float. Dropout on the attention probabilities.
        initializer_range: float. Stddev of the truncated-normal kernel initializer.
        implementation: "auto", "fused" or "plain": where `keras.ops.dot_product_attention`
            runs (above). Float32 outputs agree within 1e-5 (tested on every backend).
    Call arguments:
        x: float tensor (B, T, H).
        padding_mask: bool/int tensor (B, T), 1 = real token. Optional.
        attention_mask: bool/int tensor (B, T, T), 1 = may attend. Optional; merged with the padding mask.
        return_attention_scores: bool. Also return the probabilities (B, A, T, T) (the plain path).
        output_range: int or None. Only the first `output_range` positions query (the Model
            Garden's name): the output is (B, output_range, H), each row what the full call gives
            there, for the keys and values of all T positions. None: every position.
    Returns:
        float tensor (B, T, H) in the compute dtype, or a tuple (output, probabilities).
    Example:
        ```python
        import numpy as np
        from keras_bert_lib.layers import MultiHeadSelfAttention
        layer = MultiHeadSelfAttention(num_heads=2)
        x = np.random.rand(1, 4, 8).astype("float32")
        y, probs = layer(x, padding_mask=np.array([[1, 1, 1, 0]]), return_attention_scores=True)
        ```
    Reference:
        Vaswani et al., 2017, §3.2 (https://arxiv.org/abs/1706.03762)
    """

    def __init__(self, num_heads, attention_probs_dropout_prob=0.0, initializer_range=0.02,
                 implementation="auto", **kwargs):
        super().__init__(**kwargs)
        if implementation not in IMPLEMENTATIONS:
            raise ValueError(f"implementation={implementation!r} is not one of {IMPLEMENTATIONS}.")
        self.implementation = implementation
        self.num_heads = num_heads
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.initializer_range = initializer_range
        self.dropout = keras.layers.Dropout(attention_probs_dropout_prob, name="dropout",
                                            dtype=self.dtype_policy)

    def build(self, input_shape):
        hidden = input_shape[-1]
        if hidden % self.num_heads:
            raise ValueError(f"Input width {hidden} is not divisible by num_heads={self.num_heads}.")
        self.head_size = hidden // self.num_heads
        # === Layers ===
        self.query = _dense(hidden, self.initializer_range, "query", self.dtype_policy)
        self.key = _dense(hidden, self.initializer_range, "key", self.dtype_policy)
        self.value = _dense(hidden, self.initializer_range, "value", self.dtype_policy)
        self.output_dense = _dense(hidden, self.initializer_range, "output", self.dtype_policy)
        for layer in (self.query, self.key, self.value, self.output_dense):
            layer.build(input_shape)

    def call(self, x, padding_mask=None, attention_mask=None, training=None,
             return_attention_scores=False, output_range=None):
        # The shape comes from the input, not from each projection: tf2onnx merges a projection's
        # reshapes and then read a wrong shape (a batch of one failed in ONNX Runtime).
        queries = x if output_range is None else x[:, :output_range]  # e.g. a classifier's [CLS] alone
        if output_range is not None and attention_mask is not None:
            attention_mask = attention_mask[:, :output_range]
        batch, length, keys = ops.shape(x)[0], ops.shape(queries)[1], ops.shape(x)[1]

        def heads(t, rows):
            return ops.reshape(t, (batch, rows, self.num_heads, self.head_size))  # (B, T, N, Dh)

        q = heads(self.query(queries), length)  # (B, T, N, Dh)
        k = heads(self.key(x), keys)  # (B, S, N, Dh)
        v = heads(self.value(x), keys)  # (B, S, N, Dh)
        if not return_attention_scores and self._fuses(training):
            mask = merge_masks(padding_mask, attention_mask)  # (B, T|1, S) bool or None
            context = ops.dot_product_attention(
                q, k, v, mask=None if mask is None else ops.expand_dims(mask, 1),  # heads broadcast
                scale=1.0 / math.sqrt(self.head_size))  # (B, T, N, Dh)
            context = ops.reshape(context, (batch, length, self.num_heads * self.head_size))
            return self.output_dense(context)
        # Scaled after the product, in float32, as BERT's modeling.py does: the shape ONNX
        # Runtime's optimiser fuses into one Attention operator (export/onnx_graph.py).
        scores = ops.cast(ops.einsum("btnh,bsnh->bnts", q, k), "float32") * (1.0 / math.sqrt(self.head_size))
        bias = attention_bias(padding_mask, attention_mask)  # (B, 1, T|1, S) or None
        if bias is not None:
            scores = scores + bias
        probs = ops.cast(ops.softmax(scores, axis=-1), self.compute_dtype)
        dropped = self.dropout(probs, training=training)
        context = ops.einsum("bnts,bsnh->btnh", dropped, v)  # (B, T, N, Dh)
        context = ops.reshape(context, (batch, length, self.num_heads * self.head_size))  # (B, T, H)
        output = self.output_dense(context)
        return (output, probs) if return_attention_scores else output

    def _fuses(self, training):
        """Whether this call runs keras.ops.dot_product_attention (see the class docstring)."""
        if self.implementation == "plain" or (training and self.attention_probs_dropout_prob > 0):
            return False
        return self.implementation == "fused" or keras.backend.backend() in ("jax", "torch")

    def compute_output_spec(self, x, padding_mask=None, attention_mask=None, training=None,
                            return_attention_scores=False, output_range=None):
        # From shapes alone: tracing `call` to learn them made building an encoder 3× slower.
        return attention_output_spec(x, self.num_heads, self.compute_dtype, return_attention_scores, output_range)

    def get_config(self):
        return {**super().get_config(), "num_heads": self.num_heads,
                "attention_probs_dropout_prob": self.attention_probs_dropout_prob,
                "initializer_range": self.initializer_range, "implementation": self.implementation}
