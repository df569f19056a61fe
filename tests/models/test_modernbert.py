"""ModernBERT: the presets count the published models' parameters; a tiny random
ModernBertForMaskedLM saved by transformers, with a window small enough to matter (4 positions
either side on 40 tokens), loads with transformers' outputs at every real token, with its MLM
head, and saves back to what transformers reads; the folder's tokenizer.json (NFC, byte-level
BPE, [CLS] … [SEP]) gives transformers' ids."""

import json

import numpy as np
import pytest

import keras_bert_lib as kb
from keras_bert_lib import PRESETS, load_checkpoint, load_preprocessor, save_checkpoint
from keras_bert_lib.config import config_from_hf_json
from keras_bert_lib.modernbert import ModernBertBlock, ModernBertConfig, ModernBertEncoder
from keras_bert_lib.pretraining import BertPretrainer
from tests import harness
from tests.text import families

torch = pytest.importorskip("torch", reason="torch is in the [test] extra")
transformers = pytest.importorskip("transformers", reason="transformers is in the [test] extra")

# transformers' counts for answerdotai/ModernBERT-base and -large (ModernBertModel)
PUBLISHED = {"modernbert_base": 149_014_272, "modernbert_large": 394_781_696}
TINY = dict(vocab_size=60, hidden_size=16, num_hidden_layers=4, num_attention_heads=2, intermediate_size=24,
            max_position_embeddings=64, local_attention=4, embedding_dropout=0.1, attention_dropout=0.1,
            mlp_dropout=0.1)
INPUTS = {"token_ids": harness.token_ids(batch=2, length=9, vocab=60), "segment_ids": np.zeros((2, 9), "int32")}
SPECS = {
    "block": harness.LayerSpec(
        cls=ModernBertBlock, init_kwargs=dict(num_heads=2, intermediate_size=12, window=2, attention_dropout=0.2),
        inputs={"x": harness.hidden_states(2, 9, 8)}, padding_mask=harness.right_padded([9, 5]),
        expected_output_shape=(2, 9, 8), expected_num_trainable_weights=6, stochastic=True),
    "encoder": harness.LayerSpec(
        cls=ModernBertEncoder, init_kwargs=TINY, inputs=INPUTS, padding_mask=harness.right_padded([9, 5]),
        expected_output_shape={"sequence_output": (2, 9, 16)}, expected_num_trainable_weights=2 + 4 * 6 - 1 + 1,
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
    hf = transformers.ModernBertConfig(**json.loads(PRESETS[preset].to_hf_json()))
    with torch.device("meta"):  # transformers' own count, no memory
        assert sum(p.numel() for p in transformers.ModernBertModel(hf).parameters()) == PUBLISHED[preset]


def test_the_built_encoder_counts_what_its_config_says_and_alternates_its_attention():
    encoder = kb.modernbert_base(num_hidden_layers=4, hidden_size=32, num_attention_heads=2, intermediate_size=48)
    assert encoder.count_params() == encoder.config.num_parameters
    assert sorted(encoder.output) == ["sequence_output"]
    windows = [encoder.get_layer(f"layer_{i}").attention.window for i in range(4)]
    bases = [encoder.get_layer(f"layer_{i}").attention.rotary_base for i in range(4)]
    assert windows == [None, 64, 64, None] and bases == [160_000.0, 10_000.0, 10_000.0, 160_000.0]


def _batch(length=40):
    rng = np.random.default_rng(0)
    mask = harness.right_padded([length, 23, 5])
    return {"token_ids": rng.integers(4, 60, (3, length)).astype("int32") * mask,
            "segment_ids": np.zeros((3, length), "int32"), "padding_mask": mask}


def _hf(model, batch, attention="eager"):
    model.config._attn_implementation = attention
    with torch.no_grad():
        out = model(input_ids=torch.from_numpy(batch["token_ids"].astype("int64")),
                    attention_mask=torch.from_numpy(batch["padding_mask"].astype("int64")), output_hidden_states=True)
    return out.hidden_states[-1].numpy(), out.logits.numpy()


def _gap(a, b, mask):
    real = mask.astype(bool)
    return float(np.max(np.abs(np.asarray(a)[real] - np.asarray(b)[real])))


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("modernbert")
    hf = families.modernbert_model(60, masked_lm=True)
    hf.save_pretrained(folder / "hf")
    return folder, hf


def test_a_transformers_masked_lm_loads_with_equal_outputs_and_saves_back(checkpoint):
    folder, hf = checkpoint
    batch = _batch()
    states, logits = _hf(hf, batch)
    ours = load_checkpoint(folder / "hf", with_heads=True)
    assert isinstance(ours, BertPretrainer) and isinstance(ours.encoder, ModernBertEncoder)
    assert ours.encoder.config.window == 4 and ours.sentence_task is None
    assert _gap(ours.encoder(batch, training=False)["sequence_output"], states, batch["padding_mask"]) <= 1e-4
    assert _gap(_hf(hf, batch, "sdpa")[0], states, batch["padding_mask"]) <= 1e-4  # transformers agrees with itself
    positions = np.tile(np.arange(40, dtype="int32"), (3, 1))
    got = ours({**batch, "masked_positions": positions}, training=False)["mlm_logits"]
    assert _gap(got, logits, batch["padding_mask"]) <= 1e-3

    save_checkpoint(ours, folder / "ours")
    assert json.loads((folder / "ours" / "config.json").read_text())["architectures"] == ["ModernBertForMaskedLM"]
    again = transformers.ModernBertForMaskedLM.from_pretrained(folder / "ours").eval()
    assert _gap(_hf(again, batch)[1], logits, batch["padding_mask"]) <= 1e-5
    save_checkpoint(ours.encoder, folder / "encoder")
    encoder = transformers.ModernBertModel.from_pretrained(folder / "encoder").eval()
    with torch.no_grad():
        plain = encoder(input_ids=torch.from_numpy(batch["token_ids"].astype("int64")),
                        attention_mask=torch.from_numpy(batch["padding_mask"])).last_hidden_state.numpy()
    assert _gap(plain, states, batch["padding_mask"]) <= 1e-5


def test_the_last_block_for_cls_alone_gives_the_full_graphs_cls(checkpoint):
    encoder = load_checkpoint(checkpoint[0] / "hf")
    batch = _batch()
    full = encoder(batch)["sequence_output"]
    assert np.max(np.abs(np.asarray(encoder(batch, output_range=1)["sequence_output"])[:, 0]
                         - np.asarray(full)[:, 0])) <= 1e-5
    local = kb.modernbert_base(**{**TINY, "num_hidden_layers": 2})  # its last block is local
    assert np.max(np.abs(np.asarray(local(batch, output_range=1)["sequence_output"])[:, 0]
                         - np.asarray(local(batch)["sequence_output"])[:, 0])) <= 1e-5


def test_the_folders_tokenizer_json_gives_transformers_ids(tmp_path):
    tokenizer, _ = families.make_folder(tmp_path, "modernbert")
    texts = families.training_lines()[:40] + families.WORLD + ["Cafe\u0301 e\u0301cole", "two  spaces  here "]
    got = load_preprocessor(tmp_path, sequence_length=64)(np.array(texts, dtype=object))
    want = tokenizer(texts, padding="longest", truncation=True, max_length=64, return_tensors="np")
    width = want["input_ids"].shape[1]
    real = want["attention_mask"].astype(bool)
    np.testing.assert_array_equal(got["token_ids"].numpy()[:, :width][real], want["input_ids"][real])
    np.testing.assert_array_equal(got["padding_mask"].numpy()[:, :width], want["attention_mask"])
    pairs = load_preprocessor(tmp_path, sequence_length=32)((np.array(texts[:8], dtype=object),
                                                             np.array(texts[8:16], dtype=object)))
    want = tokenizer(texts[:8], texts[8:16], padding="max_length", truncation=True, max_length=32, return_tensors="np")
    real = want["attention_mask"].astype(bool)
    np.testing.assert_array_equal(pairs["token_ids"].numpy()[real], want["input_ids"][real])


def test_config_json_in_and_out_and_what_is_refused():
    config = PRESETS["modernbert_base"]
    assert config_from_hf_json(json.loads(config.to_hf_json())) == config
    old_hub_form = {"model_type": "modernbert", "global_attn_every_n_layers": 3, "global_rope_theta": 160000.0,
                    "local_rope_theta": 10000.0, "local_attention": 128, "norm_eps": 1e-5}
    assert config_from_hf_json(old_hub_form) == config
    with pytest.raises(ValueError, match="attention_bias=True; the published models"):
        config_from_hf_json({"model_type": "modernbert", "attention_bias": True})
    with pytest.raises(ValueError, match="not global every n layers"):
        config_from_hf_json({"model_type": "modernbert", "num_hidden_layers": 3,
                             "layer_types": ["sliding_attention", "full_attention", "full_attention"]})
    with pytest.raises(ValueError, match="heads of an even size"):
        ModernBertConfig(hidden_size=6, num_attention_heads=2)
    with pytest.raises(ValueError, match="Google's TF1 format holds BERT and ALBERT only"):
        save_checkpoint(kb.modernbert_base(**TINY), "unused", format="tf1")


@pytest.mark.slow
def test_masked_lm_pretraining_at_30_percent_runs_and_exports_what_transformers_reads(
        tmp_path, monkeypatch, capsys, tiny_corpus):
    """`keras-bert pretrain --preset modernbert_base --sentence-task none` (its recipe's objective)
    on a ModernBERT-base shrunk in this test: a byte-level BPE learned, the MLM line printed, and
    export/ a ModernBertForMaskedLM whose logits equal the pretrainer's."""
    from keras_bert_lib.cli import main

    monkeypatch.setitem(PRESETS, "modernbert_base", PRESETS["modernbert_base"].replace(
        hidden_size=32, num_hidden_layers=3, num_attention_heads=2, intermediate_size=48, local_attention=16))
    run = tmp_path / "run"
    assert main(["pretrain", "--preset", "modernbert_base", "--sentence-task", "none", "--masked-lm-prob", "0.3",
                 "--corpus", str(tiny_corpus), "--vocab-size", "300", "--max-seq-length", "48", "--max-predictions",
                 "15", "--dupe-factor", "2", "--steps", "4", "--steps-per-epoch", "2", "--warmup-steps", "1",
                 "--batch-size", "8", "--no-jit-compile", "--output-dir", str(run)]) == 0
    assert "MLM accuracy" in capsys.readouterr().out
    assert (run / "export" / "vocab.json").is_file() and (run / "export" / "merges.txt").is_file()
    ours = load_checkpoint(run / "export", with_heads=True)
    theirs = transformers.ModernBertForMaskedLM.from_pretrained(run / "export").eval()
    assert theirs.config.pad_token_id == load_preprocessor(run / "export").tokenizer.pad_id
    batch = load_preprocessor(run / "export", sequence_length=24)(np.array(["A test of the export."], dtype=object))
    batch = {k: np.asarray(v) for k, v in batch.items()}
    logits = _hf(theirs, batch)[1]
    positions = np.arange(batch["token_ids"].shape[1], dtype="int32")[None]  # padded to the longest, rounded up
    got = ours.predict_on_batch({**batch, "masked_positions": positions})["mlm_logits"]
    assert _gap(got, logits, batch["padding_mask"]) <= 1e-3


@pytest.mark.slow
def test_a_modernbert_classifier_exports_to_every_format_with_keras_outputs(tmp_path):
    """SavedModel, TFLite, ONNX and OpenVINO from a ModernBERT classifier whose local window (2
    positions either side) is shorter than the check batch: the parity table's cosine to Keras
    and label agreement."""
    from keras_bert_lib import TextClassifier
    from keras_bert_lib.export import export_all, parity_report
    from keras_bert_lib.export.signatures import check_batch

    classifier = TextClassifier(kb.modernbert_base(**TINY), num_classes=3)
    exported = export_all(classifier, tmp_path, formats=["saved_model", "tflite", "onnx", "openvino"])
    rows = parity_report(classifier, exported, check_batch(classifier))
    assert [r["artefact"] for r in rows][1:] == ["saved_model", "tflite", "onnx", "openvino"], rows
    assert all(r["cosine"] > 0.999 and r["agreement"] == 1.0 for r in rows[1:]), rows
