import keras
import numpy as np
import pytest

from keras_bert_lib.layers import MultiHeadSelfAttention
from tests import harness
from tests.reference import numpy_bert

SPEC = harness.LayerSpec(
    cls=MultiHeadSelfAttention,
    init_kwargs=dict(num_heads=2, attention_probs_dropout_prob=0.3, initializer_range=0.5),
    inputs={"x": harness.hidden_states(batch=2, length=6, hidden=8)},
    padding_mask=harness.right_padded(lengths=[6, 3]),
    expected_output_shape=(2, 6, 8),
    expected_num_trainable_weights=8,
    stochastic=True,
)


@pytest.mark.slow
@pytest.mark.parametrize("check", harness.checks_for(SPEC), ids=lambda c: c.__name__)
def test_contract(check):
    check(SPEC)


@pytest.mark.parametrize("num_heads", [1, 2, 4])
def test_heads_equal_numpy_softmax_qkt_v(num_heads):
    """Every head computes softmax(QKᵀ/√d_k)V with padded keys excluded, as NumPy does."""
    layer = MultiHeadSelfAttention(num_heads=num_heads, initializer_range=0.5)
    x = harness.hidden_states(2, 6, 8)
    mask = harness.right_padded([6, 4])
    out, probs = layer(x, padding_mask=mask, return_attention_scores=True)
    q, k, v, o = (layer.query, layer.key, layer.value, layer.output_dense)
    ctx, ref_probs = numpy_bert.attention(
        x.astype("float64"), q.kernel.numpy(), q.bias.numpy(), k.kernel.numpy(), k.bias.numpy(),
        v.kernel.numpy(), v.bias.numpy(), num_heads, mask)
    ref_out = ctx @ o.kernel.numpy() + o.bias.numpy()
    np.testing.assert_allclose(np.asarray(probs), ref_probs, atol=1e-6)
    np.testing.assert_allclose(np.asarray(out), ref_out, atol=1e-5)
    assert np.all(np.asarray(probs)[1, :, :, 4:] == 0.0), "a padded key got attention"


def test_attention_mask_merges_with_padding_mask():
    """A causal (B, T, S) mask and the padding mask both apply: no probability above the diagonal."""
    layer = MultiHeadSelfAttention(num_heads=2)
    causal = np.tril(np.ones((6, 6), "int32"))[None].repeat(2, 0)
    _, probs = layer(harness.hidden_states(2, 6, 8), padding_mask=harness.right_padded([6, 3]),
                     attention_mask=causal, return_attention_scores=True)
    probs = np.asarray(probs)
    assert np.all(probs[:, :, np.triu_indices(6, 1)[0], np.triu_indices(6, 1)[1]] == 0)
    assert np.all(probs[1, :, :, 3:] == 0)
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-6)


def test_width_not_divisible_by_heads_is_refused():
    with pytest.raises(ValueError, match="not divisible by num_heads=3"):
        MultiHeadSelfAttention(num_heads=3)(harness.hidden_states(1, 2, 8))


@pytest.mark.parametrize("lengths", [[6, 6], [6, 3]])
def test_fused_equals_plain_with_causal_mask(lengths):
    """keras.ops.dot_product_attention gets the padding and a (B, T, S) mask merged, as booleans."""
    plain = MultiHeadSelfAttention(num_heads=2, initializer_range=0.5, implementation="plain")
    x, causal = harness.hidden_states(2, 6, 8), np.tril(np.ones((6, 6), "int32"))[None].repeat(2, 0)
    want = plain(x, padding_mask=harness.right_padded(lengths), attention_mask=causal)
    fused = MultiHeadSelfAttention.from_config({**plain.get_config(), "implementation": "fused"})
    fused.build(x.shape)
    fused.set_weights(plain.get_weights())
    got = fused(x, padding_mask=harness.right_padded(lengths), attention_mask=causal)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=1e-6)


def test_attention_dropout_in_training_takes_the_plain_path(monkeypatch):
    """No fused kernel drops attention probabilities: training with that dropout runs the plain
    path, inference (and training without it) the fused one."""
    import keras

    calls = []
    real = keras.ops.dot_product_attention
    monkeypatch.setattr(keras.ops, "dot_product_attention", lambda *a, **k: calls.append(1) or real(*a, **k))
    x = harness.hidden_states(2, 6, 8)
    layer = MultiHeadSelfAttention(num_heads=2, attention_probs_dropout_prob=0.1, implementation="fused")
    layer(x, training=True)
    assert calls == []
    layer(x, training=False)
    MultiHeadSelfAttention(num_heads=2, implementation="fused")(x, training=True)
    assert calls == [1, 1]
    MultiHeadSelfAttention(num_heads=2)(x)  # "auto" on TensorFlow: the plain graph the exports read
    assert calls == [1, 1]


def test_unknown_implementation_is_refused():
    with pytest.raises(ValueError, match="implementation='flash' is not one of"):
        MultiHeadSelfAttention(num_heads=2, implementation="flash")


@pytest.mark.parametrize("implementation", ["plain", "fused"])
@pytest.mark.parametrize("output_range", [1, 4])
def test_output_range_gives_the_first_rows_of_the_full_call(implementation, output_range):
    """The first positions query every key: the full call's rows there, mask rows included."""
    layer = MultiHeadSelfAttention(num_heads=2, initializer_range=0.5, implementation=implementation)
    x, causal = harness.hidden_states(2, 6, 8), np.tril(np.ones((6, 6), "int32"))[None].repeat(2, 0)
    mask = harness.right_padded([6, 3])
    want = np.asarray(layer(x, padding_mask=mask, attention_mask=causal))
    got = layer(x, padding_mask=mask, attention_mask=causal, output_range=output_range)
    assert got.shape == (2, output_range, 8)
    np.testing.assert_allclose(np.asarray(got), want[:, :output_range], atol=1e-6)
    _, probs = layer(x, padding_mask=mask, return_attention_scores=True, output_range=output_range)
    assert probs.shape == (2, 2, output_range, 6)
    symbolic = layer(keras.KerasTensor((None, None, 8)), output_range=output_range)
    assert symbolic.shape == (None, output_range, 8)
