"""ModernBertConfig: the shape of a ModernBERT encoder, its presets, and HuggingFace's config.json in and out."""

import dataclasses
import json

from keras_bert_lib.encoder_families import FamilyConfig

# HuggingFace's hidden_activation name -> ours.
_HF_ACT = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "relu": "relu"}
# config.json keys whose published value is the only one this library computes.
_HF_FIXED = {"attention_bias": False, "mlp_bias": False, "norm_bias": False, "decoder_bias": True,
             "tie_word_embeddings": True, "classifier_bias": False}


@dataclasses.dataclass(frozen=True)
class ModernBertConfig(FamilyConfig):
    """The hyper-parameters of a ModernBERT encoder (Warner et al., 2024).

    What changes from BERT: no position table (rotary positions, two bases), no segment
    embedding, bias-free pre-norm blocks with a final norm, a GeGLU feed-forward, and attention
    that is global in every `global_attn_every_n_layers`-th layer (from layer 0) and local
    elsewhere, each position seeing `local_attention / 2` positions either side. Field names follow
    `EncoderConfig` where the meaning is the same (`layer_norm_eps` is HuggingFace's `norm_eps`),
    else HuggingFace's.

    Args:
        vocab_size: int. Vocabulary size (50,368: the OLMo BPE padded to a multiple of 64).
        hidden_size: int. Model width (H).
        num_hidden_layers: int. Blocks (L).
        num_attention_heads: int. Heads per block (A); must divide H into an even head size.
        intermediate_size: int. The GeGLU's inner width I (its input product is H → 2I).
        hidden_act: str. The GeGLU's and the MLM head's activation ("gelu": exact erf).
        max_position_embeddings: int. The longest input trained (8,192); rotary positions have
            no table, so this is a limit the inputs are checked against, not a weight.
        initializer_range: float. Stddev of the truncated-normal initializer.
        layer_norm_eps: float. LayerNorm epsilon (bias-free LayerNorms).
        local_attention: int. The local window's full width (128: 64 positions either side).
        global_attn_every_n_layers: int. Layers 0, n, 2n, … attend globally.
        global_rope_theta: float. Rotary base of the global layers (160,000).
        local_rope_theta: float. Rotary base of the local layers (10,000).
        embedding_dropout: float. Dropout after the embeddings' norm.
        attention_dropout: float. Dropout on attention probabilities and the attention output.
        mlp_dropout: float. Dropout inside the GeGLU.
        pad_token_id: int. The tokenizer's padding id (written back to config.json).

    Example:
        ```python
        from keras_bert_lib import PRESETS
        config = PRESETS["modernbert_base"]
        config.num_parameters, config.layer_is_global(0), config.layer_is_global(1)   # (149014272, True, False)
        ```
    """

    vocab_size: int = 50368
    hidden_size: int = 768
    num_hidden_layers: int = 22
    num_attention_heads: int = 12
    intermediate_size: int = 1152
    hidden_act: str = "gelu"
    max_position_embeddings: int = 8192
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-5
    local_attention: int = 128
    global_attn_every_n_layers: int = 3
    global_rope_theta: float = 160_000.0
    local_rope_theta: float = 10_000.0
    embedding_dropout: float = 0.0
    attention_dropout: float = 0.0
    mlp_dropout: float = 0.0
    pad_token_id: int = 50283

    family = "modernbert"

    def __post_init__(self):
        for name in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                     "max_position_embeddings", "local_attention", "global_attn_every_n_layers"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name}={value!r} must be a positive integer.")
        if self.hidden_size % self.num_attention_heads or (self.hidden_size // self.num_attention_heads) % 2:
            raise ValueError(f"hidden_size={self.hidden_size} must split into num_attention_heads="
                             f"{self.num_attention_heads} heads of an even size (rotary positions turn pairs).")
        if self.local_attention % 2:
            raise ValueError(f"local_attention={self.local_attention} must be even: it is the window's full width, "
                             "half of it either side.")
        if self.hidden_act not in _HF_ACT.values():
            raise ValueError(f"hidden_act={self.hidden_act!r} is not one of {sorted(set(_HF_ACT.values()))}.")
        for name in ("embedding_dropout", "attention_dropout", "mlp_dropout"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"{name}={getattr(self, name)} must be in [0, 1).")

    def layer_is_global(self, layer: int) -> bool:
        """Whether block `layer` attends globally (0, n, 2n, …) rather than in the local window."""
        return layer % self.global_attn_every_n_layers == 0

    @property
    def window(self) -> int:
        """Positions each side a local layer sees: local_attention / 2."""
        return self.local_attention // 2

    @property
    def hf_model_type(self) -> str:
        return "modernbert"

    @property
    def num_parameters(self) -> int:
        """Parameters from the shape alone: V·H + H (embeddings and their norm), per block
        3H² + H² (QKV, output) + 2IH + IH (GeGLU) + 2H (two norms; block 0 has no attention
        norm), and a final norm H. Equals the built encoder's `count_params()` (tested).

        Example:
            ```python
            from keras_bert_lib import PRESETS
            assert PRESETS["modernbert_large"].num_parameters == 394_781_696
            ```
        """
        h, i, layers = self.hidden_size, self.intermediate_size, self.num_hidden_layers
        embeddings = self.vocab_size * h + h
        blocks = layers * (4 * h * h + 3 * i * h + 2 * h) - h  # block 0 has no attention norm
        return embeddings + blocks + h  # + the final norm

    @classmethod
    def from_hf_json(cls, data: dict) -> "ModernBertConfig":
        """Reads HuggingFace's ModernBERT `config.json` (a dict): the transformers 5 form
        (`layer_types`, `rope_parameters`) and the Hub's older one (`global_attn_every_n_layers`,
        `global_rope_theta`, `local_rope_theta`)."""
        for key, value in _HF_FIXED.items():
            if data.get(key, value) != value:
                raise ValueError(f"ModernBERT config.json has {key}={data[key]!r}; the published models (and this "
                                 f"library) use {value!r}.")
        act = data.get("hidden_activation", "gelu")
        if act not in _HF_ACT or data.get("classifier_activation", act) != act:
            raise ValueError(f"ModernBERT hidden_activation={act!r} (classifier_activation="
                             f"{data.get('classifier_activation')!r}): expected one of {sorted(_HF_ACT)}, "
                             "the same for both.")
        layers = data.get("num_hidden_layers", cls.num_hidden_layers)
        every = data.get("global_attn_every_n_layers", cls.global_attn_every_n_layers)
        if data.get("layer_types"):
            types = data["layer_types"]
            globals_ = [i for i, t in enumerate(types) if t == "full_attention"]
            every = globals_[1] if len(globals_) > 1 else max(layers, 1)
            expected = ["full_attention" if i % every == 0 else "sliding_attention" for i in range(layers)]
            if types != expected:
                raise ValueError(f"ModernBERT layer_types {types} are not global every n layers from layer 0, "
                                 "the pattern this library builds.")
        rope = data.get("rope_parameters") or {}
        thetas = {}
        for kind, old, default in (("full_attention", "global_rope_theta", cls.global_rope_theta),
                                   ("sliding_attention", "local_rope_theta", cls.local_rope_theta)):
            params = rope.get(kind) or {}
            if params.get("rope_type", "default") != "default":
                raise ValueError(f"ModernBERT rope_type={params['rope_type']!r} ({kind}): only 'default' is built.")
            thetas[kind] = float(params.get("rope_theta", data.get(old, default)))
        return cls(
            vocab_size=data.get("vocab_size", cls.vocab_size), hidden_size=data.get("hidden_size", cls.hidden_size),
            num_hidden_layers=layers, num_attention_heads=data.get("num_attention_heads", cls.num_attention_heads),
            intermediate_size=data.get("intermediate_size", cls.intermediate_size), hidden_act=_HF_ACT[act],
            max_position_embeddings=data.get("max_position_embeddings", cls.max_position_embeddings),
            initializer_range=data.get("initializer_range", cls.initializer_range),
            layer_norm_eps=data.get("norm_eps", cls.layer_norm_eps),
            local_attention=data.get("local_attention", cls.local_attention), global_attn_every_n_layers=every,
            global_rope_theta=thetas["full_attention"], local_rope_theta=thetas["sliding_attention"],
            embedding_dropout=float(data.get("embedding_dropout", 0.0)),
            attention_dropout=float(data.get("attention_dropout", 0.0)),
            mlp_dropout=float(data.get("mlp_dropout", 0.0)), pad_token_id=data.get("pad_token_id", cls.pad_token_id))

    def to_hf_json(self) -> str:
        """HuggingFace's ModernBERT `config.json` (transformers 5's `layer_types` and `rope_parameters`)."""
        act = {"gelu": "gelu", "gelu_tanh": "gelu_pytorch_tanh", "relu": "relu"}[self.hidden_act]
        data = {
            "model_type": "modernbert", "vocab_size": self.vocab_size, "hidden_size": self.hidden_size,
            "num_hidden_layers": self.num_hidden_layers, "num_attention_heads": self.num_attention_heads,
            "intermediate_size": self.intermediate_size, "hidden_activation": act, "classifier_activation": act,
            "max_position_embeddings": self.max_position_embeddings, "initializer_range": self.initializer_range,
            "norm_eps": self.layer_norm_eps, "local_attention": self.local_attention,
            "global_attn_every_n_layers": self.global_attn_every_n_layers,
            "layer_types": ["full_attention" if self.layer_is_global(i) else "sliding_attention"
                            for i in range(self.num_hidden_layers)],
            "rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": self.global_rope_theta},
                                "sliding_attention": {"rope_type": "default", "rope_theta": self.local_rope_theta}},
            "embedding_dropout": self.embedding_dropout, "attention_dropout": self.attention_dropout,
            "mlp_dropout": self.mlp_dropout, "pad_token_id": self.pad_token_id, **_HF_FIXED,
        }
        return json.dumps(data, indent=2, sort_keys=True)


# ModernBERT's published shapes (answerdotai/ModernBERT-base and -large).
MODERNBERT_PRESETS = {
    "modernbert_base": ModernBertConfig(),  # 149,014,272
    "modernbert_large": ModernBertConfig(hidden_size=1024, num_hidden_layers=28, num_attention_heads=16,
                                         intermediate_size=2624),  # 394,781,696
}
