import numpy as np
import pytest

from keras_bert_lib.layers import TransformerEncoderBlock
from tests import harness
from tests.reference import numpy_bert

SPEC = harness.LayerSpec(
    cls=TransformerEncoderBlock,
    init_kwargs=dict(num_heads=2, intermediate_size=16, hidden_act="gelu_tanh",
                     hidden_dropout_prob=0.2, attention_probs_dropout_prob=0.2,
                     layer_norm_eps=1e-6, norm_first=True, initializer_range=0.1),
    inputs={"x": harness.hidden_states(batch=2, length=6, hidden=8)},
    padding_mask=harness.right_padded(lengths=[6, 3]),
    expected_output_shape=(2, 6, 8),
    expected_num_trainable_weights=16,
    stochastic=True,
)


@pytest.mark.slow
@pytest.mark.parametrize("check", harness.checks_for(SPEC), ids=lambda c: c.__name__)
def test_contract(check):
    check(SPEC)


@pytest.mark.parametrize("act", ["gelu", "gelu_tanh"])
def test_post_ln_block_equals_numpy_bert_layer(act):
    """One post-LN block equals Google's layer: LN(x + Attn(x)), LN(x + FFN(x)), computed in NumPy."""
    block = TransformerEncoderBlock(num_heads=2, intermediate_size=16, hidden_act=act,
                                    initializer_range=0.3)
    x, mask = harness.hidden_states(2, 6, 8), harness.right_padded([6, 2])
    out = np.asarray(block(x, padding_mask=mask))
    a, f = block.attention, block.ffn
    w = {"bert/encoder/layer_0/" + k: v for k, v in {
        "attention/self/query/kernel": a.query.kernel, "attention/self/query/bias": a.query.bias,
        "attention/self/key/kernel": a.key.kernel, "attention/self/key/bias": a.key.bias,
        "attention/self/value/kernel": a.value.kernel, "attention/self/value/bias": a.value.bias,
        "attention/output/dense/kernel": a.output_dense.kernel,
        "attention/output/dense/bias": a.output_dense.bias,
        "attention/output/LayerNorm/gamma": block.attention_layer_norm.gamma,
        "attention/output/LayerNorm/beta": block.attention_layer_norm.beta,
        "intermediate/dense/kernel": f.intermediate.kernel, "intermediate/dense/bias": f.intermediate.bias,
        "output/dense/kernel": f.output_dense.kernel, "output/dense/bias": f.output_dense.bias,
        "output/LayerNorm/gamma": block.ffn_layer_norm.gamma, "output/LayerNorm/beta": block.ffn_layer_norm.beta,
    }.items()}
    w = {k: np.asarray(v) for k, v in w.items()}
    # bert_forward needs embeddings and a pooler; give it identity-like pieces and compare the layer only.
    x64 = x.astype("float64")
    ref = x64
    p = "bert/encoder/layer_0/"
    ctx, _ = numpy_bert.attention(ref, *(w[p + f"attention/self/{n}/{t}"] for n in ("query", "key", "value")
                                         for t in ("kernel", "bias")), 2, mask)
    ref = numpy_bert.layer_norm(
        ref + ctx @ w[p + "attention/output/dense/kernel"] + w[p + "attention/output/dense/bias"],
        w[p + "attention/output/LayerNorm/gamma"],
        w[p + "attention/output/LayerNorm/beta"],
        1e-12,
    )
    h = getattr(numpy_bert, act)(ref @ w[p + "intermediate/dense/kernel"] + w[p + "intermediate/dense/bias"])
    ref = numpy_bert.layer_norm(ref + h @ w[p + "output/dense/kernel"] + w[p + "output/dense/bias"],
                                w[p + "output/LayerNorm/gamma"], w[p + "output/LayerNorm/beta"], 1e-12)
    np.testing.assert_allclose(out, ref, atol=2e-5)


def test_pre_ln_differs_from_post_ln_with_the_same_weights():
    """norm_first really moves the LayerNorms (the same weights give another function)."""
    x = harness.hidden_states(1, 4, 8)
    post = TransformerEncoderBlock(num_heads=2, intermediate_size=16)
    pre = TransformerEncoderBlock(num_heads=2, intermediate_size=16, norm_first=True)
    post(x), pre(x)
    pre.set_weights(post.get_weights())
    assert np.max(np.abs(np.asarray(pre(x)) - np.asarray(post(x)))) > 1e-3


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("output_range", [1, 3])
def test_output_range_gives_the_first_rows_of_the_full_block(norm_first, output_range):
    """A classifier's last block: the first positions' outputs, from every position's keys."""
    block = TransformerEncoderBlock(num_heads=2, intermediate_size=16, norm_first=norm_first, initializer_range=0.3)
    x, mask = harness.hidden_states(2, 6, 8), harness.right_padded([6, 2])
    want = np.asarray(block(x, padding_mask=mask))
    got, probs = block(x, padding_mask=mask, output_range=output_range, return_attention_scores=True)
    assert got.shape == (2, output_range, 8) and probs.shape == (2, 2, output_range, 6)
    np.testing.assert_allclose(np.asarray(got), want[:, :output_range], atol=1e-6)
    assert not np.allclose(want[:, :output_range], np.asarray(block(x[:, :output_range]))), \
        "the first rows alone would not do: they must read every key"
