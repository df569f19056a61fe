import numpy as np
import pytest

from keras_bert_lib.layers import FeedForward
from tests import harness
from tests.reference import numpy_bert

SPEC = harness.LayerSpec(
    cls=FeedForward,
    init_kwargs=dict(intermediate_size=16, hidden_act="gelu_tanh", initializer_range=0.1),
    inputs={"x": harness.hidden_states(batch=2, length=6, hidden=8)},
    expected_output_shape=(2, 6, 8),
    expected_num_trainable_weights=4,
)


@pytest.mark.parametrize("check", harness.checks_for(SPEC), ids=lambda c: c.__name__)
def test_contract(check):
    check(SPEC)


@pytest.mark.parametrize("act", ["gelu", "gelu_tanh", "relu"])
def test_equals_numpy_dense_act_dense(act):
    layer = FeedForward(intermediate_size=16, hidden_act=act, initializer_range=0.5)
    x = harness.hidden_states(2, 3, 8)
    out = np.asarray(layer(x))
    fn = {"gelu": numpy_bert.gelu, "gelu_tanh": numpy_bert.gelu_tanh, "relu": lambda z: np.maximum(z, 0)}[act]
    i, o = layer.intermediate, layer.output_dense
    ref = fn(x @ np.asarray(i.kernel) + np.asarray(i.bias)) @ np.asarray(o.kernel) + np.asarray(o.bias)
    np.testing.assert_allclose(out, ref, atol=1e-5)


def test_unknown_activation_is_refused():
    with pytest.raises(ValueError, match="hidden_act='swish' is not one of"):
        FeedForward(intermediate_size=4, hidden_act="swish")
