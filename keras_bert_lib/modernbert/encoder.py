"""ModernBertEncoder: ModernBERT's encoder as one functional keras.Model."""

import keras
from keras import ops

from keras_bert_lib.layers import TokenEmbedding
from keras_bert_lib.layers.multi_head_self_attention import output_rows
from keras_bert_lib.modernbert.block import ModernBertBlock
from keras_bert_lib.modernbert.config import ModernBertConfig
from keras_bert_lib.runtime.entry_points import EntryPoints


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class ModernBertEncoder(EntryPoints, keras.Model):
    """ModernBERT: token embeddings, L bias-free pre-norm blocks alternating global and local
    attention, and a final norm.

        x₀ = Dropout(LayerNorm(token(ids)))                               no position or segment table
        x_l = ModernBertBlock_l(x_{l-1})   global (rotary base 160k) when l mod n = 0, else local (base 10k,
                                           each position seeing local_attention/2 either side)
        sequence_output = LayerNorm(x_L)

    It takes and gives what `BertEncoder` does, so every task model, export and run takes it:
    inputs `token_ids`, `segment_ids` (read by no layer: ModernBERT has no segments) and
    `padding_mask`, int32 (B, T); outputs `sequence_output` (B, T, H) and, when asked,
    `hidden_states` (B, L+1, T, H) and `attention_probs` (B, L, A, T, T). There is no pooler: a
    classifier reads [CLS] or the mean, as HuggingFace's `classifier_pooling`.

    Args:
        config: a `ModernBertConfig` (default: ModernBERT-base's shape). Its fields may also come
            as keyword arguments, which replace the config's.
        output_hidden_states: bool. Also output every layer's hidden states.
        output_attentions: bool. Also output every layer's attention probabilities (the local
            layers then compute the full T × T band instead of their blocks).
        dtype: a Keras dtype policy for the layers ("mixed_bfloat16", …).
    Example:
        ```python
        import numpy as np
        from keras_bert_lib import modernbert_base
        encoder = modernbert_base(num_hidden_layers=2, hidden_size=64, num_attention_heads=2, intermediate_size=96)
        batch = {"token_ids": np.array([[50281, 100, 50282, 50283]], "int32"), "segment_ids": np.zeros((1, 4), "int32"),
                 "padding_mask": np.array([[1, 1, 1, 0]], "int32")}
        encoder.predict_on_batch(batch)["sequence_output"].shape   # (1, 4, 64)
        ```
    Reference:
        Warner et al., 2024, Smarter, Better, Faster, Longer (https://arxiv.org/abs/2412.13663)
    """

    def __init__(self, config=None, output_hidden_states=False, output_attentions=False, dtype=None, **kwargs):
        fields = {name: kwargs.pop(name) for name in ModernBertConfig.__dataclass_fields__ if name in kwargs}
        kwargs.pop("family", None)  # what `config.to_json` adds; the class says it
        config = (config or ModernBertConfig()).replace(**fields) if fields or config is None else config
        # === Layers ===
        token_embedding = TokenEmbedding(config.vocab_size, config.hidden_size, config.initializer_range,
                                         name="token_embedding", dtype=dtype)
        norm = lambda name: keras.layers.LayerNormalization(  # noqa: E731 — bias-free
            epsilon=config.layer_norm_eps, center=False, name=name, dtype=dtype)
        embeddings_layer_norm = norm("embeddings_layer_norm")
        embeddings_dropout = keras.layers.Dropout(config.embedding_dropout, name="embeddings_dropout", dtype=dtype)
        blocks = [
            ModernBertBlock(config.num_attention_heads, config.intermediate_size,
                            config.global_rope_theta if config.layer_is_global(i) else config.local_rope_theta,
                            None if config.layer_is_global(i) else config.window, config.hidden_act,
                            config.layer_norm_eps, attention_norm=i > 0, attention_dropout=config.attention_dropout,
                            mlp_dropout=config.mlp_dropout, initializer_range=config.initializer_range,
                            name=config.block_name(i), dtype=dtype)
            for i in range(config.num_hidden_layers)
        ]
        final_layer_norm = norm("final_layer_norm")

        # === Functional graph ===
        inputs = {name: keras.Input((None,), dtype="int32", name=name)
                  for name in ("token_ids", "segment_ids", "padding_mask")}
        parts = dict(token_embedding=token_embedding, embeddings_layer_norm=embeddings_layer_norm,
                     embeddings_dropout=embeddings_dropout, blocks=blocks, final_layer_norm=final_layer_norm)
        outputs = _forward(parts, inputs, output_hidden_states=output_hidden_states,
                           output_attentions=output_attentions)
        super().__init__(inputs=inputs, outputs=outputs, dtype=dtype, **kwargs)

        # === Config ===
        self.config = config
        self.layers_dtype_policy = self.get_layer("token_embedding").dtype_policy
        self.output_hidden_states = output_hidden_states
        self.output_attentions = output_attentions
        self.token_embedding = token_embedding
        object.__setattr__(self, "_parts", parts)

    def call(self, inputs, training=None, mask=None, output_range=None):
        """The functional graph; with `output_range` (an int), the last block computes only the
        first `output_range` positions (a [CLS] classifier's `output_range=1`), as `BertEncoder`."""
        if output_range is None:
            return super().call(inputs, training=training, mask=mask)
        self._check_output_range(output_range)
        return _forward(self._parts, inputs, training=training, output_range=output_range)

    def compute_output_spec(self, inputs, training=None, mask=None, output_range=None):
        if output_range is None:
            return super().compute_output_spec(inputs, training=training, mask=mask)
        batch, length = inputs["token_ids"].shape
        dtype = self.layers_dtype_policy.compute_dtype
        rows = output_rows(length, output_range)
        return {"sequence_output": keras.KerasTensor((batch, rows, self.config.hidden_size), dtype=dtype)}

    def _check_output_range(self, output_range):
        if isinstance(output_range, bool) or not isinstance(output_range, int) or output_range < 1:
            raise ValueError(f"output_range={output_range!r}: pass how many first positions the last block computes, "
                             "an int of at least 1 (1: [CLS] alone), or None for every position.")
        if self.output_hidden_states or self.output_attentions:
            raise ValueError("output_range computes the last block's first positions only, so it cannot give every "
                             "layer's hidden states or attention probabilities; call the encoder without it.")

    def _input_config(self):
        return self.config

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable,
                "dtype": keras.saving.serialize_keras_object(self.layers_dtype_policy), **self.config.to_dict(),
                "output_hidden_states": self.output_hidden_states, "output_attentions": self.output_attentions}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = keras.saving.deserialize_keras_object(config["dtype"])
        return cls(**config)


def _forward(parts, inputs, training=None, output_range=None, output_hidden_states=False, output_attentions=False):
    """The encoder's equations over its layers: symbolic inputs wire the graph; tensors run it."""
    padding_mask = inputs["padding_mask"]
    run = {} if training is None else {"training": training}
    x = parts["embeddings_dropout"](parts["embeddings_layer_norm"](parts["token_embedding"](inputs["token_ids"])),
                                    **run)  # (B, T, H)
    hidden_states, attention_probs = [x], []
    last = len(parts["blocks"]) - 1
    for i, block in enumerate(parts["blocks"]):
        rows = {"output_range": output_range} if output_range is not None and i == last else {}
        x = block(x, padding_mask=padding_mask, return_attention_scores=output_attentions, **run, **rows)
        if output_attentions:
            x, probs = x
            attention_probs.append(probs)
        hidden_states.append(x)
    outputs = {"sequence_output": parts["final_layer_norm"](x)}
    if output_hidden_states:
        outputs["hidden_states"] = ops.stack(hidden_states, axis=1)  # (B, L+1, T, H)
    if output_attentions:
        outputs["attention_probs"] = ops.stack(attention_probs, axis=1)  # (B, L, A, T, T)
    return outputs
