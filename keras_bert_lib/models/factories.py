"""One short factory per preset: `bert_base()` builds BERT-Base with random weights."""

import os

import keras

from keras_bert_lib.checkpoints import read_checkpoint
from keras_bert_lib.checkpoints.hub import known_shape
from keras_bert_lib.config import PRESETS, EncoderConfig
from keras_bert_lib.models.checkpoint_loading import ENCODER_OPTIONS, build_from_checkpoint
from keras_bert_lib.models.encoder import encoder_class


def build_encoder(config: EncoderConfig, *, weights=None, **options) -> keras.Model:
    """The encoder for `config`: a `BertEncoder` for an `EncoderConfig`, a `ModernBertEncoder` for a
    `ModernBertConfig`; `options` are `output_hidden_states`, `output_attentions`, `dtype`, `name`.

    With `weights=path` the checkpoint there (Google TF1 or HuggingFace, see `load_checkpoint`)
    must have `config`'s shape, or this fails naming each differing field; the checkpoint's
    activation, LayerNorm epsilon and dropouts are kept, as they define the function it learned.

    Example:
        ```python
        from keras_bert_lib import PRESETS
        from keras_bert_lib.models import build_encoder
        encoder = build_encoder(PRESETS["bert_tiny"].replace(num_hidden_layers=1))
        ```
    """
    if weights is not None:
        return build_from_checkpoint(read_checkpoint(weights), overrides=options, expected=config)
    return encoder_class(config)(config, **options)


def _factory(preset, weights, overrides):
    fields = {k: v for k, v in overrides.items() if k not in ENCODER_OPTIONS}
    config = PRESETS[preset].replace(**fields)
    if weights is not None:
        _check_known_shape(preset, config, weights)
        return build_from_checkpoint(read_checkpoint(weights), overrides=overrides, expected=config)
    return encoder_class(config)(config, **{k: v for k, v in overrides.items() if k in ENCODER_OPTIONS})


def bert_tiny(*, weights=None, **overrides) -> keras.Model:
    """BERT-Tiny (Turc et al. 2019): L=2, H=128, A=2, 4.4M parameters.

    `overrides` are `EncoderConfig` fields or `output_hidden_states`, `output_attentions`, `dtype`.

    Example:
        ```python
        from keras_bert_lib import bert_tiny
        encoder = bert_tiny(hidden_dropout_prob=0.0, dtype="mixed_bfloat16")
        ```
    """
    return _factory("bert_tiny", weights, overrides)


def bert_mini(*, weights=None, **overrides) -> keras.Model:
    """BERT-Mini (Turc et al. 2019): L=4, H=256, A=4, 11.2M parameters.

    Example:
        ```python
        from keras_bert_lib import bert_mini
        encoder = bert_mini()
        ```
    """
    return _factory("bert_mini", weights, overrides)


def bert_small(*, weights=None, **overrides) -> keras.Model:
    """BERT-Small (Turc et al. 2019): L=4, H=512, A=8, 28.8M parameters.

    Example:
        ```python
        from keras_bert_lib import bert_small
        encoder = bert_small()
        ```
    """
    return _factory("bert_small", weights, overrides)


def bert_medium(*, weights=None, **overrides) -> keras.Model:
    """BERT-Medium (Turc et al. 2019): L=8, H=512, A=8, 41.4M parameters.

    Example:
        ```python
        from keras_bert_lib import bert_medium
        encoder = bert_medium(num_hidden_layers=2)
        ```
    """
    return _factory("bert_medium", weights, overrides)


def bert_base(*, weights=None, **overrides) -> keras.Model:
    """BERT-Base, uncased: L=12, H=768, A=12, 110M parameters.

    Example:
        ```python
        from keras_bert_lib import bert_base
        encoder = bert_base(num_hidden_layers=2)
        ```
    """
    return _factory("bert_base", weights, overrides)


def bert_large(*, weights=None, **overrides) -> keras.Model:
    """BERT-Large, uncased: L=24, H=1024, A=16, 335M parameters.

    Example:
        ```python
        from keras_bert_lib import PRESETS, bert_large
        print(f"{PRESETS['bert_large'].num_parameters:,}")   # 335,141,888, from the shape alone
        # a narrow copy to try:
        encoder = bert_large(num_hidden_layers=1, hidden_size=256, num_attention_heads=4, intermediate_size=1024)
        ```
    """
    return _factory("bert_large", weights, overrides)


def albert_base(*, weights=None, **overrides) -> keras.Model:
    """ALBERT-Base v2: L=12 sharing one block, H=768, A=12, E=128, 11.7M parameters.

    Example:
        ```python
        from keras_bert_lib import albert_base
        encoder = albert_base(num_hidden_layers=2)   # the shared block twice; albert_base(): 12 times
        ```
    """
    return _factory("albert_base", weights, overrides)


def albert_large(*, weights=None, **overrides) -> keras.Model:
    """ALBERT-Large v2: L=24 sharing one block, H=1024, A=16, E=128, 17.7M parameters.

    Example:
        ```python
        from keras_bert_lib import albert_large
        encoder = albert_large(num_hidden_layers=2)   # the shared block twice; albert_large(): 24 times
        ```
    """
    return _factory("albert_large", weights, overrides)


def albert_xlarge(*, weights=None, **overrides) -> keras.Model:
    """ALBERT-xLarge v2: L=24 sharing one block, H=2048, A=16, E=128, 58.7M parameters.

    Example:
        ```python
        from keras_bert_lib import PRESETS, albert_xlarge
        print(f"{PRESETS['albert_xlarge'].num_parameters:,}")   # 58,724,864, from the shape alone
        # a narrow copy to try:
        encoder = albert_xlarge(num_hidden_layers=2, hidden_size=256, num_attention_heads=4, intermediate_size=1024)
        ```
    """
    return _factory("albert_xlarge", weights, overrides)


def albert_xxlarge(*, weights=None, **overrides) -> keras.Model:
    """ALBERT-xxLarge v2: L=12 sharing one block, H=4096, A=64, E=128, 223M parameters.

    Example:
        ```python
        from keras_bert_lib import PRESETS, albert_xxlarge
        print(f"{PRESETS['albert_xxlarge'].num_parameters:,}")   # 222,595,584, from the shape alone
        # a narrow copy to try:
        encoder = albert_xxlarge(num_hidden_layers=2, hidden_size=256, num_attention_heads=4, intermediate_size=1024)
        ```
    """
    return _factory("albert_xxlarge", weights, overrides)


def distilbert_base(*, weights=None, **overrides) -> keras.Model:
    """DistilBERT-Base: L=6, H=768, A=12, 66.4M parameters; no segments, no pooler.

    It takes `segment_ids` like every encoder (so a BERT preprocessor's output feeds it) and
    ignores them; its outputs have no `pooled_output`.

    Example:
        ```python
        from keras_bert_lib import distilbert_base
        encoder = distilbert_base(num_hidden_layers=2)
        ```
    """
    return _factory("distilbert_base", weights, overrides)


def roberta_base(*, weights=None, **overrides) -> keras.Model:
    """RoBERTa-Base: L=12, H=768, A=12, vocab 50265, positions from 2; 125M parameters.

    Example:
        ```python
        from keras_bert_lib import roberta_base
        encoder = roberta_base(num_hidden_layers=2)
        ```
    """
    return _factory("roberta_base", weights, overrides)


def electra_small(*, weights=None, **overrides) -> keras.Model:
    """ELECTRA-Small's discriminator (Clark et al. 2020): L=12, H=256, A=4, E=128 projected to H,
    no pooler; 13.5M parameters.

    Example:
        ```python
        from keras_bert_lib import electra_small
        encoder = electra_small(num_hidden_layers=2)
        encoder.get_layer("embedding_projection").kernel.shape   # (128, 256)
        ```
    """
    return _factory("electra_small", weights, overrides)


def electra_base(*, weights=None, **overrides) -> keras.Model:
    """ELECTRA-Base's discriminator: BERT-Base's encoder without a pooler; 109M parameters.

    Example:
        ```python
        from keras_bert_lib import electra_base
        encoder = electra_base(num_hidden_layers=2)
        sorted(encoder.output)   # ['sequence_output']
        ```
    """
    return _factory("electra_base", weights, overrides)


def electra_large(*, weights=None, **overrides) -> keras.Model:
    """ELECTRA-Large's discriminator: BERT-Large's encoder without a pooler; 334M parameters.

    Example:
        ```python
        from keras_bert_lib import electra_large
        encoder = electra_large(num_hidden_layers=1)
        ```
    """
    return _factory("electra_large", weights, overrides)


def modernbert_base(*, weights=None, **overrides) -> keras.Model:
    """ModernBERT-base (Warner et al. 2024): L=22, H=768, A=12, GeGLU I=1,152, global attention every
    third layer and a 128-token local window elsewhere, 8,192 positions; 149M parameters.

    `overrides` are `ModernBertConfig` fields or `output_hidden_states`, `output_attentions`, `dtype`.

    Example:
        ```python
        from keras_bert_lib import modernbert_base
        encoder = modernbert_base(num_hidden_layers=3)   # global, local, local
        ```
    """
    return _factory("modernbert_base", weights, overrides)


def modernbert_large(*, weights=None, **overrides) -> keras.Model:
    """ModernBERT-large: L=28, H=1,024, A=16, GeGLU I=2,624; 395M parameters.

    Example:
        ```python
        from keras_bert_lib import modernbert_large
        encoder = modernbert_large(num_hidden_layers=1)
        ```
    """
    return _factory("modernbert_large", weights, overrides)


def deberta_v3_xsmall(*, weights=None, **overrides) -> keras.Model:
    """DeBERTa-v3-xsmall (He et al. 2023): L=12, H=384, A=6; 71M parameters (49M of them the 128k-token table).

    `overrides` are `DebertaV3Config` fields or `output_hidden_states`, `output_attentions`, `dtype`.

    Example:
        ```python
        from keras_bert_lib.models import deberta_v3_xsmall
        encoder = deberta_v3_xsmall(num_hidden_layers=1, vocab_size=1000)
        ```
    """
    return _factory("deberta_v3_xsmall", weights, overrides)


def deberta_v3_small(*, weights=None, **overrides) -> keras.Model:
    """DeBERTa-v3-small: L=6, H=768, A=12; 141M parameters.

    Example:
        ```python
        from keras_bert_lib.models import deberta_v3_small
        encoder = deberta_v3_small(num_hidden_layers=1, vocab_size=1000)
        ```
    """
    return _factory("deberta_v3_small", weights, overrides)


def deberta_v3_base(*, weights=None, **overrides) -> keras.Model:
    """DeBERTa-v3-base: L=12, H=768, A=12, disentangled attention over 2 × 256 log-bucketed
    relative positions; 184M parameters.

    Example:
        ```python
        from keras_bert_lib.models import deberta_v3_base
        encoder = deberta_v3_base(num_hidden_layers=2, vocab_size=1000)
        ```
    """
    return _factory("deberta_v3_base", weights, overrides)


def deberta_v3_large(*, weights=None, **overrides) -> keras.Model:
    """DeBERTa-v3-large: L=24, H=1,024, A=16; 434M parameters.

    Example:
        ```python
        from keras_bert_lib.models import deberta_v3_large
        encoder = deberta_v3_large(num_hidden_layers=1, vocab_size=1000)
        ```
    """
    return _factory("deberta_v3_large", weights, overrides)


def _shape(config):
    family = config.family or ("albert" if config.embedding_size is not None else "bert")
    return family, config.num_hidden_layers, config.hidden_size, config.num_attention_heads


def _check_known_shape(preset, config, weights):
    """Refuses, before anything is downloaded, a checkpoint name whose shape (known from the name:
    `checkpoints.hub.known_shape`) is not this factory's, naming the factory that fits."""
    known = known_shape(weights) if isinstance(weights, str) and not os.path.exists(weights) else None
    if known is None or known[0] in ("distilbert", "roberta") or known == _shape(config):
        return  # DistilBERT and RoBERTa names: their own factories check the rest when the config is read
    fits = [name for name, c in PRESETS.items() if _shape(c) == known]
    use = f"{fits[0]}(weights={weights!r})" if fits else f"load_checkpoint({weights!r})"
    family, layers, width, heads = known
    kind = "an ALBERT" if family == "albert" else "a BERT"
    raise ValueError(f"{weights} is {kind} of {layers} layers, width {width}, {heads} heads; {preset}() builds "
                     f"{config.num_hidden_layers} layers, width {config.hidden_size}: use {use}.")
