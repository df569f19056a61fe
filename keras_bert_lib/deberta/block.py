"""DebertaBlock: BERT's post-LN block around DeBERTa's disentangled attention."""

import keras

from keras_bert_lib.layers import DisentangledSelfAttention, FeedForward


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class DebertaBlock(keras.layers.Layer):
    """One DeBERTa layer, post-LN as BERT's:

        x = LayerNorm(x + Dropout(DisentangledSelfAttention(x, P)))      P: the normalised relative table
        x = LayerNorm(x + Dropout(FeedForward(x)))

    Args:
        num_heads: int. Attention heads (A).
        intermediate_size: int. Feed-forward width (I).
        hidden_act: str. "gelu" (exact erf), "gelu_tanh" or "relu".
        hidden_dropout_prob: float. Dropout on each residual branch and on P.
        attention_probs_dropout_prob: float. Dropout on attention probabilities.
        layer_norm_eps: float. LayerNorm epsilon (1e-7).
        position_buckets: int. Relative buckets per direction.
        max_relative_positions: int. The distance the last bucket reaches.
        initializer_range: float. Stddev of the truncated-normal kernel initializer.
    Call arguments:
        x: float tensor (B, T, H).
        relative_embeddings: float tensor (2·buckets, H).
        padding_mask: bool/int tensor (B, T), 1 = real token. Optional.
        return_attention_scores: bool. Also return the attention probabilities (B, A, T, T).
        output_range: int or None. Return only the first `output_range` positions.
    Returns:
        float tensor (B, T, H), or a tuple (output, probabilities).
    Example:
        ```python
        import numpy as np
        from keras_bert_lib.deberta import DebertaBlock
        block = DebertaBlock(num_heads=2, intermediate_size=16, position_buckets=4, max_relative_positions=8)
        y = block(np.ones((2, 5, 8), "float32"), relative_embeddings=np.ones((8, 8), "float32"))   # (2, 5, 8)
        ```
    Reference:
        He et al., 2021, DeBERTa (https://arxiv.org/abs/2006.03654)
    """

    def __init__(self, num_heads, intermediate_size, hidden_act="gelu", hidden_dropout_prob=0.1,
                 attention_probs_dropout_prob=0.1, layer_norm_eps=1e-7, position_buckets=256,
                 max_relative_positions=512, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.layer_norm_eps = layer_norm_eps
        self.position_buckets = position_buckets
        self.max_relative_positions = max_relative_positions
        self.initializer_range = initializer_range
        # === Layers ===
        dtype = self.dtype_policy
        self.attention = DisentangledSelfAttention(num_heads, position_buckets, max_relative_positions,
                                                   attention_probs_dropout_prob, hidden_dropout_prob,
                                                   initializer_range, name="attention", dtype=dtype)
        self.attention_dropout = keras.layers.Dropout(hidden_dropout_prob, name="attention_dropout", dtype=dtype)
        self.attention_layer_norm = keras.layers.LayerNormalization(epsilon=layer_norm_eps,
                                                                    name="attention_layer_norm", dtype=dtype)
        self.ffn = FeedForward(intermediate_size, hidden_act, initializer_range, name="ffn", dtype=dtype)
        self.ffn_dropout = keras.layers.Dropout(hidden_dropout_prob, name="ffn_dropout", dtype=dtype)
        self.ffn_layer_norm = keras.layers.LayerNormalization(epsilon=layer_norm_eps, name="ffn_layer_norm",
                                                              dtype=dtype)

    def build(self, x_shape, relative_embeddings_shape=None):
        for layer in (self.attention, self.attention_layer_norm, self.ffn, self.ffn_layer_norm):
            layer.build(x_shape)

    def call(self, x, relative_embeddings, padding_mask=None, training=None, return_attention_scores=False,
             output_range=None):
        residual = x if output_range is None else x[:, :output_range]
        attended, probs = self.attention(x, relative_embeddings, padding_mask=padding_mask, training=training,
                                         return_attention_scores=True, output_range=output_range)
        x = self.attention_layer_norm(residual + self.attention_dropout(attended, training=training))
        x = self.ffn_layer_norm(x + self.ffn_dropout(self.ffn(x), training=training))
        return (x, probs) if return_attention_scores else x

    def compute_output_spec(self, x, relative_embeddings=None, padding_mask=None, training=None,
                            return_attention_scores=False, output_range=None):
        output, probs = self.attention.compute_output_spec(x, return_attention_scores=True, output_range=output_range)
        return (output, probs) if return_attention_scores else output

    def get_config(self):
        return {**super().get_config(), "num_heads": self.num_heads, "intermediate_size": self.intermediate_size,
                "hidden_act": self.hidden_act, "hidden_dropout_prob": self.hidden_dropout_prob,
                "attention_probs_dropout_prob": self.attention_probs_dropout_prob,
                "layer_norm_eps": self.layer_norm_eps, "position_buckets": self.position_buckets,
                "max_relative_positions": self.max_relative_positions, "initializer_range": self.initializer_range}
