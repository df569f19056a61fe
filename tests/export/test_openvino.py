"""OpenVINO: an exported IR file and the runtime behind `predict` give Keras' outputs (within 1e-5
in float32, by cosine where the CPU computes in bfloat16), at every width and batch size, for
BERT, DistilBERT (no segment ids) and the task models; the runtime follows weight changes."""

import numpy as np
import pytest

import keras_bert_lib as kb
from keras_bert_lib import SentenceEmbedder, TextClassifier, TokenClassifier
from keras_bert_lib.export import OpenVINORuntime, export_all, export_openvino, parity_report
from keras_bert_lib.export.openvino import openvino_runner
from keras_bert_lib.export.signatures import check_batch, task_outputs
from keras_bert_lib.text import BertPreprocessor, WordPieceTokenizer

pytest.importorskip("openvino", reason="the openvino extra is part of the test install")

SMALL = dict(vocab_size=120, num_hidden_layers=2, hidden_size=64, num_attention_heads=4, intermediate_size=128,
             max_position_embeddings=64)
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "good", "bad", "film", "plot", "the", "was", "very",
         "long", "short", "and", "funny"]


def _ids(batch, length, seed=0):
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, length), "int32")
    for row, real in enumerate(rng.integers(1, length + 1, batch)):
        mask[row, real:] = 0
    mask[0] = 1
    return {"token_ids": rng.integers(5, 120, (batch, length)).astype("int32"),
            "segment_ids": (rng.integers(0, 2, (batch, length)) * mask).astype("int32"), "padding_mask": mask}


def _close(got, want, precision):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if precision == "float32":
        np.testing.assert_allclose(got, want, atol=1e-5)
    else:  # bfloat16 on CPUs with AVX512-BF16 or AMX
        a, b = got.reshape(len(got), -1), want.reshape(len(want), -1)
        assert np.min(np.sum(a * b, 1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)) > 0.999


@pytest.mark.slow
@pytest.mark.parametrize("factory", ["bert_base", "distilbert_base"])
def test_one_file_serves_every_batch_size_and_width(factory, tmp_path):
    encoder = getattr(kb, factory)(**SMALL)
    info = export_openvino(encoder, tmp_path / "encoder.xml")
    assert (tmp_path / "encoder.xml").is_file() and (tmp_path / "encoder.bin").is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".partial")]
    run = openvino_runner(tmp_path / "encoder.xml")
    for batch, length in ((1, 5), (3, 16), (8, 40)):
        ids = _ids(batch, length, seed=length)
        want = task_outputs(encoder, ids)
        got = run(ids)
        assert set(got) == set(want)
        for name in want:
            _close(got[name], want[name], info["precision"])


@pytest.mark.slow
def test_task_outputs_keep_their_names_and_a_wrong_suffix_is_refused(tmp_path):
    tagger = TokenClassifier(kb.bert_tiny(**SMALL), labels=["O", "B-PER", "I-PER", "B-LOC", "I-LOC"])
    export_openvino(tagger, tmp_path / "tagger.xml")
    ids = _ids(2, 12)
    got, want = openvino_runner(tmp_path / "tagger.xml")(ids), task_outputs(tagger, ids)
    assert set(got) == {"logits", "tag_ids"}
    np.testing.assert_array_equal(got["tag_ids"], want["tag_ids"].numpy())
    with pytest.raises(ValueError, match=r"\.xml"):
        export_openvino(tagger, tmp_path / "tagger.onnx")


@pytest.mark.slow
def test_export_all_writes_it_and_the_parity_table_reads_it(tmp_path):
    classifier = TextClassifier(kb.bert_tiny(**SMALL), num_classes=3)
    exported = export_all(classifier, tmp_path, formats=["openvino"])
    assert exported == {"openvino": str(tmp_path / "openvino" / "model.xml")}
    rows = parity_report(classifier, exported, check_batch(classifier))
    assert [r["artefact"] for r in rows] == ["keras", "openvino"]
    assert rows[1]["cosine"] > 0.999 and rows[1]["agreement"] == 1.0 and rows[1]["megabytes"] > 0



@pytest.mark.slow
def test_export_dtype_int8_writes_a_calibrated_int8_file_that_agrees_with_keras(tmp_path, capsys):
    from keras_bert_lib.cli import main

    classifier = TextClassifier(kb.bert_tiny(**{**SMALL, "vocab_size": len(VOCAB)}), num_classes=3,
                                preprocessor=BertPreprocessor(WordPieceTokenizer(VOCAB), sequence_length=32))
    classifier.save(tmp_path / "model.keras")
    (tmp_path / "calibration.txt").write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    assert main(["export", str(tmp_path / "model.keras"), "--format", "openvino", "--dtype", "int8", "--calibration",
                 str(tmp_path / "calibration.txt"), "--output", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert f"openvino: {tmp_path / 'out' / 'openvino' / 'model_int8.xml'} in " in out
    assert "computes in int8 (static) on this CPU" in out
    written = tmp_path / "out" / "openvino" / "model_int8.xml"
    rows = parity_report(classifier, {"openvino int8": str(written)}, check_batch(classifier))
    assert rows[1]["cosine"] >= 0.99 and rows[1]["agreement"] >= 0.9, rows
    import openvino as ov  # the file names its float parts' precision, which the runner applies on any CPU

    from keras_bert_lib.runtime.openvino import compiled_runner

    ir = ov.Core().read_model(written)
    assert ir.get_rt_info(["runtime_options", "INFERENCE_PRECISION_HINT"]).astype(str) == "f32"
    assert compiled_runner(ir, ["probabilities"]).precision == "float32"
    assert main(["export", str(tmp_path / "model.keras"), "--format", "saved_model", "--format", "openvino", "--dtype",
                 "int8", "--output", str(tmp_path / "x")]) == 2
    assert capsys.readouterr().err.strip() == (
        "keras-bert export: --dtype int8 writes an OpenVINO file (--format openvino alone); a SavedModel holds "
        "float32 or bfloat16 weights, and ONNX and TFLite take --quantize dynamic_int8. Nothing was written.")


def _embedder():
    preprocessor = BertPreprocessor(WordPieceTokenizer(VOCAB), sequence_length=32)
    return SentenceEmbedder(kb.bert_tiny(**{**SMALL, "vocab_size": len(VOCAB)}), preprocessor=preprocessor)


TEXTS = ["a good film", "the plot was very very long and the film was long and bad", "funny",
         "a short and funny film", "bad", "the film was good and the plot was good and very funny and short"] * 6


@pytest.mark.slow
def test_predict_on_openvino_gives_tensorflows_results_in_the_callers_order_each_batch_as_wide_as_its_longest():
    class Seen(OpenVINORuntime):
        masks = []

        def batch_function(self, model):
            run = super().batch_function(model)
            return lambda ids: (self.masks.append(ids["padding_mask"]), run(ids))[1]

    embedder = _embedder()
    embedder.inference_dtype = None
    want = embedder.predict(TEXTS, batch_size=4, verbose=0)
    embedder.runtime = Seen()
    got = embedder.predict(TEXTS, batch_size=4, verbose=0)
    assert embedder.runtime.precision in ("float32", "bfloat16")
    _close(got, want, embedder.runtime.precision)
    # one program takes every width: no batch carries a column of padding alone
    assert len(Seen.masks) == 9 and all(mask[:, -1].any() for mask in Seen.masks)
    assert any(mask.shape[1] % 8 for mask in Seen.masks)
    assert embedder.predict([], verbose=0).shape == (0, SMALL["hidden_size"])


@pytest.mark.slow
def test_a_fixed_predictor_on_openvino_runs_a_batchs_first_two_parts_at_once():
    """Nothing traces on a compiled runtime, so no part runs alone: a server's batch of eight in
    parts of four uses both streams (each part waits at a barrier for the other)."""
    import threading

    class Meeting(OpenVINORuntime):
        def batch_function(self, model):
            run, barrier = super().batch_function(model), threading.Barrier(2, timeout=20)
            self.streams = 2  # as on two cores or more, whatever this machine has

            def met(ids):
                barrier.wait()  # BrokenBarrierError where the other part is not running beside it
                return run(ids)
            return met

    embedder = SentenceEmbedder(kb.bert_tiny(**SMALL))
    ids = _ids(8, 12)
    want = embedder.predict(ids, verbose=0)
    embedder.runtime = Meeting()
    _close(embedder.fixed_predictor(4)(ids), want, embedder.runtime.precision)


@pytest.mark.slow
def test_the_runtime_compiles_again_when_the_weights_change():
    embedder = _embedder()
    embedder.runtime = OpenVINORuntime()
    before = embedder.predict(TEXTS[:4], verbose=0)
    first = embedder.runtime.batch_function(embedder)
    assert embedder.runtime.batch_function(embedder) is first  # the same weights: the same program
    table = embedder.encoder.token_embedding.embeddings
    table.assign(np.random.default_rng(1).normal(0, 1, table.shape).astype("float32"))
    after = embedder.predict(TEXTS[:4], verbose=0)
    assert embedder.runtime.batch_function(embedder) is not first
    precision = embedder.runtime.precision
    embedder.runtime, embedder.inference_dtype = None, None
    _close(after, embedder.predict(TEXTS[:4], verbose=0), precision)  # the new weights' outputs
    assert not np.allclose(before, after, atol=1e-4)


def test_without_openvino_the_export_says_what_to_install_before_writing_anything(tmp_path, monkeypatch):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "openvino" else find_spec(name, *a))
    with pytest.raises(ValueError, match=r'pip install "keras-bert-lib\[openvino\]"'):
        export_all(kb.bert_tiny(**SMALL), tmp_path / "out", formats=["saved_model", "openvino"])
    assert not (tmp_path / "out" / "saved_model").exists()
