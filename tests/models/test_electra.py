"""ELECTRA: the presets count the released discriminators' parameters; a tiny random
ElectraForPreTraining (discriminator) and ElectraForMaskedLM (generator) saved by transformers,
with a factorised embedding (E=8 < H=16), load with transformers' outputs at every real token and
save back to what transformers reads; the folder's tokenizer gives transformers' ids."""

import numpy as np
import pytest

import keras_bert_lib as kb
from keras_bert_lib import PRESETS, EncoderConfig, load_checkpoint, load_preprocessor, save_checkpoint
from keras_bert_lib.pretraining import BertPretrainer, ElectraDiscriminator
from tests import harness
from tests.models.test_encoder import INPUTS
from tests.models.test_encoder import MASK as ENCODER_MASK

torch = pytest.importorskip("torch", reason="torch is in the [test] extra")
transformers = pytest.importorskip("transformers", reason="transformers is in the [test] extra")

# transformers' counts for the published discriminator configs (ElectraModel: no pooler, no head)
PUBLISHED = {"electra_small": 13_483_008, "electra_base": 108_891_648, "electra_large": 334_092_288}
TINY = dict(vocab_size=60, embedding_size=8, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
            intermediate_size=32, max_position_embeddings=20)
MASK = harness.right_padded([9, 6, 3])
POSITIONS = np.array([[1, 4, 8], [0, 2, 5], [1, 2, 2]], "int32")


SPEC = harness.LayerSpec(
    cls=ElectraDiscriminator,
    init_kwargs=lambda dtype=None: dict(encoder=kb.electra_small(
        vocab_size=50, embedding_size=8, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=16, type_vocab_size=3, dtype=dtype)),
    inputs=INPUTS, padding_mask=ENCODER_MASK,
    expected_output_shape={"rtd_logits": (2, 6)},
    expected_num_trainable_weights=5 + 2 + 2 * 16 + 4,  # embeddings, projection, 2 blocks, head
    output_dtype="float32", stochastic=True, dict_input=True, fresh_process=False,
)


@pytest.mark.slow
@pytest.mark.parametrize("check", harness.checks_for(SPEC), ids=lambda c: c.__name__)
def test_contract(check):
    check(SPEC)


@pytest.mark.parametrize("preset", PUBLISHED)
def test_each_preset_counts_the_published_parameters(preset):
    assert PRESETS[preset].num_parameters == PUBLISHED[preset]


def test_the_built_encoder_counts_what_its_config_says_and_has_no_pooler():
    encoder = kb.electra_small(num_hidden_layers=2)
    assert encoder.count_params() == encoder.config.num_parameters
    assert sorted(encoder.output) == ["sequence_output"]
    assert encoder.config.hf_model_type == "electra"


def _randomised(cls, **config):
    torch.manual_seed(0)
    model = cls(transformers.ElectraConfig(**TINY, **config)).eval()
    with torch.no_grad():
        for p in model.parameters():  # LayerNorm gains and biases too, so every tensor matters
            p.normal_(0.0, 0.3)
    return model


def _batch():
    rng = np.random.default_rng(0)
    ids = rng.integers(3, 60, (3, 9)).astype("int32") * MASK
    segments = (np.arange(9)[None] >= 5).repeat(3, 0).astype("int32") * MASK
    return {"token_ids": ids, "segment_ids": segments, "padding_mask": MASK}


def _hf(model, batch):
    with torch.no_grad():
        out = model(input_ids=torch.from_numpy(batch["token_ids"].astype("int64")),
                    attention_mask=torch.from_numpy(batch["padding_mask"].astype("int64")),
                    token_type_ids=torch.from_numpy(batch["segment_ids"].astype("int64")), output_hidden_states=True)
    return out.hidden_states[-1].numpy(), (out.logits.numpy() if hasattr(out, "logits") else None)


def _gap(a, b, real=MASK.astype(bool)):
    return float(np.max(np.abs(np.asarray(a)[real] - np.asarray(b)[real])))


@pytest.mark.slow
def test_a_transformers_discriminator_loads_and_saves_back_with_equal_outputs(tmp_path):
    hf = _randomised(transformers.ElectraForPreTraining)
    hf.save_pretrained(tmp_path / "hf")
    batch = _batch()
    states, logits = _hf(hf, batch)
    ours = load_checkpoint(tmp_path / "hf", with_heads=True)
    assert isinstance(ours, ElectraDiscriminator) and ours.encoder.config.embedding_size == 8
    assert _gap(ours.encoder.predict_on_batch(batch)["sequence_output"], states) <= 1e-4
    assert _gap(ours.predict_on_batch(batch)["rtd_logits"], logits) <= 1e-3
    assert _gap(load_checkpoint(tmp_path / "hf").predict_on_batch(batch)["sequence_output"], states) <= 1e-4

    save_checkpoint(ours, tmp_path / "ours")
    again = transformers.ElectraForPreTraining.from_pretrained(tmp_path / "ours").eval()
    assert _gap(_hf(again, batch)[1], logits) <= 1e-5
    save_checkpoint(ours.encoder, tmp_path / "encoder")
    encoder = transformers.ElectraModel.from_pretrained(tmp_path / "encoder").eval()
    assert _gap(_hf(encoder, batch)[0], states) <= 1e-5


def test_a_transformers_generator_loads_with_its_masked_lm_head(tmp_path):
    hf = _randomised(transformers.ElectraForMaskedLM)
    hf.save_pretrained(tmp_path / "hf")
    batch = _batch()
    _, logits = _hf(hf, batch)
    ours = load_checkpoint(tmp_path / "hf", with_heads=True)
    assert isinstance(ours, BertPretrainer) and ours.sentence_task is None
    got = ours({**batch, "masked_positions": POSITIONS}, training=False)["mlm_logits"]
    want = np.take_along_axis(logits, POSITIONS[:, :, None], axis=1)
    assert np.max(np.abs(np.asarray(got) - want)) <= 1e-3

    save_checkpoint(ours, tmp_path / "ours")
    again = transformers.ElectraForMaskedLM.from_pretrained(tmp_path / "ours").eval()
    assert np.max(np.abs(_hf(again, batch)[1] - logits)) <= 1e-5


def test_the_folders_wordpiece_tokenizer_gives_transformers_ids(tmp_path):
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "film", "was", "good", "bad", "##s", "play",
             "!", ",", "a"]
    (tmp_path / "vocab.txt").write_text("\n".join(words) + "\n")
    hf = transformers.ElectraTokenizerFast.from_pretrained(tmp_path, do_lower_case=True)
    hf.save_pretrained(tmp_path)  # tokenizer.json and tokenizer_config.json beside vocab.txt, as on the Hub
    _randomised(transformers.ElectraModel).save_pretrained(tmp_path)
    texts = ["The film was GOOD!", "plays, a bad film", "unknown words here"]
    preprocessor = load_preprocessor(tmp_path, sequence_length=12)
    got = preprocessor(np.array(texts, dtype=object))
    want = hf(texts, padding="longest", return_tensors="np")
    width = want["input_ids"].shape[1]  # ours pads to the longest rounded up: the rest is padding
    np.testing.assert_array_equal(got["token_ids"].numpy()[:, :width], want["input_ids"])
    np.testing.assert_array_equal(got["padding_mask"].numpy()[:, :width], want["attention_mask"])
    assert not got["padding_mask"].numpy()[:, width:].any()


def test_electra_is_refused_where_its_names_do_not_exist(tmp_path):
    config = PRESETS["electra_small"]
    assert EncoderConfig.from_hf_json(config.to_hf_json()) == config
    assert EncoderConfig.from_hf_json(PRESETS["electra_base"].to_hf_json()) == PRESETS["electra_base"]
    with pytest.raises(ValueError, match="save in the HuggingFace format"):
        config.replace(hidden_act="gelu_tanh").to_google_json()
    with pytest.raises(ValueError, match="without a pooler"):
        config.replace(with_pooler=True)
    with pytest.raises(ValueError, match="family='bart' is not one of"):
        EncoderConfig(family="bart")


@pytest.mark.slow
def test_an_electra_classifier_exports_to_every_format_with_keras_outputs(tmp_path):
    """SavedModel, TFLite, ONNX and OpenVINO from an ELECTRA classifier with a factorised
    embedding: the parity table's cosine to Keras and label agreement."""
    from keras_bert_lib import TextClassifier
    from keras_bert_lib.export import export_all, parity_report
    from keras_bert_lib.export.signatures import check_batch

    classifier = TextClassifier(kb.electra_small(**TINY, type_vocab_size=2), num_classes=3)
    exported = export_all(classifier, tmp_path, formats=["saved_model", "tflite", "onnx", "openvino"])
    rows = parity_report(classifier, exported, check_batch(classifier))
    assert [r["artefact"] for r in rows][1:] == ["saved_model", "tflite", "onnx", "openvino"], rows
    assert all(r["cosine"] > 0.999 and r["agreement"] == 1.0 for r in rows[1:]), rows
