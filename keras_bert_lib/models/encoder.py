"""BertEncoder: the BERT / ALBERT / DistilBERT / RoBERTa encoder as one functional keras.Model."""

import dataclasses
import numbers

import keras
from keras import ops

from keras_bert_lib.config import EncoderConfig
from keras_bert_lib.deberta import DebertaV3Config, DebertaV3Encoder
from keras_bert_lib.layers import (
    PositionEmbedding,
    SegmentEmbedding,
    TokenEmbedding,
    TransformerEncoderBlock,
)
from keras_bert_lib.layers.initializers import truncated_normal
from keras_bert_lib.layers.multi_head_self_attention import output_rows
from keras_bert_lib.modernbert import ModernBertConfig, ModernBertEncoder
from keras_bert_lib.runtime.entry_points import EntryPoints

ENCODER_FIELDS = tuple(f.name for f in dataclasses.fields(EncoderConfig))


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class BertEncoder(EntryPoints, keras.Model):
    """The BERT-family encoder: embeddings, L Transformer blocks, and the [CLS] pooler.

        E = LayerNorm(token(ids) + position(t) + segment(ids)) → Dropout  [→ E×H projection]
        x_l = TransformerEncoderBlock_l(x_{l-1}, padding_mask)           l = 1 .. L
        pooled = tanh(W·x_L[:, 0] + b)

    One class covers BERT, ALBERT (factorised embedding E < H, then a dense E → H projection;
    blocks shared across layers in `num_hidden_groups` groups), DistilBERT (no segment embedding,
    no pooler: it ignores `segment_ids` and returns no `pooled_output`) and RoBERTa (positions
    start at padding_idx + 1 = 2). The shape is an `EncoderConfig`, declared there once.

    Inputs are a dict of int32 (B, T) tensors: `token_ids`, `segment_ids`, `padding_mask`
    (1 = real token; padding is on the right); every way in (a call on values, `predict`, `fit`, …)
    checks them first and names a bad value and the valid range (XLA would clamp a bad id
    silently). Outputs are a dict: `sequence_output` (B, T, H),
    `pooled_output` (B, H) when the encoder has a pooler, and, when asked for,
    `hidden_states` (B, L+1, T, H: the embeddings, then each layer) and
    `attention_probs` (B, L, A, T, T).
    `encoder(inputs, output_range=1)` computes the last block for [CLS] alone, (B, 1, H), for
    models that read only the pooler (the [CLS] classifiers do; see `call`).

    Args:
        config: an `EncoderConfig` (default: BERT-Base's shape). Its fields may also come as
            keyword arguments (`hidden_size=256`, ...), which replace the config's.
        output_hidden_states: bool. Also output every layer's hidden states.
        output_attentions: bool. Also output every layer's attention probabilities.
        dtype: a Keras dtype policy for the layers ("mixed_bfloat16", …); `layers_dtype_policy`
            holds it (the functional model's own `dtype_policy` stays float32). The runtime picks
            the compiled path of `predict` from it (`runtime.compile_path.choose_jit_compile`).
        shared_embeddings: a `BertEncoder` whose embedding layers (token, position and segment
            tables, the embeddings' LayerNorm) this one uses as its own: ELECTRA's generator reads
            the discriminator's (`pretraining.electra_generator`). Their E, vocabulary, positions
            and segments must agree. `get_config` saves None (an encoder is not a config value):
            the model holding both records the sharing (`ElectraPretrainer`).
    Example:
        ```python
        import numpy as np
        from keras_bert_lib import bert_tiny
        encoder = bert_tiny()
        batch = {"token_ids": np.array([[101, 7592, 102, 0]], "int32"),
                 "segment_ids": np.zeros((1, 4), "int32"),
                 "padding_mask": np.array([[1, 1, 1, 0]], "int32")}
        outputs = encoder.predict_on_batch(batch)  # compiled (XLA in float32); see docs
        outputs["pooled_output"].shape              # (1, 128)
        ```
    Reference:
        Devlin et al., 2019 (https://arxiv.org/abs/1810.04805); Lan et al., 2020 (ALBERT)
    """

    def __init__(self, config=None, output_hidden_states=False, output_attentions=False, dtype=None,
                 shared_embeddings=None, **kwargs):
        # The architecture is declared once, in EncoderConfig: its fields come as keyword
        # arguments (what get_config saves, and `BertEncoder(hidden_size=...)`) or as `config`.
        fields = {name: kwargs.pop(name) for name in ENCODER_FIELDS if name in kwargs}
        config = (config or EncoderConfig()).replace(**fields) if fields or config is None else config
        emb_size = config.embedding_size or config.hidden_size
        # === Layers ===
        if shared_embeddings is not None:
            token_embedding, position_embedding, segment_embedding, embeddings_layer_norm = _shared(
                config, shared_embeddings)
        else:
            token_embedding = TokenEmbedding(config.vocab_size, emb_size, config.initializer_range,
                                             name="token_embedding", dtype=dtype)
            position_embedding = PositionEmbedding(
                config.max_position_embeddings, "learned", config.position_offset, config.initializer_range,
                name="position_embedding", dtype=dtype)
            segment_embedding = (
                SegmentEmbedding(config.type_vocab_size, emb_size, config.initializer_range,
                                 name="segment_embedding", dtype=dtype)
                if config.type_vocab_size else None
            )
            embeddings_layer_norm = keras.layers.LayerNormalization(
                epsilon=config.layer_norm_eps, name="embeddings_layer_norm", dtype=dtype)
        embeddings_add = keras.layers.Add(name="embeddings_add", dtype=dtype)
        embeddings_dropout = keras.layers.Dropout(config.hidden_dropout_prob, name="embeddings_dropout",
                                                  dtype=dtype)
        projection = (
            keras.layers.Dense(config.hidden_size, kernel_initializer=truncated_normal(config.initializer_range),
                               name="embedding_projection", dtype=dtype)
            if emb_size != config.hidden_size else None
        )
        groups = [
            [TransformerEncoderBlock(
                config.num_attention_heads, config.intermediate_size, config.hidden_act, config.hidden_dropout_prob,
                config.attention_probs_dropout_prob, config.layer_norm_eps, config.norm_first, config.initializer_range,
                name=config.block_name(g, j), dtype=dtype)
             for j in range(config.inner_group_num)]
            for g in range(config.num_groups)
        ]
        final_layer_norm = (
            keras.layers.LayerNormalization(epsilon=config.layer_norm_eps, name="final_layer_norm",
                                            dtype=dtype)
            if config.norm_first else None
        )
        pooler = (
            keras.layers.Dense(config.hidden_size, activation="tanh",
                               kernel_initializer=truncated_normal(config.initializer_range),
                               name="pooler", dtype=dtype)
            if config.with_pooler else None
        )

        # === Functional graph ===
        inputs = {
            "token_ids": keras.Input((None,), dtype="int32", name="token_ids"),
            "segment_ids": keras.Input((None,), dtype="int32", name="segment_ids"),
            "padding_mask": keras.Input((None,), dtype="int32", name="padding_mask"),
        }
        parts = dict(token_embedding=token_embedding, position_embedding=position_embedding,
                     segment_embedding=segment_embedding, embeddings_add=embeddings_add,
                     embeddings_layer_norm=embeddings_layer_norm,
                     embeddings_dropout=embeddings_dropout, projection=projection, groups=groups,
                     final_layer_norm=final_layer_norm, pooler=pooler)
        outputs = _forward(parts, config, inputs, output_hidden_states=output_hidden_states,
                           output_attentions=output_attentions)
        super().__init__(inputs=inputs, outputs=outputs, dtype=dtype, **kwargs)

        # === Config ===
        self.config = config
        # The layers' policy (a functional model keeps float32 as its own): what get_config saves.
        self.layers_dtype_policy = self.get_layer("token_embedding").dtype_policy
        self.output_hidden_states = output_hidden_states
        self.output_attentions = output_attentions
        self.token_embedding = token_embedding
        object.__setattr__(self, "_parts", parts)  # `call(output_range=...)` wires them again; tracked above

    def call(self, inputs, training=None, mask=None, output_range=None):
        """The functional graph; with `output_range` (an int), the same layers with the last block
        computing only the first `output_range` positions (the Model Garden's `output_range`):
        `sequence_output` is then (B, output_range, H), each row what the full graph gives there,
        and the pooler reads the same [CLS]. The [CLS] classifiers pass 1: their last block skips
        5/6 of its matrix products (forward and backward). Not with hidden states or attention
        probabilities, which need every position."""
        if output_range is None:
            return super().call(inputs, training=training, mask=mask)
        self._check_output_range(output_range)
        return _forward(self._parts, self.config, inputs, training=training, output_range=output_range)

    def call_packed(self, token_ids, segment_ids, position_ids, text_ids):
        """The encoder over packed rows (`runtime.packing.pack`): several texts end to end in each
        row of the (R, W) int tensors, `position_ids` starting again at 0 at each text and
        `text_ids` numbering a row's texts from 1 (0: padding). Each token attends to its own
        text's tokens only, so each text's states are those it gets alone, and a row of short
        texts costs what one text of its width does. Returns {"sequence_output": (R, W, H)}: the
        pooler reads each text's [CLS], which `runtime.packing` gathers back.

        Example:
            ```python
            import numpy as np
            from keras_bert_lib import bert_tiny
            encoder = bert_tiny(num_hidden_layers=1)
            a, b = [101, 7592, 102], [101, 2088, 2003, 102]
            alone = encoder.predict_on_batch({"token_ids": np.array([b]), "segment_ids": np.zeros((1, 4), "int32"),
                                              "padding_mask": np.ones((1, 4), "int32")})["sequence_output"]
            packed = encoder.call_packed(np.array([a + b]), np.zeros((1, 7), "int32"),
                                         np.array([[0, 1, 2, 0, 1, 2, 3]]), np.array([[1, 1, 1, 2, 2, 2, 2]]))
            assert np.allclose(packed["sequence_output"][0, 3:], alone[0], atol=1e-5)
            ```
        """
        text_ids = ops.convert_to_tensor(text_ids, "int32")
        same_text = ops.logical_and(ops.equal(text_ids[:, :, None], text_ids[:, None, :]), text_ids[:, None, :] > 0)
        inputs = {"token_ids": token_ids, "segment_ids": segment_ids, "position_ids": position_ids,
                  "padding_mask": ops.cast(text_ids > 0, "int32")}
        return {"sequence_output": _forward(self._parts, self.config, inputs, training=False,
                                            attention_mask=same_text)["sequence_output"]}

    def compute_output_spec(self, inputs, training=None, mask=None, output_range=None):
        if output_range is None:
            return super().compute_output_spec(inputs, training=training, mask=mask)
        self._check_output_range(output_range)
        batch, length = inputs["token_ids"].shape
        rows = output_rows(length, output_range)
        dtype = self.layers_dtype_policy.compute_dtype
        outputs = {"sequence_output": keras.KerasTensor((batch, rows, self.config.hidden_size), dtype=dtype)}
        if self.config.with_pooler:
            outputs["pooled_output"] = keras.KerasTensor((batch, self.config.hidden_size), dtype=dtype)
        return outputs

    def _check_output_range(self, output_range):
        if isinstance(output_range, bool) or not isinstance(output_range, numbers.Integral) or output_range < 1:
            raise ValueError(f"output_range={output_range!r}: pass how many first positions the last block computes, "
                             "an int of at least 1 (1: [CLS] alone), or None for every position.")
        if self.output_hidden_states or self.output_attentions:
            raise ValueError("output_range computes the last block's first positions only, so it cannot give every "
                             "layer's hidden states or attention probabilities; call the encoder without it, or "
                             "build it with output_hidden_states=False and output_attentions=False.")

    def _input_config(self):
        return self.config

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "dtype": keras.saving.serialize_keras_object(self.layers_dtype_policy),
            **self.config.to_dict(),
            "output_hidden_states": self.output_hidden_states,
            "output_attentions": self.output_attentions,
            "shared_embeddings": None,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = keras.saving.deserialize_keras_object(config["dtype"])
        return cls(**config)


def _shared(config, encoder):
    """The embedding layers of `encoder` (a BertEncoder) for an encoder of `config`, which must read
    the same tables: (token, position, segment or None, embeddings LayerNorm)."""
    if not isinstance(encoder, BertEncoder):
        raise ValueError(f"shared_embeddings takes a BertEncoder, not {type(encoder).__name__}.")
    theirs = encoder.config
    fields = ("vocab_size", "max_position_embeddings", "type_vocab_size", "position_offset", "layer_norm_eps")
    differ = [f"{f} {getattr(config, f)} and {getattr(theirs, f)}" for f in fields
              if getattr(config, f) != getattr(theirs, f)]
    width = config.embedding_size or config.hidden_size
    if width != (theirs.embedding_size or theirs.hidden_size):
        differ.append(f"embedding width {width} and {theirs.embedding_size or theirs.hidden_size}")
    if differ:
        raise ValueError(f"shared_embeddings: the two encoders' embeddings differ ({'; '.join(differ)}); a generator "
                         "reading the discriminator's tables needs its embedding_size and the rest equal.")
    segment = encoder.get_layer("segment_embedding") if theirs.type_vocab_size else None
    return (encoder.token_embedding, encoder.get_layer("position_embedding"), segment,
            encoder.get_layer("embeddings_layer_norm"))


def encoder_class(config):
    """The encoder class a config builds: `ModernBertEncoder` for a `ModernBertConfig`, `DebertaV3Encoder`
    for a `DebertaV3Config`, else `BertEncoder`.

    Example:
        ```python
        from keras_bert_lib import PRESETS
        from keras_bert_lib.models.encoder import encoder_class
        encoder_class(PRESETS["modernbert_base"]).__name__, encoder_class(PRESETS["bert_base"]).__name__
        # ('ModernBertEncoder', 'BertEncoder')
        ```
    """
    families = {ModernBertConfig: ModernBertEncoder, DebertaV3Config: DebertaV3Encoder}
    return families.get(type(config), BertEncoder)


def _forward(parts, config, inputs, training=None, output_range=None, output_hidden_states=False,
             output_attentions=False, attention_mask=None):
    """The encoder's equations over its layers (`parts`): symbolic inputs wire the functional graph;
    tensors run it, the last block at `output_range`'s first positions (`BertEncoder.call`)."""
    padding_mask = inputs["padding_mask"]
    run = {} if training is None else {"training": training}  # symbolic: Keras passes it at call time
    tokens = parts["token_embedding"](inputs["token_ids"])  # (B, T, E)
    positions = inputs.get("position_ids")  # packed rows: each text's own (`BertEncoder.call_packed`)
    summed = [tokens, parts["position_embedding"](tokens) if positions is None
              else parts["position_embedding"](tokens, positions=positions)]
    if parts["segment_embedding"] is not None:
        summed.append(parts["segment_embedding"](inputs["segment_ids"]))
    x = parts["embeddings_add"](summed)
    x = parts["embeddings_dropout"](parts["embeddings_layer_norm"](x), **run)
    if parts["projection"] is not None:
        x = parts["projection"](x)  # (B, T, E) → (B, T, H)
    hidden_states, attention_probs = [x], []
    layers_per_group = config.num_hidden_layers // config.num_groups
    for i in range(config.num_hidden_layers):
        group = parts["groups"][i // layers_per_group]
        for j, block in enumerate(group):
            if output_range is not None and i == config.num_hidden_layers - 1 and j == len(group) - 1:
                run["output_range"] = output_range  # the last block: its first positions only
            x, probs = block(x, padding_mask=padding_mask, attention_mask=attention_mask, return_attention_scores=True,
                             **run)
        hidden_states.append(x)
        attention_probs.append(probs)
    if parts["final_layer_norm"] is not None:
        x = parts["final_layer_norm"](x)
    outputs = {"sequence_output": x}
    if parts["pooler"] is not None:
        outputs["pooled_output"] = parts["pooler"](x[:, 0, :])  # (B, H) from [CLS]
    if output_hidden_states:
        outputs["hidden_states"] = ops.stack(hidden_states, axis=1)  # (B, L+1, T, H)
    if output_attentions:
        outputs["attention_probs"] = ops.stack(attention_probs, axis=1)  # (B, L, A, T, T)
    return outputs
