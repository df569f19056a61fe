"""The compiled path per dtype and CPU: XLA, except bfloat16 on a CPU with AVX512-BF16 or AMX."""

import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from keras_bert_lib import bert_tiny
from keras_bert_lib.runtime.compile_path import (
    bfloat16_kernels,
    choose_jit_compile,
    choose_training_dtype,
    cpu_flags,
    inference_streams,
)

ZEN4 = {"avx2", "avx512f", "avx512_bf16", "avx512_vnni"}
SAPPHIRE_RAPIDS = ZEN4 | {"amx_bf16", "amx_tile", "amx_int8"}
AVX2 = {"avx2", "fma"}


@pytest.mark.parametrize("flags, dtype, width, jit, why", [
    (SAPPHIRE_RAPIDS, "mixed_bfloat16", 768, False, "with AMX"),
    (ZEN4, "mixed_bfloat16", 768, False, "with AVX512-BF16"),
    (ZEN4, "bfloat16", 512, False, "with AVX512-BF16"),
    (ZEN4, "mixed_bfloat16", None, False, "with AVX512-BF16"),
    (ZEN4, "mixed_bfloat16", 128, True, "bfloat16 at width 128"),
    (ZEN4, "mixed_bfloat16", 384, False, "with AVX512-BF16"),  # all-MiniLM-L6-v2
    (AVX2, "mixed_bfloat16", 768, True, "without bfloat16 instructions"),
    (SAPPHIRE_RAPIDS, "float32", 768, True, "float32 on a CPU: XLA"),
    (AVX2, "float32", 768, True, "float32 on a CPU: XLA"),
])
def test_the_rule_per_cpu_dtype_and_width(flags, dtype, width, jit, why):
    got, reason = choose_jit_compile(dtype, flags=flags, accelerators=[], backend="tensorflow", hidden_size=width)
    assert got is jit and why in reason


def test_accelerators_and_other_backends():
    assert choose_jit_compile("mixed_bfloat16", flags=ZEN4, accelerators=["GPU:0"], backend="tensorflow")[0]
    assert choose_jit_compile("mixed_bfloat16", flags=ZEN4, accelerators=[], backend="jax")[0]
    assert not choose_jit_compile("float32", flags=ZEN4, accelerators=[], backend="torch")[0]


def test_training_on_batches_of_varying_width_runs_in_the_graph_on_a_cpu_only():
    for flags in (AVX2, ZEN4, SAPPHIRE_RAPIDS):  # XLA would compile each width anew, and steps no faster
        jit, reason = choose_jit_compile("float32", flags=flags, accelerators=[], backend="tensorflow",
                                         widths_vary=True)
        assert jit is False and "varying width" in reason
    assert choose_jit_compile("float32", flags=AVX2, accelerators=["GPU:0"], backend="tensorflow",
                              widths_vary=True)[0]
    assert choose_jit_compile("float32", flags=AVX2, accelerators=[], backend="jax", widths_vary=True)[0]


def test_a_run_reads_whether_its_batches_vary_in_width_from_the_dataset():
    import tensorflow as tf

    from keras_bert_lib.training.loop import widths_vary

    fixed = tf.data.Dataset.from_tensors(({"token_ids": tf.zeros((2, 16), tf.int32)}, tf.zeros(2)))
    varying = tf.data.Dataset.from_generator(
        lambda: iter([({"token_ids": tf.zeros((2, 8), tf.int32)}, tf.zeros(2))]),
        output_signature=({"token_ids": tf.TensorSpec((None, None), tf.int32)}, tf.TensorSpec((None,))))
    assert not widths_vary(fixed) and widths_vary(varying) and not widths_vary(None)


def test_this_machines_flags_are_read():
    flags = cpu_flags()
    assert "sse2" in flags or not flags  # x86 Linux: read; elsewhere: empty
    assert bfloat16_kernels(set()) is None and bfloat16_kernels(SAPPHIRE_RAPIDS) == "AMX"


@pytest.mark.slow
def test_the_encoder_takes_the_chosen_path_and_compile_overrides_it():
    for dtype in ("float32", "mixed_bfloat16"):
        for width in (128, 512):
            encoder = bert_tiny(num_hidden_layers=1, hidden_size=width, num_attention_heads=8, dtype=dtype)
            assert encoder.jit_compile == choose_jit_compile(dtype, hidden_size=width)[0]
    encoder = bert_tiny(num_hidden_layers=1, hidden_size=512, num_attention_heads=8, dtype="mixed_bfloat16")
    encoder.compile(jit_compile=True)
    assert encoder.jit_compile is True


@pytest.mark.slow
def test_bfloat16_on_either_path_keeps_float32s_pooled_output():
    """Both compiled paths of a mixed_bfloat16 encoder agree with float32 (cosine ≥ 0.999)."""
    float32 = bert_tiny(num_hidden_layers=2)
    rng = np.random.default_rng(0)
    mask = np.ones((4, 24), "int32")
    mask[0, 12:] = 0
    ids = {"token_ids": rng.integers(1000, 30000, (4, 24)).astype("int32") * mask,
           "segment_ids": np.zeros((4, 24), "int32"), "padding_mask": mask}
    want = float32.predict_on_batch(ids)["pooled_output"]
    for jit in (False, True):
        bf16 = bert_tiny(num_hidden_layers=2, dtype="mixed_bfloat16")
        bf16.set_weights(float32.get_weights())
        bf16.compile(jit_compile=jit)
        got = np.asarray(bf16.predict_on_batch(ids)["pooled_output"], "float32")
        cosine = np.sum(got * want, -1) / np.linalg.norm(got, axis=-1) / np.linalg.norm(want, axis=-1)
        assert cosine.min() >= 0.999, (jit, cosine)


@pytest.mark.slow
def test_a_bfloat16_encoder_saved_and_loaded_stays_bfloat16_on_its_path(tmp_path):
    import keras

    encoder = bert_tiny(num_hidden_layers=1, hidden_size=512, num_attention_heads=8, dtype="mixed_bfloat16")
    encoder.save(tmp_path / "e.keras")
    loaded = keras.saving.load_model(tmp_path / "e.keras")
    assert loaded.get_layer("pooler").dtype_policy.name == "mixed_bfloat16"
    assert loaded.jit_compile == choose_jit_compile("mixed_bfloat16", hidden_size=512)[0]


@pytest.mark.parametrize(
    "flags, dtype, width, jit",
    [
        (ZEN4, "mixed_bfloat16", 768, False),
        (ZEN4, "mixed_bfloat16", 128, True),
        (AVX2, "mixed_bfloat16", 768, True),
        (ZEN4, "float32", 768, True),
    ],
)
def test_training_runs_take_the_same_rule(monkeypatch, flags, dtype, width, jit):
    import tensorflow as tf

    from keras_bert_lib.runtime import compile_path
    from keras_bert_lib.training.loop import LoopConfig, _jit_compile

    monkeypatch.setattr(compile_path, "cpu_flags", lambda: flags)
    config = LoopConfig(output_dir="unused", dtype=dtype)
    assert _jit_compile(config, tf.distribute.get_strategy(), width) is jit
    assert _jit_compile(LoopConfig(output_dir="unused", dtype=dtype, jit_compile=False),
                        tf.distribute.get_strategy(), width) is False


@pytest.mark.parametrize(("setting", "width", "where", "want"), [
    ("auto", 384, dict(flags={"avx512_bf16"}, accelerators=[], backend="tensorflow"), "mixed_bfloat16"),
    ("auto", 384, dict(flags={"amx_bf16"}, accelerators=[], backend="tensorflow"), "mixed_bfloat16"),
    ("auto", 128, dict(flags={"avx512_bf16"}, accelerators=[], backend="tensorflow"), "float32"),  # too narrow
    ("auto", 384, dict(flags={"avx2"}, accelerators=[], backend="tensorflow"), "float32"),
    ("auto", 384, dict(flags={"avx512_bf16"}, accelerators=["gpu:0"], backend="tensorflow"), "float32"),
    ("float32", 768, dict(flags={"avx512_bf16"}, accelerators=[], backend="tensorflow"), "float32"),
    ("mixed_bfloat16", 128, dict(flags={"avx2"}, accelerators=[], backend="tensorflow"), "mixed_bfloat16"),
])
def test_a_runs_auto_dtype_is_bfloat16_only_where_it_pays(setting, width, where, want):
    assert choose_training_dtype(setting, width, **where) == want


@pytest.mark.slow
def test_compiled_call_is_the_model_once_per_shape_and_sees_new_weights():
    import numpy as np
    import tensorflow as tf

    from keras_bert_lib import bert_tiny
    from keras_bert_lib.runtime.compile_path import compiled_call

    encoder = bert_tiny(num_hidden_layers=1)
    call = compiled_call(encoder)

    def ids(length):
        return {"token_ids": np.arange(2 * length, dtype="int32").reshape(2, length) % 50 + 5,
                "segment_ids": np.zeros((2, length), "int32"), "padding_mask": np.ones((2, length), "int32")}

    for length in (8, 8, 16, 16, 8):
        got = call(ids(length))["pooled_output"]
        assert isinstance(got, tf.Tensor)  # not copied out to NumPy
        np.testing.assert_allclose(got.numpy(), encoder.predict_on_batch(ids(length))["pooled_output"], atol=1e-5)
    assert call.experimental_get_tracing_count() == 2  # one program per shape
    before = call(ids(8))["pooled_output"].numpy()
    kernel = encoder.weights[-2]  # the pooler's; weights change: the same program sees them
    kernel.assign(kernel * 0.5)
    assert call.experimental_get_tracing_count() == 2
    assert not np.allclose(call(ids(8))["pooled_output"].numpy(), before)


def test_graph_call_equals_keras_predict_at_every_width_in_one_trace_and_keeps_a_subclasss_predict_step():
    from keras_bert_lib import SentenceEmbedder
    from keras_bert_lib.runtime.compile_path import graph_call

    embedder = SentenceEmbedder(bert_tiny(num_hidden_layers=1))
    embedder.inference_dtype = None
    embedder.compile(jit_compile=False)
    call, alone = graph_call(embedder)
    for rows, width in ((3, 5), (2, 9), (4, 2)):
        mask = (np.arange(width) < np.arange(1, rows + 1)[:, None]).astype("int32")
        ids = {"token_ids": (np.arange(rows * width).reshape(rows, width) % 50 + 5) * mask,
               "segment_ids": np.zeros((rows, width), "int32"), "padding_mask": mask}
        np.testing.assert_allclose(call(ids), keras.Model.predict_on_batch(embedder, ids), atol=1e-6)
    assert alone == 1 and call.function.experimental_get_tracing_count() == 1
    assert graph_call(embedder)[0] is call  # kept on the model: a later predict reuses the trace

    class OwnStep(SentenceEmbedder):
        def predict_step(self, data):
            return super().predict_step(data) * 2.0

    doubled = OwnStep(embedder.encoder)
    doubled.inference_dtype = None
    doubled.compile(jit_compile=False)
    run, alone = graph_call(doubled)
    assert alone == 2  # Keras' predict_on_batch, and so the subclass's step
    np.testing.assert_allclose(run(ids), 2.0 * call(ids), atol=1e-6)


def test_predict_runs_two_batches_at_once_only_in_tensorflows_graph_on_a_cpu():
    assert inference_streams(False, backend="tensorflow", accelerators=[]) == 2
    assert inference_streams(True, backend="tensorflow", accelerators=[]) == 1  # XLA
    assert inference_streams(False, backend="tensorflow", accelerators=["GPU:0"]) == 1
    assert inference_streams(True, backend="jax", accelerators=[]) == 1
    assert inference_streams(False, backend="torch", accelerators=[]) == 1


_IMPORT_ORDER = """
import gc, sys, warnings
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    if sys.argv[1] == "tensorflow first":
        import keras  # imports TensorFlow
    import keras_bert_lib
from keras_bert_lib.runtime.compile_path import graph_kernels, onednn_enabled
print(onednn_enabled(), graph_kernels(), [str(w.message)[:60] for w in caught if "oneDNN" in str(w.message)],
      "collector on" if gc.isenabled() else "collector off")
"""


@pytest.mark.slow
@pytest.mark.parametrize("order, setting, enabled, warned", [
    ("keras_bert_lib first", None, True, False),
    ("tensorflow first", None, None, True),   # on TensorFlow's default: off without AVX512, where it warns
    ("tensorflow first", "0", False, False),  # the user's explicit choice: no warning
    ("tensorflow first", "1", True, False),
])
def test_onednn_follows_the_import_order_and_a_late_import_says_so(order, setting, enabled, warned):
    env = {k: v for k, v in os.environ.items() if k != "TF_ENABLE_ONEDNN_OPTS"}
    env.update({"TF_CPP_MIN_LOG_LEVEL": "3", **({"TF_ENABLE_ONEDNN_OPTS": setting} if setting else {})})
    out = subprocess.run([sys.executable, "-c", _IMPORT_ORDER, order], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    line = out.stdout.strip().splitlines()[-1]
    on = line.startswith("True")
    if enabled is not None:
        assert on is enabled, line
    assert ("graph (oneDNN)" if on else "graph (Eigen; oneDNN off)") in line, line
    # TensorFlow's own default decides where it comes first: a warning exactly where it left oneDNN off.
    assert ("TensorFlow was imported before keras_bert_lib" in line) is (warned and not on), line
    assert line.endswith("collector on"), line  # paused while Keras imports, then on again
