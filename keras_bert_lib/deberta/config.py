"""DebertaV3Config: the shape of a DeBERTa-v3 encoder, its presets, and HuggingFace's config.json in and out."""

import dataclasses
import json

from keras_bert_lib.encoder_families import FamilyConfig

_HF_ACT = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "relu": "relu"}
# config.json keys whose DeBERTa-v3 value is the only one this library builds, with what it means.
_HF_FIXED = {"relative_attention": (True, "relative attention"), "position_biased_input": (False, "no position table"),
             "share_att_key": (True, "position keys shared with the content projections"),
             "norm_rel_ebd": ("layer_norm", "a normalised relative table"), "type_vocab_size": (0, "no segments"),
             "conv_kernel_size": (0, "no convolution (DeBERTa-v2's xlarge has one)")}


@dataclasses.dataclass(frozen=True)
class DebertaV3Config(FamilyConfig):
    """The hyper-parameters of a DeBERTa-v3 encoder (He et al., 2023).

    What changes from BERT: no absolute position table and no segments; each attention score adds
    content-to-position and position-to-content terms read from one relative-position table
    (2 × `position_buckets` rows, log-bucketed beyond ±buckets/2, normalised by a LayerNorm and
    projected by each layer's own query and key matrices). The blocks are BERT's, post-LN. Field
    names are `EncoderConfig`'s where the meaning is the same, else HuggingFace's.

    Args:
        vocab_size: int. Vocabulary size (128,100: the SentencePiece model's 128,000 and [MASK]…).
        hidden_size: int. Model width (H).
        num_hidden_layers: int. Blocks (L).
        num_attention_heads: int. Heads per block (A); must divide H.
        intermediate_size: int. Feed-forward width.
        hidden_act: str. "gelu" (exact erf), "gelu_tanh" or "relu".
        hidden_dropout_prob: float. Dropout on the embeddings, the relative table and every residual branch.
        attention_probs_dropout_prob: float. Dropout on attention probabilities.
        max_position_embeddings: int. The longest input trained (512), and where the last log
            bucket ends unless `max_relative_positions` says.
        position_buckets: int. Relative buckets per direction (256).
        max_relative_positions: int. The distance the log buckets reach (512).
        initializer_range: float. Stddev of the truncated-normal initializer.
        layer_norm_eps: float. LayerNorm epsilon (1e-7).
        pad_token_id: int. The tokenizer's padding id (written back to config.json).

    Example:
        ```python
        from keras_bert_lib import PRESETS
        config = PRESETS["deberta_v3_base"]
        config.num_parameters, config.position_buckets   # (183831552, 256)
        ```
    """

    vocab_size: int = 128100
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    position_buckets: int = 256
    max_relative_positions: int = 512
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-7
    pad_token_id: int = 0

    family = "deberta-v3"

    def __post_init__(self):
        for name in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                     "max_position_embeddings", "position_buckets", "max_relative_positions"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name}={value!r} must be a positive integer.")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(f"hidden_size={self.hidden_size} is not divisible by num_attention_heads="
                             f"{self.num_attention_heads}.")
        if self.position_buckets < 2 or self.max_relative_positions <= self.position_buckets // 2:
            raise ValueError(f"position_buckets={self.position_buckets} and max_relative_positions="
                             f"{self.max_relative_positions}: the log buckets need buckets ≥ 2 reaching past "
                             "buckets/2.")
        if self.hidden_act not in _HF_ACT.values():
            raise ValueError(f"hidden_act={self.hidden_act!r} is not one of {sorted(set(_HF_ACT.values()))}.")
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"{name}={getattr(self, name)} must be in [0, 1).")

    @property
    def hf_model_type(self) -> str:
        return "deberta-v2"  # transformers' one model type for DeBERTa-v2 and v3

    @property
    def num_parameters(self) -> int:
        """V·H + 2H (embeddings and their norm), 2·buckets·H + 2H (the relative table and its norm), and
        per block BERT's 4(H² + H) + 2H + (H·I + I) + (I·H + H) + 2H. Equals `count_params()` (tested).

        Example:
            ```python
            from keras_bert_lib import PRESETS
            assert PRESETS["deberta_v3_large"].num_parameters == 434_012_160
            ```
        """
        h, i = self.hidden_size, self.intermediate_size
        block = 4 * (h * h + h) + 2 * h + (h * i + i) + (i * h + h) + 2 * h
        return self.vocab_size * h + 2 * h + 2 * self.position_buckets * h + 2 * h + self.num_hidden_layers * block

    @classmethod
    def from_hf_json(cls, data: dict) -> "DebertaV3Config":
        """Reads HuggingFace's `config.json` of model_type deberta-v2 in DeBERTa-v3's form (a dict)."""
        for key, (value, meaning) in _HF_FIXED.items():
            if data.get(key, value) != value:
                raise ValueError(f"DeBERTa config.json has {key}={data[key]!r}; this library builds DeBERTa-v3's "
                                 f"{key}={value!r} ({meaning}).")
        kinds = data.get("pos_att_type") or []
        kinds = kinds.split("|") if isinstance(kinds, str) else kinds
        if sorted(k.strip() for k in kinds) != ["c2p", "p2c"]:
            raise ValueError(f"DeBERTa config.json has pos_att_type={data.get('pos_att_type')!r}; DeBERTa-v3's "
                             "['p2c', 'c2p'] (both position terms) is the one built.")
        if data.get("embedding_size", data.get("hidden_size", cls.hidden_size)) != data.get("hidden_size",
                                                                                             cls.hidden_size):
            raise ValueError("DeBERTa config.json has an embedding_size other than hidden_size; DeBERTa-v3 has none.")
        if data.get("position_buckets", -1) < 1:
            raise ValueError("DeBERTa config.json has no position_buckets: that is DeBERTa (v1/v2) without log "
                             "buckets; DeBERTa-v3's 256 is the one built.")
        act = data.get("hidden_act", "gelu")
        if act not in _HF_ACT:
            raise ValueError(f"DeBERTa hidden_act={act!r} is not one of {sorted(_HF_ACT)}.")
        positions = data.get("max_position_embeddings", cls.max_position_embeddings)
        relative = data.get("max_relative_positions", -1)
        return cls(
            vocab_size=data.get("vocab_size", cls.vocab_size), hidden_size=data.get("hidden_size", cls.hidden_size),
            num_hidden_layers=data.get("num_hidden_layers", cls.num_hidden_layers),
            num_attention_heads=data.get("num_attention_heads", cls.num_attention_heads),
            intermediate_size=data.get("intermediate_size", cls.intermediate_size), hidden_act=_HF_ACT[act],
            hidden_dropout_prob=data.get("hidden_dropout_prob", 0.1),
            attention_probs_dropout_prob=data.get("attention_probs_dropout_prob", 0.1),
            max_position_embeddings=positions, position_buckets=data["position_buckets"],
            max_relative_positions=relative if relative > 0 else positions,
            initializer_range=data.get("initializer_range", cls.initializer_range),
            layer_norm_eps=data.get("layer_norm_eps", cls.layer_norm_eps), pad_token_id=data.get("pad_token_id", 0))

    def to_hf_json(self) -> str:
        """HuggingFace's `config.json` (model_type deberta-v2, DeBERTa-v3's settings)."""
        act = {"gelu": "gelu", "gelu_tanh": "gelu_new", "relu": "relu"}[self.hidden_act]
        data = {**{k: v for k, (v, _) in _HF_FIXED.items()}, "model_type": "deberta-v2",
                "vocab_size": self.vocab_size, "hidden_size": self.hidden_size,
                "num_hidden_layers": self.num_hidden_layers, "num_attention_heads": self.num_attention_heads,
                "intermediate_size": self.intermediate_size, "hidden_act": act,
                "hidden_dropout_prob": self.hidden_dropout_prob,
                "attention_probs_dropout_prob": self.attention_probs_dropout_prob,
                "max_position_embeddings": self.max_position_embeddings, "position_buckets": self.position_buckets,
                "max_relative_positions": self.max_relative_positions, "pos_att_type": ["p2c", "c2p"],
                "initializer_range": self.initializer_range, "layer_norm_eps": self.layer_norm_eps,
                "pad_token_id": self.pad_token_id, "legacy": True}
        return json.dumps(data, indent=2, sort_keys=True)


def _v3(layers, hidden, heads):
    return DebertaV3Config(num_hidden_layers=layers, hidden_size=hidden, num_attention_heads=heads,
                           intermediate_size=4 * hidden)


# microsoft/deberta-v3-{xsmall,small,base,large}: transformers' counts for their configs.
DEBERTA_V3_PRESETS = {
    "deberta_v3_xsmall": _v3(12, 384, 6),  # 70,682,112
    "deberta_v3_small": _v3(6, 768, 12),  # 141,304,320
    "deberta_v3_base": _v3(12, 768, 12),  # 183,831,552
    "deberta_v3_large": _v3(24, 1024, 16),  # 434,012,160
}
