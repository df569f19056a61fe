"""RotaryEmbedding against keras-hub's, and its defining property (scores depend on distance);
GatedFeedForward against NumPy; RotarySelfAttention's local blocks against the same band applied
to the full T × T scores, and against a NumPy softmax with the band as a mask."""

import numpy as np
import pytest

from keras_bert_lib.layers import GatedFeedForward, RotaryEmbedding, RotarySelfAttention
from tests import harness
from tests.reference import numpy_bert

X = harness.hidden_states(batch=2, length=11, hidden=8)
MASK = harness.right_padded([11, 7])
SPECS = {
    "rotary_embedding": harness.LayerSpec(
        cls=RotaryEmbedding, init_kwargs=dict(base=100.0), inputs={"x": X.reshape(2, 11, 2, 4)},
        expected_output_shape=(2, 11, 2, 4), expected_num_trainable_weights=0),
    "gated_feed_forward": harness.LayerSpec(
        cls=GatedFeedForward, init_kwargs=dict(intermediate_size=12, dropout=0.2), inputs={"x": X},
        expected_output_shape=(2, 11, 8), expected_num_trainable_weights=2, stochastic=True),
    "local_attention": harness.LayerSpec(
        cls=RotarySelfAttention, init_kwargs=dict(num_heads=2, window=3, attention_probs_dropout_prob=0.2),
        inputs={"x": X}, padding_mask=MASK, expected_output_shape=(2, 11, 8), expected_num_trainable_weights=2,
        stochastic=True),
}
CASES = [(n, c) for n, s in SPECS.items() for c in harness.checks_for(s)]
SLOW = {("local_attention", harness.check_xla)}  # its XLA compile: test_modernbert's slow tests compile it too


@pytest.mark.parametrize("name,check", [pytest.param(n, c, marks=pytest.mark.slow) if (n, c) in SLOW else (n, c)
                                        for n, c in CASES], ids=[f"{n}-{c.__name__}" for n, c in CASES])
def test_contract(name, check):
    check(SPECS[name])


def test_rotary_embedding_equals_keras_hubs():
    keras_hub = pytest.importorskip("keras_hub", reason="keras-hub is in the [test] extra")
    x = harness.hidden_states(2, 9, 24).reshape(2, 9, 3, 8)
    theirs = keras_hub.layers.RotaryEmbedding(max_wavelength=160_000)(x)
    np.testing.assert_allclose(np.asarray(RotaryEmbedding(base=160_000.0)(x)), np.asarray(theirs), atol=1e-5)


def test_rotated_scores_depend_on_the_distance_alone():
    rng = np.random.default_rng(1)
    q, k = rng.normal(size=(1, 1, 1, 8)), rng.normal(size=(1, 1, 1, 8))
    rotary = RotaryEmbedding(base=10_000.0)

    def score(t, s):  # q placed at position t, k at s
        length = max(t, s) + 1
        qs, ks = np.zeros((1, length, 1, 8), "float32"), np.zeros((1, length, 1, 8), "float32")
        qs[0, t], ks[0, s] = q[0, 0], k[0, 0]
        return float(np.sum(np.asarray(rotary(qs))[0, t] * np.asarray(rotary(ks))[0, s]))

    assert score(5, 2) == pytest.approx(score(13, 10), abs=1e-4)
    assert score(5, 2) != pytest.approx(score(5, 3), abs=1e-3)


def test_gated_feed_forward_equals_numpy():
    layer = GatedFeedForward(intermediate_size=12, initializer_range=0.5)
    out = np.asarray(layer(X))
    kernel = np.asarray(layer.input_gate.kernel)
    inner, gate = X @ kernel[:, :12], X @ kernel[:, 12:]
    np.testing.assert_allclose(out, (numpy_bert.gelu(inner) * gate) @ np.asarray(layer.output_dense.kernel), atol=1e-5)


@pytest.mark.parametrize("window", [1, 3, 20])
def test_local_blocks_equal_a_banded_numpy_softmax(window):
    layer = RotarySelfAttention(num_heads=2, rotary_base=50.0, window=window, initializer_range=0.5)
    blocks = np.asarray(layer(X, padding_mask=MASK))
    full, probs = layer(X, padding_mask=MASK, return_attention_scores=True)

    q, k, v = np.split(X @ np.asarray(layer.qkv.kernel), 3, axis=-1)
    q, k = (np.asarray(layer.rotary(t.reshape(2, 11, 2, 4))) for t in (q, k))
    scores = np.einsum("btnh,bsnh->bnts", q, k) / 2.0
    t = np.arange(11)
    allowed = (np.abs(t[:, None] - t[None, :]) <= window)[None, None] & MASK[:, None, None, :].astype(bool)
    want_probs = numpy_bert.softmax(np.where(allowed, scores, -1e9))
    want = np.einsum("bnts,bsnh->btnh", want_probs, v.reshape(2, 11, 2, 4)).reshape(2, 11, 8)
    want = want @ np.asarray(layer.output_dense.kernel)
    real = MASK.astype(bool)
    by_query = lambda p: np.transpose(np.asarray(p), (0, 2, 1, 3))[real]  # noqa: E731 — (real queries, N, S)
    np.testing.assert_allclose(by_query(probs), by_query(want_probs), atol=1e-5)
    np.testing.assert_allclose(blocks[real], want[real], atol=1e-5)
    np.testing.assert_allclose(np.asarray(full)[real], want[real], atol=1e-5)


def test_a_window_must_be_a_positive_int():
    with pytest.raises(ValueError, match="window=0 must be a positive int"):
        RotarySelfAttention(num_heads=2, window=0)
