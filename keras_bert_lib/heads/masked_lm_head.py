"""MaskedLMHead: predicts the original token at each masked position (BERT's MLM)."""

import keras
from keras import ops

from keras_bert_lib.layers.activations import get_activation
from keras_bert_lib.layers.initializers import truncated_normal
from keras_bert_lib.layers.token_embedding import TokenEmbedding


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class MaskedLMHead(keras.layers.Layer):
    """logits = LayerNorm(act(gather(x, positions)·W + b))·Eᵀ + bias, only at the masked positions.

    The output matrix is the token embedding table E (V × E), tied as in BERT; the head owns the
    transform (dense H → E, activation, LayerNorm) and a per-token output bias. ModernBERT's head
    is the same with no bias in the transform and its LayerNorm (`use_bias=False`). Gathering the P
    masked positions first means the V-wide matmul runs on B·P rows, not B·T. Logits are float32.

    Args:
        token_embedding: TokenEmbedding. The table the logits are tied to (the encoder's
            `token_embedding`).
        hidden_act: str. Transform activation ("gelu", "gelu_tanh", "relu").
        layer_norm_eps: float. Transform LayerNorm epsilon.
        initializer_range: float. Stddev of the transform kernel's initializer.
        use_bias: bool. The transform's bias and the LayerNorm's shift (False: ModernBERT's).
    Call arguments:
        x: float tensor (B, T, H): the encoder's `sequence_output`.
        masked_positions: int tensor (B, P): indices into T.
    Returns:
        float32 tensor (B, P, V).
    Example:
        ```python
        import numpy as np
        from keras_bert_lib.heads import MaskedLMHead
        from keras_bert_lib.layers import TokenEmbedding
        head = MaskedLMHead(TokenEmbedding(vocab_size=50, embedding_size=8))
        logits = head(np.ones((2, 6, 8), "float32"), np.array([[1, 4], [0, 2]]))  # (2, 2, 50)
        ```
    Reference:
        Devlin et al., 2019, §3.1 Task #1; Google's run_pretraining.py get_masked_lm_output
    """

    def __init__(self, token_embedding, hidden_act="gelu", layer_norm_eps=1e-12,
                 initializer_range=0.02, use_bias=True, **kwargs):
        super().__init__(**kwargs)
        if isinstance(token_embedding, dict):
            token_embedding = keras.saving.deserialize_keras_object(token_embedding)
        if not isinstance(token_embedding, TokenEmbedding):
            raise ValueError(f"token_embedding must be a TokenEmbedding, got {type(token_embedding)}.")
        self.token_embedding = token_embedding
        self.hidden_act = hidden_act
        self.layer_norm_eps = layer_norm_eps
        self.initializer_range = initializer_range
        self.use_bias = use_bias
        # === Layers ===
        self.transform = keras.layers.Dense(
            token_embedding.embedding_size, activation=get_activation(hidden_act), use_bias=use_bias,
            kernel_initializer=truncated_normal(initializer_range),
            name="transform", dtype=self.dtype_policy)
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_eps, center=use_bias, name="layer_norm", dtype=self.dtype_policy)

    def build(self, input_shape):
        if not self.token_embedding.built:
            self.token_embedding.build()
        self.transform.build(input_shape)
        self.layer_norm.build((*input_shape[:-1], self.token_embedding.embedding_size))
        self.output_bias = self.add_weight(
            shape=(self.token_embedding.vocab_size,), initializer="zeros", name="output_bias")

    def call(self, x, masked_positions):
        positions = ops.cast(masked_positions, "int32")
        x = ops.take_along_axis(x, positions[:, :, None], axis=1)  # (B, P, H)
        x = self.layer_norm(self.transform(x))  # (B, P, E)
        return self.token_embedding.logits(x) + ops.cast(self.output_bias, "float32")  # (B, P, V)

    def compute_output_spec(self, x, masked_positions):
        return keras.KerasTensor((*masked_positions.shape, self.token_embedding.vocab_size), dtype="float32")

    def get_config(self):
        return {**super().get_config(),
                "token_embedding": keras.saving.serialize_keras_object(self.token_embedding),
                "hidden_act": self.hidden_act, "layer_norm_eps": self.layer_norm_eps,
                "initializer_range": self.initializer_range, "use_bias": self.use_bias}
