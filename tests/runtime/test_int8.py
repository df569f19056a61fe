"""int8 inference (`inference_dtype="int8"`, `runtime.openvino.Int8Runtime`): NNCF's static
quantization calibrated on the first call's rows or on given texts, dynamic on a first call of a
few rows, a quality gate against Keras' float32 outputs that keeps the feed-forward outputs in
float before it refuses, and the caller's order kept."""

import logging
import os

import keras
import numpy as np
import pytest

import keras_bert_lib as kb
from keras_bert_lib import SentenceEmbedder, TextClassifier
from keras_bert_lib.runtime.openvino import FFN_OUTPUT, Int8Runtime
from keras_bert_lib.text import BertPreprocessor, WordPieceTokenizer

pytest.importorskip("nncf", reason="the openvino extra (OpenVINO and NNCF) is part of the test install")

SMALL = dict(vocab_size=120, num_hidden_layers=2, hidden_size=64, num_attention_heads=4, intermediate_size=128,
             max_position_embeddings=64)
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "good", "bad", "film", "plot", "the", "was", "very",
         "long", "short", "and", "funny"]


def _ids(batch, length=24, seed=0):
    rng = np.random.default_rng(seed)
    mask = (np.arange(length)[None] < rng.integers(2, length + 1, (batch, 1))).astype("int32")
    return {"token_ids": (rng.integers(5, 120, (batch, length)) * mask).astype("int32"),
            "segment_ids": np.zeros((batch, length), "int32"), "padding_mask": mask}


def _cosines(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return np.sum(a * b, 1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


@pytest.fixture(scope="module")
def embedder():
    model = SentenceEmbedder(kb.bert_tiny(**SMALL))
    model.inference_dtype = None
    return model


@pytest.mark.slow
def test_int8_calibrates_on_the_first_calls_rows_and_keeps_each_rows_vector(embedder):
    ids = _ids(80)
    want = embedder.predict(ids, verbose=0)  # Keras, float32
    model = SentenceEmbedder.from_config(embedder.get_config())
    model.set_weights(embedder.get_weights())
    model.inference_dtype = "int8"
    got = model.predict(ids, verbose=0)
    runtime = model.predict_runtime()
    assert runtime.quantization == "static" and runtime.kept_float == ()
    assert runtime.precision == "float32"  # what is not int8, on every CPU (OpenVINO's default on AMX: bfloat16)
    assert runtime.worst_cosine >= 0.99
    assert np.min(_cosines(got, want)) >= 0.99
    # the caller's order: the rows reversed give the vectors reversed (bfloat16's sums would not)
    flipped = model.predict({k: v[::-1] for k, v in ids.items()}, verbose=0)
    np.testing.assert_allclose(flipped[::-1], got, atol=1e-5)
    # a row alone equals the row in the batch (each batch is cut to its own longest row)
    alone = model.predict({k: v[5:6] for k, v in ids.items()}, verbose=0)
    assert _cosines(alone, got[5:6])[0] > 0.9999
    assert model.get_config()["inference_dtype"] == "int8"  # saved with the model


@pytest.mark.slow
def test_a_first_call_of_a_few_rows_quantizes_dynamically(embedder):
    """Twice in one process: OpenVINO's dynamic quantization on several streams answered wrongly
    for a model compiled after another, so it runs on one."""
    ids = _ids(6, seed=1)
    for _ in range(2):
        runtime = Int8Runtime()
        model = SentenceEmbedder.from_config(embedder.get_config())
        model.set_weights(embedder.get_weights())
        model.runtime = runtime
        got = model.predict(ids, verbose=0)
        assert runtime.quantization == "dynamic" and runtime.streams == 1
        assert np.min(_cosines(got, embedder.predict(ids, verbose=0))) >= 0.99


@pytest.mark.slow
def test_calibration_texts_given_are_what_it_calibrates_on():
    """Given texts calibrate a static model even for a first call of three. A classifier's two
    logits are gated by their spread, not by cosine: the gate's figure is 1 minus the largest
    difference over a tenth of the spread of float32's logits on the calibration texts. (A random
    head's logits barely move from text to text, so the gate here is looser than the default: on
    a CPU without VNNI this model measured 0.986.)"""
    keras.utils.set_random_seed(0)
    tokenizer = WordPieceTokenizer(VOCAB)
    classifier = TextClassifier(kb.bert_tiny(**SMALL), num_classes=2,
                                preprocessor=BertPreprocessor(tokenizer, sequence_length=16))
    classifier.inference_dtype = None
    texts = ["a good film", "the plot was very long and bad", "funny", "a short film and a good plot"] * 10
    want = classifier.predict(texts, verbose=0)
    runtime = Int8Runtime(calibration=texts[:8], min_cosine=0.95)
    classifier.runtime = runtime
    got = classifier.predict(texts[:3], verbose=0)  # three texts: the calibration texts still make it static
    assert runtime.quantization == "static" and runtime._rows["padding_mask"].shape[0] == 8
    # texts[:3] are calibration texts, so their difference is within what the gate measured
    assert np.max(np.abs(got - want[:3])) <= (1 - runtime.worst_cosine) * 10 * np.std(want[:8]) * 1.001 + 1e-6
    assert runtime.worst_cosine < 1 - 1e-4  # it measured a difference: int8 ran


@pytest.mark.slow
def test_without_vnni_every_matmul_weight_takes_7_bits(embedder, monkeypatch):
    """Without VNNI or AMX an int8 dot product sums pairs in int16, which saturates: NNCF's
    overflow fix then keeps every matmul weight within 7 bits; with VNNI they take all 8."""
    import keras_bert_lib.runtime.openvino as openvino
    from keras_bert_lib.runtime.openvino import _calibration_batches, convert, require_nncf, traced

    batches = _calibration_batches(_ids(32, seed=3))
    ov_model = convert(traced(embedder))

    def matmul_weight_ranges(kernels):
        monkeypatch.setattr(openvino, "int8_kernels", lambda: kernels)
        model = Int8Runtime._quantize(require_nncf(), ov_model.clone(), batches, ())
        ranges = []
        for op in model.get_ordered_ops():
            if op.get_type_name() == "Constant" and op.get_element_type().get_type_name() == "i8":
                convert_op = next(iter(op.output(0).get_target_inputs())).get_node()
                scale = next(iter(convert_op.output(0).get_target_inputs())).get_node()
                if "MatMul" in scale.get_friendly_name():
                    ranges.append((int(op.get_data().min()), int(op.get_data().max())))
        return ranges

    seven, eight = matmul_weight_ranges(None), matmul_weight_ranges("AVX512-VNNI")
    assert len(seven) == len(eight) == 6 * SMALL["num_hidden_layers"] + 2  # and segments and pooler
    assert all(-64 <= low and high <= 64 for low, high in seven), seven
    assert all(low <= -120 and high >= 120 for low, high in eight), eight


@pytest.mark.slow
def test_the_gate_keeps_the_feed_forward_outputs_in_float_then_refuses_naming_the_layers(embedder, caplog):
    ids = _ids(40, seed=2)
    model = SentenceEmbedder.from_config(embedder.get_config())
    model.set_weights(embedder.get_weights())
    model.runtime = Int8Runtime(min_cosine=1.01)  # no int8 model passes
    with pytest.raises(ValueError, match=r"keep_float=\('ffn/output', 'attention/output'\)"):
        model.predict(ids, verbose=0)
    model.runtime = runtime = Int8Runtime(keep_float=FFN_OUTPUT)
    model.predict(ids, verbose=0)
    assert runtime.kept_float == FFN_OUTPUT


@pytest.mark.slow
def test_keep_float_leaves_those_matmuls_unquantized(embedder):
    from keras_bert_lib.runtime.openvino import _calibration_batches, convert, require_nncf, traced

    batches = _calibration_batches(_ids(32, seed=3))
    ov_model = convert(traced(embedder))

    def quantized_inputs(model):  # MatMuls fed by a FakeQuantize (int8 activations)
        return {op.get_friendly_name() for op in model.get_ordered_ops() if op.get_type_name() == "MatMul"
                and any(op.input_value(i).get_node().get_type_name() == "FakeQuantize" for i in range(2))}

    whole = quantized_inputs(Int8Runtime._quantize(require_nncf(), ov_model.clone(), batches, ()))
    kept = quantized_inputs(Int8Runtime._quantize(require_nncf(), ov_model.clone(), batches, FFN_OUTPUT))
    ffn_outputs = {name for name in whole if "/ffn" in name and "/output" in name}
    assert len(ffn_outputs) == SMALL["num_hidden_layers"]
    assert kept == whole - ffn_outputs


def test_quieting_nncf_leaves_the_handlers_others_attached_to_its_logger_alone():
    """NNCF's tables are quieted through its logger's level: a handler someone else put on that
    logger (pytest attaches its capture to every logger that does not propagate) keeps its own."""
    from keras_bert_lib.runtime.openvino import require_nncf

    handler, logger = logging.Handler(logging.DEBUG), logging.getLogger("nncf")
    logger.addHandler(handler)
    try:
        require_nncf()
        assert handler.level == logging.DEBUG and logger.level == logging.ERROR
    finally:
        logger.removeHandler(handler)


def test_a_conversion_in_the_suite_forks_nothing():
    """OpenVINO's converter sent each usage event from a fork of the whole worker (dozens a
    conversion); the suite turns its telemetry off (conftest.py), and a converted model then forks
    nothing."""
    import openvino as ov
    import tensorflow as tf

    forks = []
    os.register_at_fork(before=lambda: forks.append(1))  # counts this process's forks from here on
    double = tf.function(lambda x: 2.0 * x, input_signature=[tf.TensorSpec([None], tf.float32)])
    compiled = ov.compile_model(ov.convert_model(double), "CPU")
    np.testing.assert_allclose(compiled(np.array([1.0, 2.0], np.float32))[0], [2.0, 4.0])
    assert forks == []
