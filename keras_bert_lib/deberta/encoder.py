"""DebertaV3Encoder: DeBERTa-v3's encoder as one functional keras.Model."""

import keras
from keras import ops

from keras_bert_lib.deberta.block import DebertaBlock
from keras_bert_lib.deberta.config import DebertaV3Config
from keras_bert_lib.encoder_families import FamilyEncoder
from keras_bert_lib.layers import TokenEmbedding
from keras_bert_lib.layers.initializers import truncated_normal


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class RelativePositionTable(keras.layers.Layer):
    """P = LayerNorm(R): the 2·buckets × H relative-position table every layer reads, normalised
    (DeBERTa's `norm_rel_ebd="layer_norm"`). Its call takes any tensor of the graph and returns P.

    Args:
        rows: int. 2 × position_buckets.
        hidden_size: int. H.
        layer_norm_eps: float. The LayerNorm's epsilon.
        initializer_range: float. Stddev of the truncated-normal initializer of R.
    Example:
        ```python
        import numpy as np
        from keras_bert_lib.deberta import RelativePositionTable
        table = RelativePositionTable(rows=8, hidden_size=4)(np.zeros((1, 3), "int32"))   # (8, 4)
        assert np.allclose(np.asarray(table).mean(-1), 0.0, atol=1e-5)   # each row normalised
        ```
    """

    def __init__(self, rows, hidden_size, layer_norm_eps=1e-7, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.rows, self.hidden_size = rows, hidden_size
        self.layer_norm_eps, self.initializer_range = layer_norm_eps, initializer_range
        self.layer_norm = keras.layers.LayerNormalization(epsilon=layer_norm_eps, name="layer_norm",
                                                          dtype=self.dtype_policy)

    def build(self, input_shape=None):
        self.embeddings = self.add_weight(shape=(self.rows, self.hidden_size), name="embeddings",
                                          initializer=truncated_normal(self.initializer_range))
        self.layer_norm.build((self.rows, self.hidden_size))

    def call(self, anything):
        return self.layer_norm(ops.cast(self.embeddings, self.compute_dtype))  # (2S, H)

    def compute_output_spec(self, anything):
        return keras.KerasTensor((self.rows, self.hidden_size), dtype=self.compute_dtype)

    def get_config(self):
        return {**super().get_config(), "rows": self.rows, "hidden_size": self.hidden_size,
                "layer_norm_eps": self.layer_norm_eps, "initializer_range": self.initializer_range}


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class DebertaV3Encoder(FamilyEncoder):
    """DeBERTa-v3: token embeddings with no position or segment table, L post-LN blocks of
    disentangled attention over one shared relative-position table.

        x₀  = Dropout(LayerNorm(token(ids)) ⊙ mask)
        P   = LayerNorm(R)                                       R: 2·256 relative buckets × H
        x_l = DebertaBlock_l(x_{l−1}, P)                         l = 1 … L

    It takes and gives what `BertEncoder` does, so every task model, export and run takes it:
    inputs `token_ids`, `segment_ids` (read by no layer: DeBERTa-v3 has no segments) and
    `padding_mask`; outputs `sequence_output` (B, T, H) and, when asked, `hidden_states` and
    `attention_probs`. There is no pooler: a classifier reads [CLS] or the mean.

    Args:
        config: a `DebertaV3Config` (default: DeBERTa-v3-base's shape); its fields may also come as
            keyword arguments.
        output_hidden_states: bool. Also output every layer's hidden states.
        output_attentions: bool. Also output every layer's attention probabilities.
        dtype: a Keras dtype policy for the layers.
    Example:
        ```python
        import numpy as np
        from keras_bert_lib.models import deberta_v3_base
        encoder = deberta_v3_base(num_hidden_layers=2, hidden_size=64, num_attention_heads=2, intermediate_size=128)
        batch = {"token_ids": np.array([[1, 100, 2, 0]], "int32"), "segment_ids": np.zeros((1, 4), "int32"),
                 "padding_mask": np.array([[1, 1, 1, 0]], "int32")}
        encoder.predict_on_batch(batch)["sequence_output"].shape   # (1, 4, 64)
        ```
    Reference:
        He et al., 2021, DeBERTa (https://arxiv.org/abs/2006.03654); He et al., 2023, DeBERTaV3
        (https://arxiv.org/abs/2111.09543)
    """

    config_class = DebertaV3Config

    @staticmethod
    def _family_layers(config, dtype):
        blocks = [DebertaBlock(config.num_attention_heads, config.intermediate_size, config.hidden_act,
                               config.hidden_dropout_prob, config.attention_probs_dropout_prob, config.layer_norm_eps,
                               config.position_buckets, config.max_relative_positions, config.initializer_range,
                               name=config.block_name(i), dtype=dtype)
                  for i in range(config.num_hidden_layers)]
        return dict(
            token_embedding=TokenEmbedding(config.vocab_size, config.hidden_size, config.initializer_range,
                                           name="token_embedding", dtype=dtype),
            embeddings_layer_norm=keras.layers.LayerNormalization(epsilon=config.layer_norm_eps,
                                                                  name="embeddings_layer_norm", dtype=dtype),
            embeddings_dropout=keras.layers.Dropout(config.hidden_dropout_prob, name="embeddings_dropout", dtype=dtype),
            relative_table=RelativePositionTable(2 * config.position_buckets, config.hidden_size,
                                                 config.layer_norm_eps, config.initializer_range,
                                                 name="relative_embedding", dtype=dtype),
            blocks=blocks)

    @staticmethod
    def _family_forward(parts, inputs, training=None, output_range=None, output_hidden_states=False,
                 output_attentions=False):
        """The encoder's equations over its layers: symbolic inputs wire the graph; tensors run it."""
        padding_mask = inputs["padding_mask"]
        run = {} if training is None else {"training": training}
        x = parts["embeddings_layer_norm"](parts["token_embedding"](inputs["token_ids"]))
        x = parts["embeddings_dropout"](x * ops.expand_dims(ops.cast(padding_mask, x.dtype), 2), **run)  # (B, T, H)
        table = parts["relative_table"](inputs["token_ids"])  # (2S, H)
        hidden_states, attention_probs = [x], []
        last = len(parts["blocks"]) - 1
        for i, block in enumerate(parts["blocks"]):
            rows = {"output_range": output_range} if output_range is not None and i == last else {}
            x, probs = block(x, table, padding_mask=padding_mask, return_attention_scores=True, **run, **rows)
            hidden_states.append(x)
            attention_probs.append(probs)
        outputs = {"sequence_output": x}
        if output_hidden_states:
            outputs["hidden_states"] = ops.stack(hidden_states, axis=1)  # (B, L+1, T, H)
        if output_attentions:
            outputs["attention_probs"] = ops.stack(attention_probs, axis=1)  # (B, L, A, T, T)
        return outputs
