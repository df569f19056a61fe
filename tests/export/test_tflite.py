"""export_tflite: built-in ops only, run in LiteRT; float32 within 1e-4 at any batch and length,
float16 at cosine ≥ 0.999, dynamic-range int8 at ≥ 0.99 on the pooled output, names kept; full
int8, which does not keep 0.99 yet, refused."""

import numpy as np
import pytest

import keras_bert_lib as kb
from keras_bert_lib import TextClassifier
from keras_bert_lib.export import export_tflite
from keras_bert_lib.export.signatures import check_batch, task_outputs
from keras_bert_lib.export.tflite import run_tflite
from tests.export.test_onnx import SMALL

pytest.importorskip("ai_edge_litert", reason="the export extra (ai-edge-litert) is part of the test install")


def _cosine(a, b):
    a, b = np.ravel(a).astype("float64"), np.ravel(b).astype("float64")
    return a @ b / (np.linalg.norm(a) * np.linalg.norm(b))


@pytest.mark.slow
def test_float32_file_equals_keras_at_any_batch_and_length_with_the_signature_names(tmp_path):
    from ai_edge_litert.interpreter import Interpreter

    encoder = kb.bert_base(**SMALL)
    info = export_tflite(encoder, tmp_path / "m.tflite")
    assert info["max_abs_diff"] <= 1e-4
    signature = Interpreter(model_path=str(tmp_path / "m.tflite")).get_signature_list()["serving_ids"]
    assert sorted(signature["inputs"]) == ["padding_mask", "segment_ids", "token_ids"]
    assert sorted(signature["outputs"]) == ["pooled_output", "sequence_output"]
    for batch, length in ((1, 7), (5, 40)):
        feed = check_batch(encoder, batch=batch, length=length, seed=batch)
        got, want = run_tflite(tmp_path / "m.tflite", feed), task_outputs(encoder, feed)
        for name in want:
            np.testing.assert_allclose(got[name], want[name].numpy(), atol=1e-4, rtol=0, err_msg=f"{batch}x{length}")


@pytest.mark.slow
def test_quantized_files_keep_the_pooled_output_and_the_labels(tmp_path):
    classifier = TextClassifier(kb.bert_base(**SMALL), 2)
    encoder = classifier.encoder
    feed = check_batch(encoder, batch=8, length=24, seed=3)
    want = task_outputs(encoder, feed)["pooled_output"].numpy()
    sizes = {}
    for quantization, floor in (("float16", 0.999), ("dynamic_int8", 0.99)):
        path = tmp_path / f"{quantization}.tflite"
        export_tflite(encoder, path, quantization=quantization)
        sizes[quantization] = path.stat().st_size
        assert _cosine(run_tflite(path, feed)["pooled_output"], want) >= floor, quantization
    float32 = export_tflite(encoder, tmp_path / "f32.tflite")["megabytes"] * 1e6
    assert sizes["float16"] < 0.6 * float32 and sizes["dynamic_int8"] < 0.5 * float32
    export_tflite(classifier, tmp_path / "c8.tflite", quantization="dynamic_int8")
    labels = run_tflite(tmp_path / "c8.tflite", feed)["label"]
    np.testing.assert_array_equal(labels, task_outputs(classifier, feed)["label"].numpy())


@pytest.mark.slow
def test_full_int8_below_its_agreement_is_refused_and_nothing_is_written(tmp_path):
    """Full int8 (activations too) keeps a cosine of 0.90-0.95 here and 0.33 on MiniLM (measured),
    under the 0.99 it must keep: the export says so, and what to use instead, rather than writing."""
    encoder = kb.bert_base(**SMALL)
    calibration = [check_batch(encoder, batch=1, length=24, seed=s) for s in range(10)]
    refusal = r"int8 TFLite file disagrees .* cosine 0\.\d+\); nothing was written\. .*use quantization='dynamic_int8'"
    with pytest.raises(RuntimeError, match=refusal):
        export_tflite(encoder, tmp_path / "int8.tflite", quantization="int8", representative_data=calibration)
    assert not list(tmp_path.iterdir())


def test_bad_settings_are_refused_before_any_work(tmp_path):
    encoder = kb.bert_tiny(num_hidden_layers=1)
    with pytest.raises(ValueError, match="quantization='int4'"):
        export_tflite(encoder, tmp_path / "m.tflite", quantization="int4")
    with pytest.raises(ValueError, match="pass representative_data"):
        export_tflite(encoder, tmp_path / "m.tflite", quantization="int8")
    assert not list(tmp_path.iterdir())
