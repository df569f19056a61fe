"""DeBERTa-v3: the presets count the published models' parameters; the log buckets are
transformers'; a tiny random DebertaV2ForMaskedLM saved by transformers, with 8 buckets each way
on 50 tokens (so the log buckets matter), loads with transformers' outputs at every real token,
with its MLM head, and saves back to what transformers reads; the folder's tokenizer (its
tokenizer.json, or an spm.model alone) gives transformers' ids."""

import json

import numpy as np
import pytest

from keras_bert_lib import PRESETS, load_checkpoint, load_preprocessor, save_checkpoint
from keras_bert_lib.config import config_from_hf_json
from keras_bert_lib.deberta import DebertaBlock, DebertaV3Encoder, RelativePositionTable
from keras_bert_lib.layers import DisentangledSelfAttention
from keras_bert_lib.layers.disentangled_self_attention import relative_position_buckets
from keras_bert_lib.models import deberta_v3_base
from keras_bert_lib.pretraining import BertPretrainer
from tests import harness
from tests.text import families

torch = pytest.importorskip("torch", reason="torch is in the [test] extra")
transformers = pytest.importorskip("transformers", reason="transformers is in the [test] extra")

# transformers' counts for microsoft/deberta-v3-* (DebertaV2Model)
PUBLISHED = {"deberta_v3_xsmall": 70_682_112, "deberta_v3_small": 141_304_320, "deberta_v3_base": 183_831_552,
             "deberta_v3_large": 434_012_160}
TINY = dict(vocab_size=60, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
            max_position_embeddings=64, position_buckets=4, max_relative_positions=16)
INPUTS = {"token_ids": harness.token_ids(batch=2, length=9, vocab=60), "segment_ids": np.zeros((2, 9), "int32")}
X = harness.hidden_states(2, 9, 8)
TABLE = harness.hidden_states(1, 8, 8)[0]
SPECS = {
    "attention": harness.LayerSpec(
        cls=DisentangledSelfAttention, init_kwargs=dict(num_heads=2, position_buckets=4, max_relative_positions=8,
                                                        attention_probs_dropout_prob=0.2),
        inputs={"x": X, "relative_embeddings": TABLE}, padding_mask=harness.right_padded([9, 5]),
        expected_output_shape=(2, 9, 8), expected_num_trainable_weights=8, stochastic=True),
    "block": harness.LayerSpec(
        cls=DebertaBlock, init_kwargs=dict(num_heads=2, intermediate_size=12, position_buckets=4,
                                           max_relative_positions=8),
        inputs={"x": X, "relative_embeddings": TABLE}, padding_mask=harness.right_padded([9, 5]),
        expected_output_shape=(2, 9, 8), expected_num_trainable_weights=16, stochastic=True),
    "table": harness.LayerSpec(
        cls=RelativePositionTable, init_kwargs=dict(rows=8, hidden_size=4), inputs={"anything": X},
        expected_output_shape=(8, 4), expected_num_trainable_weights=3),
    "encoder": harness.LayerSpec(
        cls=DebertaV3Encoder, init_kwargs=TINY, inputs=INPUTS, padding_mask=harness.right_padded([9, 5]),
        expected_output_shape={"sequence_output": (2, 9, 16)}, expected_num_trainable_weights=3 + 3 + 2 * 16,
        stochastic=True, dict_input=True, fresh_process=True),
}
CASES = [(n, c) for n, s in SPECS.items() for c in harness.checks_for(s)]


@pytest.mark.slow
@pytest.mark.parametrize("name,check", CASES, ids=[f"{n}-{c.__name__}" for n, c in CASES])
def test_contract(name, check):
    check(SPECS[name])


@pytest.mark.parametrize("preset", PUBLISHED)
def test_each_preset_counts_the_published_parameters(preset):
    assert PRESETS[preset].num_parameters == PUBLISHED[preset]
    hf = transformers.DebertaV2Config(**json.loads(PRESETS[preset].to_hf_json()))
    with torch.device("meta"):
        assert sum(p.numel() for p in transformers.DebertaV2Model(hf).parameters()) == PUBLISHED[preset]


def test_the_built_encoder_counts_what_its_config_says():
    encoder = deberta_v3_base(num_hidden_layers=2, hidden_size=64, num_attention_heads=2, intermediate_size=128)
    assert encoder.count_params() == encoder.config.num_parameters
    assert sorted(encoder.output) == ["sequence_output"]


# (8, 4, 8) and (140, 64, 128) reach a distance of reach − 1, where the log ratio is exactly 1
@pytest.mark.parametrize("length,buckets,reach", [(600, 256, 512), (50, 8, 32), (8, 4, 8), (140, 64, 128)])
def test_the_log_buckets_are_transformers(length, buckets, reach):
    from transformers.models.deberta_v2.modeling_deberta_v2 import make_log_bucket_position

    relative = torch.arange(length)[:, None] - torch.arange(length)[None, :]
    theirs = (make_log_bucket_position(relative, buckets, reach) + buckets).clamp(0, 2 * buckets - 1).numpy()
    np.testing.assert_array_equal(np.asarray(relative_position_buckets(length, buckets, reach)), theirs)


def _batch(length=50):
    rng = np.random.default_rng(0)
    mask = harness.right_padded([length, 31, 4])
    return {"token_ids": rng.integers(4, 60, (3, length)).astype("int32") * mask,
            "segment_ids": np.zeros((3, length), "int32"), "padding_mask": mask}


def _hf(model, batch):
    with torch.no_grad():
        out = model(input_ids=torch.from_numpy(batch["token_ids"].astype("int64")),
                    attention_mask=torch.from_numpy(batch["padding_mask"].astype("int64")), output_hidden_states=True)
    return out.hidden_states[-1].numpy(), out.logits.numpy()


def _gap(a, b, mask):
    real = mask.astype(bool)
    return float(np.max(np.abs(np.asarray(a)[real] - np.asarray(b)[real])))


def test_a_transformers_masked_lm_loads_with_equal_outputs_and_saves_back(tmp_path):
    hf = families.deberta_model(60, masked_lm=True)
    hf.save_pretrained(tmp_path / "hf")
    batch = _batch()
    states, logits = _hf(hf, batch)
    ours = load_checkpoint(tmp_path / "hf", with_heads=True)
    assert isinstance(ours, BertPretrainer) and isinstance(ours.encoder, DebertaV3Encoder)
    assert _gap(ours.encoder(batch, training=False)["sequence_output"], states, batch["padding_mask"]) <= 1e-4
    positions = np.tile(np.arange(50, dtype="int32"), (3, 1))
    got = ours({**batch, "masked_positions": positions}, training=False)["mlm_logits"]
    assert _gap(got, logits, batch["padding_mask"]) <= 1e-3

    save_checkpoint(ours, tmp_path / "ours")
    assert json.loads((tmp_path / "ours" / "config.json").read_text())["architectures"] == ["DebertaV2ForMaskedLM"]
    again = transformers.DebertaV2ForMaskedLM.from_pretrained(tmp_path / "ours").eval()
    assert _gap(_hf(again, batch)[1], logits, batch["padding_mask"]) <= 1e-5
    cls = np.asarray(ours.encoder(batch, output_range=1)["sequence_output"])[:, 0]
    assert np.max(np.abs(cls - states[:, 0])) <= 1e-4


@pytest.mark.parametrize("files", ["tokenizer.json", "spm.model alone"])
def test_the_folders_tokenizer_gives_transformers_ids(files, tmp_path):
    tokenizer = families.deberta_tokenizer(tmp_path)
    if files == "tokenizer.json":
        tokenizer.save_pretrained(str(tmp_path))
    else:  # what the Hub's microsoft/deberta-v3-* hold: the model file and tokenizer_config.json
        (tmp_path / "spm.model").write_bytes(families.sentencepiece_model("unigram", albert=True))
        (tmp_path / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "DebertaV2Tokenizer",
                                                                   "do_lower_case": False}))
    texts = families.training_lines()[:60] + families.WORLD + ["two  spaces\tand a tab", "ends in spaces  ",
                                                              "Cafe\u0301 au lait"]
    got = load_preprocessor(tmp_path, sequence_length=64)(np.array(texts, dtype=object))
    want = tokenizer(texts, padding="longest", truncation=True, max_length=64, return_tensors="np")
    width = want["input_ids"].shape[1]
    real = want["attention_mask"].astype(bool)
    np.testing.assert_array_equal(got["token_ids"].numpy()[:, :width][real], want["input_ids"][real])
    np.testing.assert_array_equal(got["padding_mask"].numpy()[:, :width], want["attention_mask"])


def test_config_json_in_and_out_and_what_is_refused():
    config = PRESETS["deberta_v3_base"]
    assert config_from_hf_json(json.loads(config.to_hf_json())) == config
    hub = {"model_type": "deberta-v2", "relative_attention": True, "pos_att_type": "p2c|c2p", "position_buckets": 256,
           "max_relative_positions": -1, "norm_rel_ebd": "layer_norm", "share_att_key": True,
           "position_biased_input": False, "type_vocab_size": 0, "layer_norm_eps": 1e-7, "vocab_size": 128100}
    assert config_from_hf_json(hub) == config
    with pytest.raises(ValueError, match="conv_kernel_size=3; this library builds DeBERTa-v3's"):
        config_from_hf_json({**hub, "conv_kernel_size": 3})
    with pytest.raises(ValueError, match="no position_buckets"):
        config_from_hf_json({k: v for k, v in hub.items() if k != "position_buckets"})


@pytest.mark.slow
def test_masked_lm_pretraining_runs_and_exports_what_transformers_reads(tmp_path, monkeypatch, capsys, tiny_corpus):
    """`keras-bert pretrain --preset deberta_v3_base --sentence-task none` on a DeBERTa-v3-base
    shrunk in this test: export/ is a DebertaV2ForMaskedLM whose logits equal the pretrainer's;
    replaced-token detection is refused for it with one line."""
    from keras_bert_lib.cli import main

    monkeypatch.setitem(PRESETS, "deberta_v3_base", PRESETS["deberta_v3_base"].replace(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=48, position_buckets=8,
        max_relative_positions=32))
    run = tmp_path / "run"
    flags = ["--corpus", str(tiny_corpus), "--vocab-size", "300", "--max-seq-length", "48", "--max-predictions", "8",
             "--dupe-factor", "2", "--steps", "4", "--steps-per-epoch", "2", "--warmup-steps", "1", "--batch-size", "8",
             "--no-jit-compile", "--output-dir", str(run)]
    assert main(["pretrain", "--preset", "deberta_v3_base", "--sentence-task", "none", *flags]) == 0
    assert "MLM accuracy" in capsys.readouterr().out
    ours = load_checkpoint(run / "export", with_heads=True)
    theirs = transformers.DebertaV2ForMaskedLM.from_pretrained(run / "export").eval()
    batch = {k: np.asarray(v) for k, v in load_preprocessor(run / "export", sequence_length=24)(
        np.array(["A test of the export."], dtype=object)).items()}
    positions = np.arange(batch["token_ids"].shape[1], dtype="int32")[None]  # padded to the longest, rounded up
    got = ours.predict_on_batch({**batch, "masked_positions": positions})["mlm_logits"]
    assert _gap(got, _hf(theirs, batch)[1], batch["padding_mask"]) <= 1e-3
    assert main(["pretrain", "--preset", "deberta_v3_base", "--objective", "rtd", "--sentence-task", "none",
                 *flags[:-1], str(tmp_path / "rtd")]) == 2
    assert "is not (ALBERT, RoBERTa, DistilBERT, ModernBERT or DeBERTa-v3)" in capsys.readouterr().err


@pytest.mark.slow
def test_a_deberta_classifier_exports_to_every_format_with_keras_outputs(tmp_path):
    """SavedModel, TFLite, ONNX and OpenVINO from a DeBERTa-v3 classifier whose 4 buckets each way
    are fewer than the check batch's 16 tokens: the parity table's cosine to Keras and label agreement."""
    from keras_bert_lib import TextClassifier
    from keras_bert_lib.export import export_all, parity_report
    from keras_bert_lib.export.signatures import check_batch

    classifier = TextClassifier(deberta_v3_base(**TINY), num_classes=3)
    exported = export_all(classifier, tmp_path, formats=["saved_model", "tflite", "onnx", "openvino"])
    rows = parity_report(classifier, exported, check_batch(classifier))
    assert [r["artefact"] for r in rows][1:] == ["saved_model", "tflite", "onnx", "openvino"], rows
    assert all(r["cosine"] > 0.999 and r["agreement"] == 1.0 for r in rows[1:]), rows


def test_a_sequence_classification_folder_loads_its_encoder_and_names_the_head_it_leaves_out(tmp_path, caplog):
    """DebertaV2ForSequenceClassification: its context pooler and classifier are a fine-tuning head."""
    hf = families.deberta_model(60, masked_lm=False)
    classifier = transformers.DebertaV2ForSequenceClassification(hf.config).eval()
    classifier.deberta.load_state_dict(hf.state_dict())
    classifier.save_pretrained(tmp_path)
    batch = _batch()
    with caplog.at_level("WARNING"):
        encoder = load_checkpoint(tmp_path)
    assert "pooler.dense.weight" in caplog.text and "classifier.weight" in caplog.text
    with torch.no_grad():
        states = hf(input_ids=torch.from_numpy(batch["token_ids"].astype("int64")),
                    attention_mask=torch.from_numpy(batch["padding_mask"].astype("int64"))).last_hidden_state.numpy()
    assert _gap(encoder(batch, training=False)["sequence_output"], states, batch["padding_mask"]) <= 1e-4
