"""Every head layer: the harness contract and its value against a direct NumPy computation."""

import numpy as np
import pytest

from keras_bert_lib.heads import (
    ClassificationHead,
    MaskedLMHead,
    Pooling,
    ReplacedTokenHead,
    SentencePairHead,
    SpanHead,
    TokenClassificationHead,
)
from keras_bert_lib.layers import TokenEmbedding
from tests import harness
from tests.reference import numpy_bert

X = harness.hidden_states(batch=2, length=6, hidden=8)
MASK = harness.right_padded(lengths=[6, 3])
POOLED = harness.hidden_states(batch=2, length=1, hidden=8)[:, 0]

SPECS = {
    "masked_lm": harness.LayerSpec(
        cls=MaskedLMHead,
        init_kwargs=lambda dtype=None: dict(
            token_embedding=TokenEmbedding(20, 8, dtype=dtype), hidden_act="gelu_tanh",
            layer_norm_eps=1e-6, initializer_range=0.1, dtype=dtype),
        inputs={"x": X, "masked_positions": np.array([[0, 5], [1, 2]], "int32")},
        expected_output_shape=(2, 2, 20), expected_num_trainable_weights=6, output_dtype="float32"),
    "sentence_pair": harness.LayerSpec(
        cls=SentencePairHead, init_kwargs=dict(initializer_range=0.1), inputs={"pooled": POOLED},
        expected_output_shape=(2, 2), expected_num_trainable_weights=2, output_dtype="float32"),
    "classification": harness.LayerSpec(
        cls=ClassificationHead, init_kwargs=dict(num_classes=3, dropout=0.3, initializer_range=0.1),
        inputs={"pooled": POOLED}, expected_output_shape=(2, 3), expected_num_trainable_weights=2,
        output_dtype="float32", stochastic=True),
    "span": harness.LayerSpec(
        cls=SpanHead, init_kwargs=dict(initializer_range=0.1), inputs={"x": X}, padding_mask=MASK,
        expected_output_shape={"end_logits": (2, 6), "start_logits": (2, 6)},
        expected_num_trainable_weights=2, output_dtype="float32"),
    "token_classification": harness.LayerSpec(
        cls=TokenClassificationHead, init_kwargs=dict(num_labels=5, dropout=0.3, initializer_range=0.1),
        inputs={"x": X}, expected_output_shape=(2, 6, 5), expected_num_trainable_weights=2,
        output_dtype="float32", stochastic=True),
    "replaced_token": harness.LayerSpec(
        cls=ReplacedTokenHead, init_kwargs=dict(hidden_act="gelu_tanh", initializer_range=0.1), inputs={"x": X},
        expected_output_shape=(2, 6), expected_num_trainable_weights=4, output_dtype="float32"),
    "pooling": harness.LayerSpec(
        cls=Pooling, init_kwargs=dict(mode="mean", normalize=True), inputs={"x": X},
        padding_mask=MASK, expected_output_shape=(2, 8), expected_num_trainable_weights=0,
        output_dtype="float32"),
}
CASES = [(name, check) for name, spec in SPECS.items() for check in harness.checks_for(spec)]


@pytest.mark.slow
@pytest.mark.parametrize("name,check", CASES, ids=[f"{n}-{c.__name__}" for n, c in CASES])
def test_contract(name, check):
    check(SPECS[name])


def test_masked_lm_logits_are_tied_and_gathered():
    """logits = LN(gelu(x[positions]·W + b))·Eᵀ + bias, with E the token table itself."""
    table = TokenEmbedding(20, 8)
    head = MaskedLMHead(table, hidden_act="gelu")
    positions = np.array([[0, 5], [1, 2]], "int32")
    logits = np.asarray(head(X, positions))
    head.output_bias.assign(np.arange(20, dtype="float32"))
    logits = np.asarray(head(X, positions))
    gathered = np.take_along_axis(X, positions[:, :, None], axis=1)
    h = numpy_bert.gelu(gathered @ np.asarray(head.transform.kernel) + np.asarray(head.transform.bias))
    h = numpy_bert.layer_norm(h, np.asarray(head.layer_norm.gamma), np.asarray(head.layer_norm.beta), 1e-12)
    ref = h @ np.asarray(table.embeddings).T + np.arange(20)
    np.testing.assert_allclose(logits, ref, atol=1e-4)
    assert head.token_embedding is table


def test_replaced_token_logits_are_a_dense_layer_then_one_output_per_token():
    """logit_t = gelu(x_t·W + b)·w + c (transformers' ElectraDiscriminatorPredictions)."""
    head = ReplacedTokenHead(hidden_act="gelu", initializer_range=0.5)
    logits = np.asarray(head(X))
    h = numpy_bert.gelu(X @ np.asarray(head.dense.kernel) + np.asarray(head.dense.bias))
    ref = (h @ np.asarray(head.prediction.kernel) + np.asarray(head.prediction.bias))[..., 0]
    np.testing.assert_allclose(logits, ref, atol=1e-5)
    assert logits.shape == (2, 6) and np.std(logits) > 0.1


def test_span_head_never_points_at_padding():
    out = SpanHead()(X, padding_mask=MASK)
    for key in ("start_logits", "end_logits"):
        assert np.all(np.asarray(out[key])[1, 3:] <= -1e8)
        assert np.all(np.abs(np.asarray(out[key])[1, :3]) < 1e3)


def test_mean_pooling_ignores_padding_and_cls_takes_position_zero():
    mean = np.asarray(Pooling("mean")(X, padding_mask=MASK))
    np.testing.assert_allclose(mean[1], X[1, :3].mean(0), atol=1e-6)
    np.testing.assert_allclose(np.asarray(Pooling("cls")(X)), X[:, 0], atol=0)
    unit = np.asarray(Pooling("mean", normalize=True)(X, padding_mask=MASK))
    np.testing.assert_allclose(np.linalg.norm(unit, axis=-1), 1.0, atol=1e-6)


def test_bad_head_arguments_are_refused():
    with pytest.raises(ValueError, match="mode='max'"):
        Pooling("max")
    with pytest.raises(ValueError, match="token_embedding must be a TokenEmbedding"):
        MaskedLMHead(token_embedding="table")


def test_span_head_in_a_functional_model_keeps_start_and_end_apart():
    """Each output of a multi-output layer is its own symbolic tensor, so a functional model
    returns the start logits as start and the end logits as end."""
    import keras
    x = keras.Input((5, 8))
    model = keras.Model(x, SpanHead(name="span")(x))
    out = model.predict_on_batch(X[:, :5])
    direct = model.get_layer("span")(X[:, :5])
    np.testing.assert_allclose(out["start_logits"], np.asarray(direct["start_logits"]), atol=1e-6)
    np.testing.assert_allclose(out["end_logits"], np.asarray(direct["end_logits"]), atol=1e-6)
    assert np.abs(out["start_logits"] - out["end_logits"]).max() > 1e-3
