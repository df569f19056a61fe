"""What the families with blocks of their own (ModernBERT, DeBERTa-v3) share: `FamilyConfig`, what
a config answers the rest of the library, and `FamilyEncoder`, the functional encoder around a
family's layers and equations. `BertEncoder` is the BERT-shaped families' (models/encoder.py)."""

import dataclasses
import json
import numbers

import keras

from keras_bert_lib.layers.multi_head_self_attention import output_rows
from keras_bert_lib.runtime.entry_points import EntryPoints

INPUTS = ("token_ids", "segment_ids", "padding_mask")


class FamilyConfig:
    """A family config's answers to what the library asks of any encoder's shape: no pooler, no
    segment table, no shared blocks (one `layer_{i}` per layer), the JSON it saves; the subclass is
    a frozen dataclass with its fields, `family`, `num_parameters` and HuggingFace's JSON.

    Example:
        ```python
        from keras_bert_lib import PRESETS
        config = PRESETS["modernbert_base"].replace(num_hidden_layers=2)
        config.with_pooler, config.block_name(1), config.max_sequence_length   # (False, 'layer_1', 8192)
        ```
    """

    with_pooler = False
    type_vocab_size = 0
    embedding_size = None
    inner_group_num = 1

    @property
    def num_groups(self) -> int:
        """Distinct blocks: one per layer."""
        return self.num_hidden_layers

    def block_name(self, group: int, inner: int = 0) -> str:
        """The weight-path prefix of block `group`: `layer_{group}`."""
        return f"layer_{group}"

    @property
    def max_sequence_length(self) -> int:
        """The longest input trained, which inputs are checked against."""
        return self.max_position_embeddings

    def replace(self, **overrides):
        """A copy with some fields changed (validated again); unknown names fail."""
        unknown = set(overrides) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise ValueError(f"Unknown {type(self).__name__} fields: {sorted(unknown)}.")
        return dataclasses.replace(self, **overrides)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps({**self.to_dict(), "family": self.family}, indent=2, sort_keys=True)


class FamilyEncoder(EntryPoints, keras.Model):
    """A family's encoder as one functional keras.Model, with `BertEncoder`'s contract: inputs
    `token_ids`, `segment_ids`, `padding_mask` (int32 (B, T)); outputs `sequence_output` and, when
    asked, `hidden_states` and `attention_probs`; `call(..., output_range=k)` for the first k
    positions of the last block; `config`, `token_embedding`, `layers_dtype_policy`.

    A subclass names its `config_class` and gives two static methods: `_family_layers(config, dtype)`, its
    layers by name (one of them `token_embedding`), and `_family_forward(parts, inputs, training,
    output_range, output_hidden_states, output_attentions)`, its equations over them.

    Example:
        ```python
        from keras_bert_lib.encoder_families import FamilyEncoder
        from keras_bert_lib.modernbert import ModernBertEncoder
        assert issubclass(ModernBertEncoder, FamilyEncoder)
        ```
    """

    config_class = None

    def __init__(self, config=None, output_hidden_states=False, output_attentions=False, dtype=None, **kwargs):
        # The shape is declared once, in the family's config: its fields come as keyword arguments
        # (what get_config saves) or as `config`; "family" is what `config.to_json` adds.
        fields = {name: kwargs.pop(name) for name in self.config_class.__dataclass_fields__ if name in kwargs}
        kwargs.pop("family", None)
        config = (config or self.config_class()).replace(**fields) if fields or config is None else config
        parts = self._family_layers(config, dtype)
        inputs = {name: keras.Input((None,), dtype="int32", name=name) for name in INPUTS}
        outputs = self._family_forward(parts, inputs, output_hidden_states=output_hidden_states,
                                output_attentions=output_attentions)
        super().__init__(inputs=inputs, outputs=outputs, dtype=dtype, **kwargs)
        self.config = config
        self.layers_dtype_policy = parts["token_embedding"].dtype_policy
        self.output_hidden_states = output_hidden_states
        self.output_attentions = output_attentions
        self.token_embedding = parts["token_embedding"]
        object.__setattr__(self, "_parts", parts)  # `call(output_range=...)` wires them again; tracked above

    def call(self, inputs, training=None, mask=None, output_range=None):
        """The functional graph; with `output_range` (an int), the last block's first
        `output_range` positions (a [CLS] classifier's `output_range=1`), as `BertEncoder`."""
        if output_range is None:
            return super().call(inputs, training=training, mask=mask)
        if isinstance(output_range, bool) or not isinstance(output_range, numbers.Integral) or output_range < 1:
            raise ValueError(f"output_range={output_range!r}: pass how many first positions the last block computes, "
                             "an int of at least 1 (1: [CLS] alone), or None for every position.")
        if self.output_hidden_states or self.output_attentions:
            raise ValueError("output_range computes the last block's first positions only, so it cannot give every "
                             "layer's hidden states or attention probabilities; call the encoder without it.")
        return self._family_forward(self._parts, inputs, training=training, output_range=output_range)

    def compute_output_spec(self, inputs, training=None, mask=None, output_range=None):
        if output_range is None:
            return super().compute_output_spec(inputs, training=training, mask=mask)
        batch, length = inputs["token_ids"].shape
        rows = output_rows(length, output_range)
        dtype = self.layers_dtype_policy.compute_dtype
        return {"sequence_output": keras.KerasTensor((batch, rows, self.config.hidden_size), dtype=dtype)}

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
