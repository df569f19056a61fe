"""EncoderConfig: the shape of every BERT-family encoder, its presets, and JSON in/out.

Field names are Google's `bert_config.json` names verbatim, so importing a Google config is
near-identity and checkpoint name maps read like a table.
"""

import dataclasses
import json
import os

from keras_bert_lib.deberta.config import DEBERTA_V3_PRESETS, DebertaV3Config
from keras_bert_lib.file_checks import read_json
from keras_bert_lib.modernbert.config import MODERNBERT_PRESETS, ModernBertConfig

# Our activation names. "gelu" is the exact erf form (Devlin et al.; HuggingFace's "gelu");
# "gelu_tanh" is the tanh approximation (Google's modeling.py "gelu", HuggingFace's "gelu_new").
ACTIVATIONS = ("gelu", "gelu_tanh", "relu")

# Google's bert_config.json / albert_config.json name -> ours. Google's code computes "gelu"
# with the tanh approximation (modeling.py, both BERT and ALBERT).
_GOOGLE_ACT = {"gelu": "gelu_tanh", "relu": "relu"}
# HuggingFace's hidden_act name -> ours.
_HF_ACT = {
    "gelu": "gelu",
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "gelu_fast": "gelu_tanh",
    "relu": "relu",
}
# Google config keys that carry no architecture (or only the value we implement).
_GOOGLE_IGNORED = {
    "directionality": None,
    "pooler_fc_size": None,
    "pooler_num_attention_heads": None,
    "pooler_num_fc_layers": None,
    "pooler_size_per_head": None,
    "pooler_type": None,
    "net_structure_type": 0,
    "down_scale_factor": 1,
    "gap_size": 0,
    "num_memory_blocks": 0,
}


# Families named by `EncoderConfig.family` (None: named by the shape).
FAMILIES = (None, "electra")
# HuggingFace model types that are another's architecture: RoBERTa's with its own vocabulary.
HF_SAME_ARCHITECTURE = {"xlm-roberta": "roberta", "camembert": "roberta"}


@dataclasses.dataclass(frozen=True)
class EncoderConfig:
    """The hyper-parameters of one encoder: BERT, ALBERT, DistilBERT or RoBERTa shape.

    Every field is named as in Google's `bert_config.json`; ALBERT adds `embedding_size`,
    `num_hidden_groups` and `inner_group_num`. Four fields have no Google name: RoBERTa's
    `position_offset` (padding_idx + 1 = 2), `with_pooler` (False for DistilBERT),
    `norm_first` (pre-LN blocks) and `family`, which names the family where the shape alone
    does not: ELECTRA's encoder is BERT's without a pooler (with ALBERT's E → H projection
    where E < H, but no sharing), and its checkpoints use their own names.

    Args:
        vocab_size: int. WordPiece vocabulary size (V).
        hidden_size: int. Model width (H).
        num_hidden_layers: int. Number of Transformer blocks (L).
        num_attention_heads: int. Attention heads per block (A); must divide H.
        intermediate_size: int. Feed-forward width (I, 4H in BERT).
        hidden_act: str. "gelu" (exact erf), "gelu_tanh" or "relu".
        hidden_dropout_prob: float. Dropout on embeddings and every residual branch.
        attention_probs_dropout_prob: float. Dropout on attention probabilities.
        max_position_embeddings: int. Rows of the position table (P).
        type_vocab_size: int. Rows of the segment table; 0 means no segment embedding.
        initializer_range: float. Stddev of the truncated-normal initializer.
        layer_norm_eps: float. LayerNorm epsilon.
        embedding_size: int or None. ALBERT's factorised width E; None means E = H.
        num_hidden_groups: int or None. ALBERT's groups of shared blocks; None means L (no sharing).
        inner_group_num: int. Blocks per ALBERT group.
        position_offset: int. First position id (RoBERTa: 2).
        with_pooler: bool. Whether the encoder has the dense+tanh pooler on [CLS].
        norm_first: bool. Pre-LN blocks instead of BERT's post-LN.
        family: None (the family follows from the shape: bert, albert, distilbert or roberta)
            or "electra".

    Example:
        ```python
        from keras_bert_lib import PRESETS, EncoderConfig
        config = PRESETS["bert_base"].replace(num_hidden_layers=6)
        assert EncoderConfig.from_json(config.to_json()) == config
        ```
    """

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    embedding_size: int | None = None
    num_hidden_groups: int | None = None
    inner_group_num: int = 1
    position_offset: int = 0
    with_pooler: bool = True
    norm_first: bool = False
    family: str | None = None

    def __post_init__(self):
        for name in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                     "intermediate_size", "max_position_embeddings", "inner_group_num"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}={value!r} must be a positive integer.")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"hidden_size={self.hidden_size} is not divisible by num_attention_heads="
                f"{self.num_attention_heads}; choose heads that divide it (BERT uses H/64)."
            )
        if self.hidden_act not in ACTIVATIONS:
            raise ValueError(f"hidden_act={self.hidden_act!r} is not one of {ACTIVATIONS}.")
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"{name}={getattr(self, name)} must be in [0, 1).")
        if self.type_vocab_size < 0 or self.position_offset < 0:
            raise ValueError("type_vocab_size and position_offset must be >= 0.")
        if self.position_offset >= self.max_position_embeddings:
            raise ValueError(
                f"position_offset={self.position_offset} leaves no positions in "
                f"max_position_embeddings={self.max_position_embeddings}."
            )
        if self.family not in FAMILIES:
            raise ValueError(f"family={self.family!r} is not one of {FAMILIES}.")
        if self.family == "electra" and (self.with_pooler or self.position_offset or self.norm_first
                                         or self.num_hidden_groups is not None or self.inner_group_num != 1):
            raise ValueError("family='electra' is BERT's encoder without a pooler, sharing or pre-LN: set "
                             "with_pooler=False, position_offset=0, norm_first=False, num_hidden_groups=None.")
        groups = self.num_groups
        if groups < 1 or self.num_hidden_layers % groups:
            raise ValueError(
                f"num_hidden_groups={self.num_hidden_groups} must divide num_hidden_layers="
                f"{self.num_hidden_layers}."
            )

    @property
    def num_groups(self) -> int:
        """Distinct groups of blocks: L for BERT, `num_hidden_groups` for ALBERT."""
        return self.num_hidden_layers if self.num_hidden_groups is None else self.num_hidden_groups

    def block_name(self, group: int, inner: int = 0) -> str:
        """The weight-path prefix of ALBERT group `group`'s block `inner`: `layer_{i}` for BERT
        (one block per layer), `group_{g}` for ALBERT's shared groups, `group_{g}_inner_{j}`."""
        if self.num_groups == self.num_hidden_layers and self.inner_group_num == 1:
            return f"layer_{group}"
        if self.inner_group_num == 1:
            return f"group_{group}"
        return f"group_{group}_inner_{inner}"

    @property
    def num_parameters(self) -> int:
        """The encoder's parameter count, from its shape alone (no weights are made).

        Embeddings V·E + P·E + T·E + 2E (+ ALBERT's E·H + H projection), each distinct block
        4(H² + H) + 2H + (H·I + I) + (I·H + H) + 2H, a final LayerNorm 2H when pre-LN, and the
        pooler H² + H. It gives the released checkpoints' counts (the README's preset table) and
        equals `count_params()` of the built encoder (tested on every structural variant).

        Example:
            ```python
            from keras_bert_lib import PRESETS
            assert PRESETS["bert_base"].num_parameters == 109_482_240
            ```
        """
        e, h, i = self.embedding_size or self.hidden_size, self.hidden_size, self.intermediate_size
        embeddings = (self.vocab_size + self.max_position_embeddings + self.type_vocab_size) * e + 2 * e
        projection = e * h + h if e != h else 0
        block = 4 * (h * h + h) + 2 * h + (h * i + i) + (i * h + h) + 2 * h
        blocks = self.num_groups * self.inner_group_num * block
        return (embeddings + projection + blocks + (2 * h if self.norm_first else 0)
                + (h * h + h if self.with_pooler else 0))

    @property
    def max_sequence_length(self) -> int:
        """Longest input the position table takes (512 for BERT and RoBERTa)."""
        return self.max_position_embeddings - self.position_offset

    def replace(self, **overrides) -> "EncoderConfig":
        """A copy with some fields changed (validated again); unknown names fail."""
        unknown = set(overrides) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise ValueError(f"Unknown EncoderConfig fields: {sorted(unknown)}.")
        return dataclasses.replace(self, **overrides)

    # --- our own JSON ---------------------------------------------------------------------
    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text_or_path: str) -> "EncoderConfig":
        """Reads what `to_json` wrote (a JSON string or a file path)."""
        return cls(**_read_json(text_or_path))

    # --- Google's bert_config.json / albert_config.json -----------------------------------
    @classmethod
    def from_google_json(cls, text_or_path) -> "EncoderConfig":
        """Reads Google's `bert_config.json` or `albert_config.json` (a path, string or dict)."""
        data = dict(_read_json(text_or_path))
        for key, required in _GOOGLE_IGNORED.items():
            value = data.pop(key, required)
            if required is not None and value != required:
                raise ValueError(f"Google config has {key}={value!r}; only {required!r} is supported.")
        act = data.pop("hidden_act", "gelu")
        if act not in _GOOGLE_ACT:
            raise ValueError(f"Google config hidden_act={act!r} is not one of {sorted(_GOOGLE_ACT)}.")
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise ValueError(f"Google config has keys this library does not know: {sorted(unknown)}.")
        if "embedding_size" in data and "num_hidden_groups" not in data:
            data["num_hidden_groups"] = 1
        return cls(hidden_act=_GOOGLE_ACT[act], **data)

    def to_google_json(self) -> str:
        """Writes Google's config format; refuses what Google's code would compute differently."""
        if self.hidden_act == "gelu":
            raise ValueError(
                "Google's modeling.py computes 'gelu' with the tanh approximation, so an exact-erf "
                "model would change its outputs there; use config.replace(hidden_act='gelu_tanh') "
                "or save in the HuggingFace format."
            )
        if (self.position_offset or not self.with_pooler or self.norm_first or not self.type_vocab_size
                or self.family):
            raise ValueError("Google's format holds BERT and ALBERT shapes only (no RoBERTa, DistilBERT or "
                             "ELECTRA); save in the HuggingFace format.")
        data = self.to_dict()
        for key in ("position_offset", "with_pooler", "norm_first", "family"):
            data.pop(key)
        data["hidden_act"] = "gelu" if self.hidden_act == "gelu_tanh" else self.hidden_act
        if self.embedding_size is None:
            for key in ("embedding_size", "num_hidden_groups", "inner_group_num"):
                data.pop(key)
        return json.dumps(data, indent=2, sort_keys=True)

    # --- HuggingFace config.json ----------------------------------------------------------
    @classmethod
    def from_hf_json(cls, text_or_path) -> "EncoderConfig":
        """Reads a HuggingFace `config.json` of model_type bert, albert, distilbert, roberta or electra
        (XLM-R and CamemBERT are RoBERTa's architecture with other vocabularies)."""
        data = _read_json(text_or_path)
        model_type = HF_SAME_ARCHITECTURE.get(data.get("model_type"), data.get("model_type"))
        act_key = "activation" if model_type == "distilbert" else "hidden_act"
        act = data.get(act_key, "gelu")
        if act not in _HF_ACT:
            raise ValueError(f"HF config {act_key}={act!r} is not one of {sorted(_HF_ACT)}.")
        if model_type == "distilbert":
            if data.get("sinusoidal_pos_embds"):
                raise ValueError("DistilBERT with sinusoidal_pos_embds=true is not supported.")
            return cls(
                vocab_size=data["vocab_size"], hidden_size=data["dim"],
                num_hidden_layers=data["n_layers"], num_attention_heads=data["n_heads"],
                intermediate_size=data["hidden_dim"], hidden_act=_HF_ACT[act],
                hidden_dropout_prob=data["dropout"],
                attention_probs_dropout_prob=data["attention_dropout"],
                max_position_embeddings=data["max_position_embeddings"], type_vocab_size=0,
                initializer_range=data["initializer_range"], with_pooler=False,
            )
        if model_type not in ("bert", "albert", "roberta", "electra"):
            raise ValueError(f"HF model_type={model_type!r}: expected bert, albert, distilbert, roberta, "
                             "xlm-roberta, electra, modernbert or deberta-v2 (DeBERTa-v3).")
        if data.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError("Only position_embedding_type='absolute' is supported.")
        fields = {f.name for f in dataclasses.fields(cls)} - {"hidden_act"}
        kwargs = {k: data[k] for k in fields if k in data}
        for key in ("position_offset", "family", "with_pooler", "norm_first"):
            kwargs.pop(key, None)
        if model_type == "electra":  # BERT's encoder, no pooler; the projection only where E < H
            kwargs.pop("num_hidden_groups", None), kwargs.pop("inner_group_num", None)
            if kwargs.get("embedding_size") == kwargs.get("hidden_size", cls.hidden_size):
                kwargs["embedding_size"] = None
            kwargs.update(with_pooler=False, family="electra")
        if model_type == "roberta":
            kwargs["position_offset"] = data.get("pad_token_id", 1) + 1
        if model_type == "albert":
            kwargs.setdefault("num_hidden_groups", 1)
        return cls(hidden_act=_HF_ACT[act], **kwargs)

    def to_hf_json(self) -> str:
        """Writes a HuggingFace `config.json`; the model_type follows from the shape."""
        act = {"gelu": "gelu", "gelu_tanh": "gelu_new", "relu": "relu"}[self.hidden_act]
        model_type = self.hf_model_type
        if model_type == "distilbert":
            data = {
                "vocab_size": self.vocab_size, "dim": self.hidden_size,
                "n_layers": self.num_hidden_layers, "n_heads": self.num_attention_heads,
                "hidden_dim": self.intermediate_size, "activation": act,
                "dropout": self.hidden_dropout_prob,
                "attention_dropout": self.attention_probs_dropout_prob,
                "max_position_embeddings": self.max_position_embeddings,
                "initializer_range": self.initializer_range, "sinusoidal_pos_embds": False,
            }
        else:
            data = self.to_dict()
            for key in ("position_offset", "with_pooler", "norm_first", "family"):
                data.pop(key)
            data["hidden_act"] = act
            if model_type != "albert":
                for key in ("embedding_size", "num_hidden_groups", "inner_group_num"):
                    data.pop(key)
            if model_type == "electra":
                data["embedding_size"] = self.embedding_size or self.hidden_size
            if model_type == "roberta":
                data["pad_token_id"] = self.position_offset - 1
        data["model_type"] = model_type
        return json.dumps(data, indent=2, sort_keys=True)

    @property
    def hf_model_type(self) -> str:
        """The HuggingFace model_type this shape corresponds to (or `family`, where it is set)."""
        if self.family:
            return self.family
        if self.norm_first:
            raise ValueError("HuggingFace's BERT family has no pre-LN model; norm_first=True has no HF type.")
        if not self.type_vocab_size and not self.with_pooler:
            return "distilbert"
        if self.position_offset:
            return "roberta"
        if self.embedding_size is not None or self.num_groups != self.num_hidden_layers:
            return "albert"
        return "bert"


def config_from_hf_json(text_or_path):
    """The config a HuggingFace `config.json` describes: `ModernBertConfig` for model_type
    modernbert, `DebertaV3Config` for deberta-v2 (DeBERTa-v3's settings), else `EncoderConfig`
    (which refuses the types it does not build).

    Example:
        ```python
        from keras_bert_lib.config import config_from_hf_json
        type(config_from_hf_json({"model_type": "modernbert"})).__name__   # 'ModernBertConfig'
        ```
    """
    data = _read_json(text_or_path)
    family = {"modernbert": ModernBertConfig, "deberta-v2": DebertaV3Config}.get(data.get("model_type"))
    return (family or EncoderConfig).from_hf_json(data)


def _read_json(text_or_path) -> dict:
    if isinstance(text_or_path, dict):
        return text_or_path
    if isinstance(text_or_path, (str, os.PathLike)) and os.path.isfile(text_or_path):
        return read_json(text_or_path)
    return json.loads(text_or_path)


def _bert(layers, hidden):
    # Turc et al. 2019 compact BERTs: heads = H/64, intermediate = 4H.
    return EncoderConfig(num_hidden_layers=layers, hidden_size=hidden,
                         num_attention_heads=hidden // 64, intermediate_size=4 * hidden)


def _albert(layers, hidden, heads):
    # ALBERT v2 releases: E=128, one shared group, no dropout, tanh GELU ("gelu_new").
    return EncoderConfig(vocab_size=30000, num_hidden_layers=layers, hidden_size=hidden,
                         num_attention_heads=heads, intermediate_size=4 * hidden,
                         hidden_act="gelu_tanh", hidden_dropout_prob=0.0,
                         attention_probs_dropout_prob=0.0, embedding_size=128,
                         num_hidden_groups=1)


# Parameter counts (encoder + pooler, no pre-training heads) of the released checkpoints; the
# families with their own blocks bring their own config class (ModernBERT: `ModernBertConfig`).
PRESETS: dict = {
    "bert_tiny": _bert(2, 128),  # 4,385,920
    "bert_mini": _bert(4, 256),  # 11,170,560
    "bert_small": _bert(4, 512),  # 28,763,648
    "bert_medium": _bert(8, 512),  # 41,373,184
    "bert_base": _bert(12, 768),  # 109,482,240
    "bert_large": _bert(24, 1024),  # 335,141,888
    "albert_base": _albert(12, 768, 12),  # 11,683,584
    "albert_large": _albert(24, 1024, 16),  # 17,683,968
    "albert_xlarge": _albert(24, 2048, 16),  # 58,724,864
    "albert_xxlarge": _albert(12, 4096, 64),  # 222,595,584
    "distilbert_base": EncoderConfig(num_hidden_layers=6, type_vocab_size=0, with_pooler=False),  # 66,362,880
    "roberta_base": EncoderConfig(vocab_size=50265, max_position_embeddings=514, type_vocab_size=1,
                                  layer_norm_eps=1e-5, position_offset=2),  # 124,645,632
    # ELECTRA's discriminators (Clark et al. 2020): BERT's encoder, no pooler; Small factorises
    # its embedding (E=128 < H=256) as ALBERT does, without sharing blocks.
    "electra_small": EncoderConfig(hidden_size=256, num_attention_heads=4, intermediate_size=1024,
                                   embedding_size=128, with_pooler=False, family="electra"),  # 13,483,008
    "electra_base": EncoderConfig(with_pooler=False, family="electra"),  # 108,891,648
    "electra_large": _bert(24, 1024).replace(with_pooler=False, family="electra"),  # 334,092,288
    **MODERNBERT_PRESETS,  # modernbert_base 149,014,272, modernbert_large 394,781,696
    **DEBERTA_V3_PRESETS,  # deberta_v3_xsmall 70,682,112, small 141,304,320, base 183,831,552, large 434,012,160
}
