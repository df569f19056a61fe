"""TransformerEncoderBlock: self-attention and feed-forward, each with add & LayerNorm."""

import keras

from keras_bert_lib.layers.feed_forward import FeedForward
from keras_bert_lib.layers.multi_head_self_attention import MultiHeadSelfAttention


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class TransformerEncoderBlock(keras.layers.Layer):
    """One BERT layer. Post-LN (BERT):

        x = LayerNorm(x + Dropout(MultiHeadSelfAttention(x)))
        x = LayerNorm(x + Dropout(FeedForward(x)))

    Pre-LN (`norm_first=True`): x = x + Dropout(Attn(LN(x))); x = x + Dropout(FFN(LN(x))); the
    encoder then adds a final LayerNorm. LayerNorm statistics are computed in float32 by Keras.

    Args:
        num_heads: int. Attention heads (A).
        intermediate_size: int. Feed-forward width (I).
        hidden_act: str. "gelu" (exact erf), "gelu_tanh" or "relu".
        hidden_dropout_prob: float. Dropout on each residual branch.
        attention_probs_dropout_prob: float. Dropout on attention probabilities.
        layer_norm_eps: float. LayerNorm epsilon (1e-12 in BERT).
        norm_first: bool. Pre-LN instead of post-LN.
        initializer_range: float. Stddev of the truncated-normal kernel initializer.
    Call arguments:
        x: float tensor (B, T, H).
        padding_mask: bool/int tensor (B, T), 1 = real token. Optional.
        attention_mask: bool/int tensor (B, T, T). Optional.
        return_attention_scores: bool. Also return the attention probabilities (B, A, T, T).
        output_range: int or None. Compute only the first `output_range` positions' outputs
            (each from all T positions' keys and values): (B, output_range, H), what the full
            call gives there. A classifier's last block needs [CLS] alone (`output_range=1`),
            which skips 5/6 of that block's matrix products. None: every position.
    Returns:
        float tensor (B, T, H), or a tuple (output, probabilities).
    Example:
        ```python
        import numpy as np
        from keras_bert_lib.layers import TransformerEncoderBlock
        block = TransformerEncoderBlock(num_heads=2, intermediate_size=32)
        y = block(np.ones((2, 5, 8), "float32"), padding_mask=np.array([[1] * 5, [1, 1, 0, 0, 0]]))
        ```
    Reference:
        Devlin et al., 2019, §3 (https://arxiv.org/abs/1810.04805); Xiong et al., 2020 (pre-LN)
    """

    def __init__(self, num_heads, intermediate_size, hidden_act="gelu", hidden_dropout_prob=0.1,
                 attention_probs_dropout_prob=0.1, layer_norm_eps=1e-12, norm_first=False,
                 initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.layer_norm_eps = layer_norm_eps
        self.norm_first = norm_first
        self.initializer_range = initializer_range
        # === Layers ===
        dtype = self.dtype_policy
        self.attention = MultiHeadSelfAttention(
            num_heads, attention_probs_dropout_prob, initializer_range, name="attention", dtype=dtype)
        self.attention_dropout = keras.layers.Dropout(hidden_dropout_prob, name="attention_dropout", dtype=dtype)
        self.attention_layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_eps, name="attention_layer_norm", dtype=dtype)
        self.ffn = FeedForward(intermediate_size, hidden_act, initializer_range, name="ffn", dtype=dtype)
        self.ffn_dropout = keras.layers.Dropout(hidden_dropout_prob, name="ffn_dropout", dtype=dtype)
        self.ffn_layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_eps, name="ffn_layer_norm", dtype=dtype)

    def build(self, input_shape):
        for layer in (self.attention, self.attention_layer_norm, self.ffn, self.ffn_layer_norm):
            layer.build(input_shape)

    def call(self, x, padding_mask=None, attention_mask=None, training=None,
             return_attention_scores=False, output_range=None):
        residual = x if output_range is None else x[:, :output_range]  # (B, T, H)
        if self.norm_first:
            x = self.attention_layer_norm(x)
        x, probs = self.attention(x, padding_mask=padding_mask, attention_mask=attention_mask,
                                  training=training, return_attention_scores=True, output_range=output_range)
        # Branch first: ONNX Runtime's attention fusion follows the first Add parent of the
        # residual sum, and in ALBERT the residual is an Add too (the embedding projection's bias).
        x = self.attention_dropout(x, training=training) + residual
        if not self.norm_first:
            x = self.attention_layer_norm(x)

        residual = x
        if self.norm_first:
            x = self.ffn_layer_norm(x)
        x = residual + self.ffn_dropout(self.ffn(x), training=training)
        if not self.norm_first:
            x = self.ffn_layer_norm(x)
        return (x, probs) if return_attention_scores else x

    def compute_output_spec(self, x, padding_mask=None, attention_mask=None, training=None,
                            return_attention_scores=False, output_range=None):
        # The attention's shapes (the input's, or its first rows): known without tracing `call`.
        output, probs = self.attention.compute_output_spec(x, return_attention_scores=True,
                                                           output_range=output_range)
        return (output, probs) if return_attention_scores else output

    def get_config(self):
        return {**super().get_config(), "num_heads": self.num_heads,
                "intermediate_size": self.intermediate_size, "hidden_act": self.hidden_act,
                "hidden_dropout_prob": self.hidden_dropout_prob,
                "attention_probs_dropout_prob": self.attention_probs_dropout_prob,
                "layer_norm_eps": self.layer_norm_eps, "norm_first": self.norm_first,
                "initializer_range": self.initializer_range}
