"""BiasActivationDense: Keras' Dense computed in the form TensorFlow fuses — the same function as
keras.layers.Dense, and a graph in which oneDNN runs the bias and GELU inside the matmul."""

import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from keras_bert_lib.layers import BiasActivationDense
from keras_bert_lib.layers.activations import gelu, gelu_tanh
from tests import harness

SPEC = harness.LayerSpec(
    cls=BiasActivationDense,
    init_kwargs=dict(units=16, activation="gelu"),
    inputs={"inputs": harness.hidden_states(batch=2, length=6, hidden=8)},
    expected_output_shape=(2, 6, 16),
    expected_num_trainable_weights=2,
)


@pytest.mark.parametrize("check", harness.checks_for(SPEC), ids=lambda c: c.__name__)
def test_contract(check):
    check(SPEC)


@pytest.mark.parametrize("activation", [gelu, gelu_tanh, "relu", None])
@pytest.mark.parametrize("shape", [(2, 6, 8), (5, 8), (1, 2, 3, 8)])
def test_equals_keras_dense(activation, shape):
    ours = BiasActivationDense(16, activation=activation)
    x = np.random.default_rng(0).normal(size=shape).astype("float32")
    want = keras.layers.Dense(16, activation=activation)
    want.build(shape)
    ours.build(shape)
    want.set_weights(ours.get_weights())
    np.testing.assert_allclose(np.asarray(ours(x)), np.asarray(want(x)), atol=1e-6)
    assert ours(x).shape == shape[:-1] + (16,)


_PROBE = """
import sys, numpy as np, tensorflow as tf
from keras_bert_lib.layers import BiasActivationDense
from keras_bert_lib.layers.activations import gelu
for dtype in sys.argv[1:]:
    print("probe", dtype, flush=True)  # oneDNN's lines for this dtype follow
    layer = BiasActivationDense(64, activation=gelu, dtype=dtype)
    x = tf.constant(np.ones((2, 16, 32)), dtype)
    run = tf.function(lambda x: layer(x))
    run(x); run(x)
"""


@pytest.mark.slow
def test_tensorflow_runs_the_bias_and_erf_gelu_inside_the_oneDNN_matmul():
    """float32 fuses on every x86 CPU; bfloat16 only where the CPU has bfloat16 kernels
    (AVX512-BF16, AMX), elsewhere oneDNN runs it as a plain gemm (BiasActivationDense's docstring).
    Both dtypes in one process, each with its own layer and graph."""
    from keras_bert_lib.runtime.compile_path import bfloat16_kernels

    env = {**os.environ, "ONEDNN_VERBOSE": "1", "TF_ENABLE_ONEDNN_OPTS": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
    out = subprocess.run([sys.executable, "-c", _PROBE, "float32", "bfloat16"], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    float32, bfloat16 = out.stdout.split("probe ")[1:]  # what oneDNN printed for each dtype
    for dtype, lines, fused in (("float32", float32, True), ("bfloat16", bfloat16, bfloat16_kernels() is not None)):
        assert lines.startswith(dtype), out.stdout[-2000:]
        executed = [line for line in lines.splitlines() if line.startswith("onednn_verbose") and ",exec," in line]
        assert executed, (dtype, lines[-2000:])
        assert any("eltwise_gelu_erf" in line for line in executed) is fused, (dtype, executed)
