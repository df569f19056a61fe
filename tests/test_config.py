"""EncoderConfig: validation, presets, and Google/HuggingFace JSON in and out."""

import json

import pytest

from keras_bert_lib import PRESETS, EncoderConfig

# Google's released uncased_L-12_H-768_A-12/bert_config.json, written out.
GOOGLE_BERT_BASE = {
    "attention_probs_dropout_prob": 0.1, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
    "hidden_size": 768, "initializer_range": 0.02, "intermediate_size": 3072,
    "max_position_embeddings": 512, "num_attention_heads": 12, "num_hidden_layers": 12,
    "type_vocab_size": 2, "vocab_size": 30522,
}
# Google's albert_base v2 albert_config.json.
GOOGLE_ALBERT_BASE = {
    "attention_probs_dropout_prob": 0, "hidden_act": "gelu", "hidden_dropout_prob": 0,
    "embedding_size": 128, "hidden_size": 768, "initializer_range": 0.02,
    "intermediate_size": 3072, "max_position_embeddings": 512, "num_attention_heads": 12,
    "num_hidden_layers": 12, "num_hidden_groups": 1, "net_structure_type": 0, "gap_size": 0,
    "num_memory_blocks": 0, "inner_group_num": 1, "down_scale_factor": 1, "type_vocab_size": 2,
    "vocab_size": 30000,
}
# HuggingFace configs as the hub publishes them (the keys that matter).
HF = {
    "bert": {"model_type": "bert", "vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12,
             "num_attention_heads": 12, "intermediate_size": 3072, "hidden_act": "gelu",
             "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
             "max_position_embeddings": 512, "type_vocab_size": 2, "initializer_range": 0.02,
             "layer_norm_eps": 1e-12, "pad_token_id": 0, "position_embedding_type": "absolute"},
    "roberta": {"model_type": "roberta", "vocab_size": 50265, "hidden_size": 768,
                "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072,
                "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
                "max_position_embeddings": 514, "type_vocab_size": 1, "initializer_range": 0.02,
                "layer_norm_eps": 1e-05, "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2},
    "distilbert": {"model_type": "distilbert", "vocab_size": 30522, "dim": 768, "n_layers": 6,
                   "n_heads": 12, "hidden_dim": 3072, "activation": "gelu", "dropout": 0.1,
                   "attention_dropout": 0.1, "max_position_embeddings": 512,
                   "initializer_range": 0.02, "sinusoidal_pos_embds": False},
    "albert": {"model_type": "albert", "vocab_size": 30000, "embedding_size": 128, "hidden_size": 768,
               "num_hidden_layers": 12, "num_hidden_groups": 1, "num_attention_heads": 12,
               "intermediate_size": 3072, "inner_group_num": 1, "hidden_act": "gelu_new",
               "hidden_dropout_prob": 0, "attention_probs_dropout_prob": 0,
               "max_position_embeddings": 512, "type_vocab_size": 2, "initializer_range": 0.02,
               "layer_norm_eps": 1e-12},
}


def test_google_bert_base_config_is_the_preset_with_googles_tanh_gelu():
    assert EncoderConfig.from_google_json(json.dumps(GOOGLE_BERT_BASE)) == PRESETS["bert_base"].replace(
        hidden_act="gelu_tanh")


def test_google_albert_config_is_the_albert_preset():
    assert EncoderConfig.from_google_json(GOOGLE_ALBERT_BASE) == PRESETS["albert_base"]


def test_google_json_round_trip(tmp_path):
    config = PRESETS["albert_large"]
    path = tmp_path / "albert_config.json"
    path.write_text(config.to_google_json())
    assert EncoderConfig.from_google_json(path) == config
    assert json.loads(PRESETS["bert_tiny"].replace(hidden_act="gelu_tanh").to_google_json())["hidden_act"] == "gelu"


def test_exact_gelu_is_not_written_as_googles_tanh_gelu():
    with pytest.raises(ValueError, match="tanh approximation"):
        PRESETS["bert_base"].to_google_json()


@pytest.mark.parametrize("model_type,preset", [("bert", "bert_base"), ("roberta", "roberta_base"),
                                               ("distilbert", "distilbert_base"), ("albert", "albert_base")])
def test_hf_configs_are_the_presets_and_round_trip(model_type, preset):
    config = EncoderConfig.from_hf_json(HF[model_type])
    assert config == PRESETS[preset]
    assert config.hf_model_type == model_type
    assert EncoderConfig.from_hf_json(config.to_hf_json()) == config


def test_own_json_round_trip():
    config = PRESETS["bert_mini"].replace(norm_first=True, position_offset=2)
    assert EncoderConfig.from_json(config.to_json()) == config


@pytest.mark.parametrize("fields,message", [
    (dict(hidden_size=768, num_attention_heads=10), "hidden_size=768 is not divisible by num_attention_heads=10"),
    (dict(hidden_act="swish"), "hidden_act='swish' is not one of"),
    (dict(num_hidden_layers=12, num_hidden_groups=5), "num_hidden_groups=5 must divide num_hidden_layers=12"),
    (dict(hidden_dropout_prob=1.0), "hidden_dropout_prob=1.0 must be in"),
    (dict(vocab_size=0), "vocab_size=0 must be a positive integer"),
])
def test_invalid_configs_name_the_field(fields, message):
    with pytest.raises(ValueError, match=message):
        EncoderConfig(**fields)


def test_replace_refuses_unknown_fields():
    with pytest.raises(ValueError, match="Unknown EncoderConfig fields: \\['hidden_dim'\\]"):
        PRESETS["bert_base"].replace(hidden_dim=10)


def test_foreign_json_with_unsupported_architecture_is_refused():
    with pytest.raises(ValueError, match="net_structure_type=1"):
        EncoderConfig.from_google_json({**GOOGLE_ALBERT_BASE, "net_structure_type": 1})
    with pytest.raises(ValueError, match="model_type='gpt2'"):
        EncoderConfig.from_hf_json({"model_type": "gpt2"})
    with pytest.raises(ValueError, match="keys this library does not know: \\['rotary'\\]"):
        EncoderConfig.from_google_json({**GOOGLE_BERT_BASE, "rotary": True})
