"""ModernBertBlock: ModernBERT's bias-free pre-norm block, its attention global or local."""

import keras

from keras_bert_lib.layers import GatedFeedForward, RotarySelfAttention


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class ModernBertBlock(keras.layers.Layer):
    """One ModernBERT layer (pre-norm, no biases anywhere):

        x = x + Dropout(RotarySelfAttention(LayerNorm(x)))     (block 0: no norm, the embeddings' is just below)
        x = x + GeGLU(LayerNorm(x))

    The attention is global (rotary base 160,000) or local (base 10,000, a window of
    `window` positions either side); the encoder alternates them.

    Args:
        num_heads: int. Attention heads (A).
        intermediate_size: int. The GeGLU's inner width (I).
        rotary_base: float. The rotary wavelength base of this layer's attention.
        window: int or None. Positions each side the attention sees; None: global.
        hidden_act: str. The GeGLU's activation ("gelu").
        layer_norm_eps: float. Epsilon of the bias-free LayerNorms.
        attention_norm: bool. Whether the block normalises its attention input (False in block 0).
        attention_dropout: float. Dropout on attention probabilities and the attention output.
        mlp_dropout: float. Dropout inside the GeGLU.
        initializer_range: float. Stddev of the truncated-normal kernel initializer.
    Call arguments:
        x: float tensor (B, T, H).
        padding_mask: bool/int tensor (B, T), 1 = real token. Optional.
        return_attention_scores: bool. Also return the attention probabilities (B, A, T, T).
        output_range: int or None. Compute only the first `output_range` positions' outputs.
    Returns:
        float tensor (B, T, H), or a tuple (output, probabilities).
    Example:
        ```python
        import numpy as np
        from keras_bert_lib.modernbert import ModernBertBlock
        block = ModernBertBlock(num_heads=2, intermediate_size=16, rotary_base=10_000.0, window=2)
        y = block(np.ones((2, 5, 8), "float32"), padding_mask=np.array([[1] * 5, [1, 1, 0, 0, 0]]))   # (2, 5, 8)
        ```
    Reference:
        Warner et al., 2024, ModernBERT §2.1 (https://arxiv.org/abs/2412.13663)
    """

    def __init__(self, num_heads, intermediate_size, rotary_base=160_000.0, window=None, hidden_act="gelu",
                 layer_norm_eps=1e-5, attention_norm=True, attention_dropout=0.0, mlp_dropout=0.0,
                 initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.intermediate_size = intermediate_size
        self.rotary_base = float(rotary_base)
        self.window = window
        self.hidden_act = hidden_act
        self.layer_norm_eps = layer_norm_eps
        self.attention_norm = attention_norm
        self.attention_dropout = attention_dropout
        self.mlp_dropout = mlp_dropout
        self.initializer_range = initializer_range
        # === Layers ===
        dtype = self.dtype_policy
        norm = lambda name: keras.layers.LayerNormalization(  # noqa: E731 — bias-free: a scale, no shift
            epsilon=layer_norm_eps, center=False, name=name, dtype=dtype)
        self.attention_layer_norm = norm("attention_layer_norm") if attention_norm else None
        self.attention = RotarySelfAttention(num_heads, rotary_base, window, use_bias=False,
                                             attention_probs_dropout_prob=attention_dropout,
                                             initializer_range=initializer_range, name="attention", dtype=dtype)
        self.attention_dropout_layer = keras.layers.Dropout(attention_dropout, name="attention_dropout", dtype=dtype)
        self.ffn_layer_norm = norm("ffn_layer_norm")
        self.ffn = GatedFeedForward(intermediate_size, hidden_act, use_bias=False, dropout=mlp_dropout,
                                    initializer_range=initializer_range, name="ffn", dtype=dtype)

    def build(self, input_shape):
        for layer in (self.attention_layer_norm, self.attention, self.ffn_layer_norm, self.ffn):
            if layer is not None:
                layer.build(input_shape)

    def call(self, x, padding_mask=None, training=None, return_attention_scores=False, output_range=None):
        residual = x if output_range is None else x[:, :output_range]
        normed = self.attention_layer_norm(x) if self.attention_layer_norm is not None else x
        attended = self.attention(normed, padding_mask=padding_mask, training=training,
                                  return_attention_scores=return_attention_scores, output_range=output_range)
        attended, probs = attended if return_attention_scores else (attended, None)  # local: probs force the T × T path
        x = residual + self.attention_dropout_layer(attended, training=training)
        x = x + self.ffn(self.ffn_layer_norm(x), training=training)
        return (x, probs) if return_attention_scores else x

    def compute_output_spec(self, x, padding_mask=None, training=None, return_attention_scores=False,
                            output_range=None):
        output, probs = self.attention.compute_output_spec(x, return_attention_scores=True, output_range=output_range)
        return (output, probs) if return_attention_scores else output

    def get_config(self):
        return {**super().get_config(), "num_heads": self.num_heads, "intermediate_size": self.intermediate_size,
                "rotary_base": self.rotary_base, "window": self.window, "hidden_act": self.hidden_act,
                "layer_norm_eps": self.layer_norm_eps, "attention_norm": self.attention_norm,
                "attention_dropout": self.attention_dropout, "mlp_dropout": self.mlp_dropout,
                "initializer_range": self.initializer_range}
