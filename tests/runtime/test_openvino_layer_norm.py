"""Keras' layer normalization reaches OpenVINO as one MVN node per layer, for every family's
form (BERT's, DeBERTa-v3's, ModernBERT's bias-free one), and OpenVINO then computes what Keras
computes; a normalization in another form is left as it is."""

import keras
import numpy as np
import pytest

import keras_bert_lib as kb
from keras_bert_lib.models import deberta_v3_base
from keras_bert_lib.runtime.openvino_layer_norm import fuse_layer_norms

ov = pytest.importorskip("openvino", reason="the openvino extra is part of the test install")

FAMILIES = {
    "bert": lambda: kb.bert_tiny(vocab_size=120, num_hidden_layers=2),
    "deberta_v3": lambda: deberta_v3_base(vocab_size=120, hidden_size=16, num_hidden_layers=2,
                                      num_attention_heads=2, intermediate_size=32),
    "modernbert": lambda: kb.modernbert_base(vocab_size=120, hidden_size=16, num_hidden_layers=2,
                                             num_attention_heads=2, intermediate_size=24),
}


def _kinds(model):
    return [op.get_type_name() for op in model.get_ordered_ops()]


@pytest.mark.slow  # OpenVINO's import, conversion and compilation: seconds each
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_layer_norm_becomes_one_mvn_and_openvino_computes_what_keras_does(family):
    from keras_bert_lib.runtime.openvino import input_order, require_openvino, traced

    encoder = FAMILIES[family]()
    ov_model = require_openvino().convert_model(traced(encoder))  # as TensorFlow traces it, unfused
    norms = _kinds(ov_model).count("SquaredDifference")
    assert norms >= 2 * 2  # two per block at least
    assert fuse_layer_norms(ov_model) == norms
    kinds = _kinds(ov_model)
    assert kinds.count("MVN") == norms and "SquaredDifference" not in kinds

    rng = np.random.default_rng(0)
    mask = np.ones((3, 11), "int32")
    mask[1, 7:] = mask[2, 3:] = 0
    ids = {"token_ids": rng.integers(5, 120, (3, 11)).astype("int32"), "segment_ids": np.zeros((3, 11), "int32"),
           "padding_mask": mask}
    wants = keras.tree.flatten(encoder(ids))  # traced's order: the outputs by name
    compiled = ov.Core().compile_model(ov_model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    outputs = compiled([ids[name] for name in input_order(compiled)])
    for port, want in zip(compiled.outputs, wants):
        got, want = outputs[port], np.asarray(want)
        if want.ndim == 3:  # per token: the real ones
            got, want = got * mask[:, :, None], want * mask[:, :, None]
        np.testing.assert_allclose(got, want, atol=1e-5)


def test_a_normalization_written_as_a_division_is_left_as_it_is():
    import openvino.opset13 as ops

    x = ops.parameter([2, 4], np.float32)
    centred = ops.subtract(x, ops.reduce_mean(x, [-1], True))
    variance = ops.reduce_mean(ops.squared_difference(x, ops.reduce_mean(x, [-1], True)), [-1], True)
    y = ops.divide(centred, ops.sqrt(ops.add(variance, np.float32(1e-5))))
    model = ov.Model([y], [x])
    before = _kinds(model)
    assert fuse_layer_norms(model) == 0
    assert _kinds(model) == before
