"""Which program a model runs as on this machine: one XLA program, or TensorFlow's graph with oneDNN.

XLA fuses BERT's float32 graph and wins on CPUs (bench/encoder_speed.py), but its CPU backend
has no bfloat16 matrix kernels: a `mixed_bfloat16` model compiled with XLA computes its matmuls
slower than in float32. TensorFlow's plain graph runs them through oneDNN, which uses AVX512-BF16
and AMX where the CPU has them. So the default path depends on the dtype and the CPU.
"""

import platform
import sys
import threading
import warnings

import keras
import numpy as np

from keras_bert_lib.keras_internals import onednn_enabled, runs_under_strategy

BFLOAT16_FLAGS = (("amx_bf16", "AMX"), ("avx512_bf16", "AVX512-BF16"))


def cpu_flags():
    """The CPU's feature flags (Linux `/proc/cpuinfo`), as a set; empty where it cannot be read.

    Example:
        ```python
        from keras_bert_lib.runtime.compile_path import cpu_flags
        "avx2" in cpu_flags()
        ```
    """
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


INT8_FLAGS = (("amx_int8", "AMX"), ("avx512_vnni", "AVX512-VNNI"), ("avx_vnni", "AVX-VNNI"))


def int8_kernels(flags=None):
    """"AMX", "AVX512-VNNI", "AVX-VNNI" or None: the int8 dot-product instructions here, which
    int8 inference needs to pay (without them OpenVINO runs int8 on AVX2's slower sequences).

    Example:
        ```python
        from keras_bert_lib.runtime.compile_path import int8_kernels
        assert int8_kernels({"avx2", "avx512_vnni"}) == "AVX512-VNNI" and int8_kernels({"avx2"}) is None
        ```
    """
    flags = cpu_flags() if flags is None else flags
    return next((name for flag, name in INT8_FLAGS if flag in flags), None)


def bfloat16_kernels(flags=None):
    """"AMX", "AVX512-BF16" or None: the bfloat16 matrix instructions oneDNN can use here.

    Example:
        ```python
        from keras_bert_lib.runtime.compile_path import bfloat16_kernels
        bfloat16_kernels({"avx512f", "avx512_bf16"})   # "AVX512-BF16"
        ```
    """
    flags = cpu_flags() if flags is None else flags
    return next((name for flag, name in BFLOAT16_FLAGS if flag in flags), None)


def warn_if_onednn_came_too_late(setting_before_import):
    """Warns, naming the fix, where TensorFlow was imported before `keras_bert_lib` with
    `TF_ENABLE_ONEDNN_OPTS` unset (`setting_before_import` is None) and left oneDNN off, which makes
    `predict` and training steps slower on CPUs without AVX512 (docs/text.md, "Speed"). An
    explicit `TF_ENABLE_ONEDNN_OPTS` (1 or 0) is the user's choice and is never warned about; so
    are other backends (JAX computes with XLA) and CPUs other than x86.

    Example:
        ```python
        from keras_bert_lib.runtime.compile_path import warn_if_onednn_came_too_late
        warn_if_onednn_came_too_late("0")   # an explicit setting: no warning
        ```
    """
    if (setting_before_import is not None or "tensorflow" not in sys.modules
            or keras.backend.backend() != "tensorflow"  # JAX computes with XLA; TensorFlow only feeds it
            or platform.machine().lower() not in ("x86_64", "amd64") or onednn_enabled() is not False):
        return
    warnings.warn(
        "TensorFlow was imported before keras_bert_lib, so its oneDNN CPU kernels stay off on this CPU and "
        "predict and training steps run slower. "
        "Import keras_bert_lib before tensorflow and keras, or export TF_ENABLE_ONEDNN_OPTS=1 "
        "(TF_ENABLE_ONEDNN_OPTS=0 keeps them off without this warning).", UserWarning, stacklevel=3)


def _accelerators():
    return [d for d in keras.distribution.list_devices() if not d.lower().startswith("cpu")]


# Below this width bfloat16's matmuls are too small for oneDNN's kernels to beat XLA's fusion
# (BERT-Tiny, H = 128, does not gain; all-MiniLM-L6-v2, H = 384, and BERT-Base do:
# python -m bench.pretrain_speed --dtypes, docs/benchmarks.md).
MIN_BFLOAT16_GRAPH_WIDTH = 256


def inference_streams(jit_compile, backend=None, accelerators=None):
    """How many batches `predict` runs at once (`models.length_buckets.in_flight`): 2 where the
    model runs in TensorFlow's graph on a CPU, 1 elsewhere.

    Two batches in flight keep the cores busy through what one batch leaves idle (the kernels
    between its matmuls, each call's dispatch); three or four were no faster than two on the CPUs
    measured (`python -m bench.in_flight`, docs/benchmarks.md). XLA (GPUs, TPUs, JAX,
    `jit_compile=True`) and the other backends keep one batch at a time; a `runtime` says its own
    (OpenVINO's `streams`).

    Example:
        ```python
        from keras_bert_lib.runtime.compile_path import inference_streams
        inference_streams(jit_compile=True)   # 1
        ```
    """
    backend = backend or keras.backend.backend()
    if backend != "tensorflow" or jit_compile:
        return 1
    return 1 if (_accelerators() if accelerators is None else accelerators) else 2


def choose_jit_compile(dtype="float32", flags=None, accelerators=None, backend=None, hidden_size=None,
                       widths_vary=False):
    """Whether a model of this dtype runs as one XLA program here, and why, as (bool, reason).

    - JAX: always XLA (it has no other compiler). PyTorch: never (Keras runs it eagerly).
    - TensorFlow on a GPU or TPU: XLA.
    - TensorFlow on a CPU, batches of varying width (`widths_vary`: the fine-tuning runs, each
      batch padded to its own longest, and a task model's `predict` and `evaluate` by length): the
      plain graph, which traces once for every width, where XLA compiles each width anew. A
      train step is no faster with XLA on a CPU, and each width costs a compile; predicting by
      length, the graph at each batch's exact width is as fast as XLA at buckets of 8, with one
      trace in place of a compile per bucket.
    - TensorFlow on a CPU, bfloat16 compute (`mixed_bfloat16`, `bfloat16`), a CPU with
      AVX512-BF16 or AMX and a model at least `MIN_BFLOAT16_GRAPH_WIDTH` (256) wide: the plain
      graph, where oneDNN runs the matmuls in bfloat16.
    - TensorFlow on a CPU otherwise: XLA (float32 is faster fused; without bfloat16 instructions
      bfloat16 is emulated and does not pay: use float32 there).

    `compile(jit_compile=True | False)` overrides the choice for a model.

    Args:
        dtype: a dtype policy or its name.
        flags: the CPU flags (default: this machine's, `cpu_flags()`).
        accelerators: list of GPU/TPU devices (default: Keras' `distribution.list_devices()`).
        backend: "tensorflow", "jax" or "torch" (default: Keras' backend).
        hidden_size: int or None. The model's width H; None: wide enough.
        widths_vary: bool. The choice is for batches that differ in width (a fine-tuning run's
            steps, `predict` by length).
    Example:
        ```python
        from keras_bert_lib.runtime.compile_path import choose_jit_compile
        choose_jit_compile("mixed_bfloat16", flags={"avx512_bf16"}, accelerators=[])
        # (False, "bfloat16 on a CPU with AVX512-BF16: TensorFlow's graph, where oneDNN ...")
        ```
    """
    backend = backend or keras.backend.backend()
    if backend == "jax":
        return True, "JAX compiles every program with XLA"
    if backend != "tensorflow":
        return False, f"Keras runs the {backend} backend eagerly"
    if (_accelerators() if accelerators is None else accelerators):
        return True, "XLA on a GPU or TPU"
    if widths_vary:
        return False, ("batches of varying width on a CPU: TensorFlow's graph traces once for every width, "
                       "where XLA compiles each width anew and runs no faster")
    policy = keras.dtype_policies.get(dtype) if isinstance(dtype, str) else dtype
    kernels = bfloat16_kernels(flags)
    if policy.compute_dtype == "bfloat16":
        if kernels and hidden_size is not None and hidden_size < MIN_BFLOAT16_GRAPH_WIDTH:
            return True, (f"bfloat16 at width {hidden_size} on a CPU with {kernels}: matmuls too small for oneDNN's "
                          f"bfloat16 kernels to beat XLA below width {MIN_BFLOAT16_GRAPH_WIDTH}")
        if kernels:
            return False, (f"bfloat16 on a CPU with {kernels}: TensorFlow's graph, where oneDNN runs the "
                           "matmuls in bfloat16 (XLA's CPU backend has no bfloat16 matmul kernels)")
        return True, ("bfloat16 on a CPU without bfloat16 instructions: emulated, slower than float32 "
                      "(use float32 here); XLA as for float32")
    return True, f"{policy.compute_dtype} on a CPU: XLA fuses the graph (faster than TensorFlow's graph)"


def bfloat16_pays(hidden_size=None, flags=None, accelerators=None, backend=None):
    """Whether bfloat16 beats float32 here: TensorFlow on a CPU (no GPU or TPU) with AVX512-BF16
    or AMX, for a model at least `MIN_BFLOAT16_GRAPH_WIDTH` wide (`hidden_size` None: wide enough).
    The rule behind the "auto" of `choose_inference_dtype` and `choose_training_dtype`.

    Example:
        ```python
        from keras_bert_lib.runtime.compile_path import bfloat16_pays
        bfloat16_pays(384, flags={"avx512_bf16"}, accelerators=[], backend="tensorflow")   # True
        ```
    """
    backend = backend or keras.backend.backend()
    accelerators = _accelerators() if accelerators is None else accelerators
    wide = hidden_size is None or hidden_size >= MIN_BFLOAT16_GRAPH_WIDTH
    return backend == "tensorflow" and not accelerators and bfloat16_kernels(flags) is not None and wide


def accelerator_has_bfloat16(backend=None):
    """Whether this process's first accelerator computes in bfloat16 at full rate: a TPU, or an
    NVIDIA GPU of compute capability 8.0 or more (Ampere, Hopper, Blackwell), as the backend sees it.

    Example:
        ```python
        from keras_bert_lib.runtime.compile_path import accelerator_has_bfloat16
        accelerator_has_bfloat16()   # False (on a CPU-only machine)
        ```
    """
    backend = backend or keras.backend.backend()
    if backend == "jax":
        import jax

        device = jax.devices()[0]
        if device.platform == "tpu":
            return True
        return device.platform == "gpu" and float(getattr(device, "compute_capability", 0) or 0) >= 8.0
    if backend == "torch":
        import torch

        return torch.cuda.is_available() and torch.cuda.get_device_capability(0) >= (8, 0)
    import tensorflow as tf

    if tf.config.list_logical_devices("TPU"):
        return True
    gpus = tf.config.list_physical_devices("GPU")
    return bool(gpus) and tuple(tf.config.experimental.get_device_details(gpus[0]).get(
        "compute_capability", (0, 0))) >= (8, 0)


def choose_inference_dtype(setting, model_dtype="float32", hidden_size=None, flags=None, accelerators=None,
                           backend=None, accelerator_bfloat16=None):
    """The dtype policy a model of `model_dtype` predicts in under `setting`, or None for its own.

    - "auto": "bfloat16" (weights stored in bfloat16, cast once) for a float32 or
      `mixed_bfloat16` model where `bfloat16_pays`, where oneDNN's bfloat16 kernels make
      inference 1.5 times faster (cosine to float32 at least 0.999 on real text, docs/text.md),
      and on an accelerator with bfloat16 (`accelerator_has_bfloat16`: TPUs, NVIDIA GPUs from
      Ampere on) on every backend; None (the model's own dtype) everywhere else.
    - None: the model's own dtype policy.
    - a policy name ("bfloat16", "float32", ...): that one.

    Example:
        ```python
        from keras_bert_lib.runtime.compile_path import choose_inference_dtype
        choose_inference_dtype("auto", "float32", 384, flags={"avx512_bf16"}, accelerators=[], backend="tensorflow")
        # "bfloat16"
        ```
    """
    policy = keras.dtype_policies.get(model_dtype) if isinstance(model_dtype, str) else model_dtype
    if setting == "auto":
        accelerators = _accelerators() if accelerators is None else accelerators
        if accelerators and accelerator_bfloat16 is None:
            accelerator_bfloat16 = accelerator_has_bfloat16(backend)
        pays = bfloat16_pays(hidden_size, flags, accelerators, backend) or bool(accelerators and accelerator_bfloat16)
        if policy.variable_dtype != "float32" or policy.compute_dtype not in ("float32", "bfloat16") or not pays:
            return None
        setting = "bfloat16"
    if setting is None:
        return None
    try:
        name = keras.dtype_policies.get(setting).name
    except ValueError as e:
        raise ValueError(f"inference_dtype={setting!r}: use 'auto', None (the model's own) or a Keras dtype "
                         f"policy. {e}") from None
    return None if name == policy.name else name


def choose_training_dtype(setting, hidden_size=None, flags=None, accelerators=None, backend=None):
    """The dtype policy a run trains in: `setting` itself, or for "auto" `mixed_bfloat16` where
    `bfloat16_pays`, float32 elsewhere.

    Example:
        ```python
        from keras_bert_lib.runtime.compile_path import choose_training_dtype
        choose_training_dtype("auto", 384, flags={"avx512_bf16"}, accelerators=[], backend="tensorflow")
        # "mixed_bfloat16"
        ```
    """
    if setting != "auto":
        return setting
    return "mixed_bfloat16" if bfloat16_pays(hidden_size, flags, accelerators, backend) else "float32"


def describe(dtype="float32", hidden_size=None):
    """One line for `keras-bert summary`: the path a model of `dtype` takes here and why.

    Example:
        ```python
        from keras_bert_lib.runtime.compile_path import describe
        print(describe("mixed_bfloat16"))
        ```
    """
    jit, reason = choose_jit_compile(dtype, hidden_size=hidden_size)
    cpu = _cpu_name()
    return f"compiled path: {'XLA' if jit else graph_kernels()} — {reason} [{cpu}]"


def graph_kernels():
    """How TensorFlow's graph runs here, for the summaries: "TensorFlow graph (oneDNN)", or
    "TensorFlow graph (Eigen; oneDNN off)" where TensorFlow came before `import keras_bert_lib`.

    Example:
        ```python
        from keras_bert_lib.runtime.compile_path import graph_kernels
        graph_kernels()   # "TensorFlow graph (oneDNN)"
        ```
    """
    return "TensorFlow graph (oneDNN)" if onednn_enabled() is not False else "TensorFlow graph (Eigen; oneDNN off)"


def model_width(model):
    """The hidden size H of an encoder or of a model holding one (`.encoder`), or None.

    Example:
        ```python
        from keras_bert_lib import bert_tiny
        from keras_bert_lib.runtime.compile_path import model_width
        model_width(bert_tiny())   # 128
        ```
    """
    config = getattr(getattr(model, "encoder", model), "config", None)
    return getattr(config, "hidden_size", None)


def _cpu_name():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            return next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "CPU")
    except OSError:
        return "CPU"


def compiled_call(model):
    """`model` on a batch of ids as one compiled program per input shape, its outputs left where
    they were computed (on the GPU or TPU: no copy to NumPy per call, as `predict_on_batch`
    makes). The fast path for serving loops and benchmarks that feed arrays already on the device.

    - JAX: `jax.jit` of the model's `stateless_call`, fed the variables' current values each
      call (so `fit` or `load_weights` afterwards is seen, with no recompilation);
    - TensorFlow: a `tf.function` with XLA;
    - PyTorch: the eager call under `torch.no_grad()`.

    Args:
        model: a Keras model (an encoder or a task model) that takes the id dict.
    Returns:
        a function ids → the model's outputs, as backend tensors.
    Example:
        ```python
        import numpy as np
        from keras_bert_lib import bert_tiny
        from keras_bert_lib.runtime.compile_path import compiled_call
        encoder = bert_tiny(num_hidden_layers=1)
        call = compiled_call(encoder)
        ids = {"token_ids": np.ones((2, 8), "int32"), "segment_ids": np.zeros((2, 8), "int32"),
               "padding_mask": np.ones((2, 8), "int32")}
        call(ids)["pooled_output"].shape   # (2, 128)
        ```
    """
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        jitted = jax.jit(lambda trainable, other, ids: model.stateless_call(trainable, other, ids, training=False)[0])
        return lambda ids: jitted([v.value for v in model.trainable_variables],
                                  [v.value for v in model.non_trainable_variables], ids)
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.function(lambda ids: model(ids, training=False), jit_compile=True)
    import torch

    def call(ids):
        with torch.no_grad():
            return model(ids, training=False)

    return call


def graph_call(model):
    """`model` on one batch of ids, as `predict` runs it, with its outputs as NumPy arrays, and how
    many first calls must run alone (not beside another thread's).

    In TensorFlow's graph (Keras' choice on a CPU where widths vary) it is one TensorFlow function
    traced once, at its first batch, for any batch size and width: Keras' `predict_on_batch`
    traces at the first batch's shape and again, at the next shape, for any shape: two traces
    where one does, and a trace of a model costs more than running it on a batch. The function is
    kept on the model, so a later `predict` reuses its trace; it is safe to call from several
    threads. Elsewhere (XLA, eager, JAX or PyTorch, a `tf.distribute` strategy, a model class
    with its own `predict_step`) it is Keras' `predict_on_batch`, two calls alone.

    Example:
        ```python
        import numpy as np
        from keras_bert_lib import bert_tiny
        from keras_bert_lib.runtime.compile_path import graph_call
        encoder = bert_tiny(num_hidden_layers=1)
        encoder.jit_compile = False
        call, alone = graph_call(encoder)
        for width in (5, 9, 3):
            ids = {"token_ids": np.ones((2, width), "int32"), "segment_ids": np.zeros((2, width), "int32"),
                   "padding_mask": np.ones((2, width), "int32")}
            assert call(ids)["sequence_output"].shape == (2, width, 128)
        assert (alone, call.function.experimental_get_tracing_count()) == (1, 1)
        ```
    """
    if (keras.backend.backend() != "tensorflow" or model.run_eagerly or model.jit_compile or runs_under_strategy(model)
            or type(model).predict_step is not keras.Model.predict_step):  # a subclass's own predict step: Keras'
        return (lambda batch: keras.Model.predict_on_batch(model, batch)), 2
    call = getattr(model, "_graph_call", None)
    if call is None:
        call = _traced_once(model)
        object.__setattr__(model, "_graph_call", call)  # not tracked, and not saved with the model
    return call, 1


def inference_function(model):
    """`model(x, training=False)` as one TensorFlow function, kept on the model (not tracked, not
    saved): `predict` (`graph_call`) and held-out passes (`evaluate_in_flight`) both run it and
    trace it at every dimension unknown (`any_shape`), so a model's forward pass is traced once
    between them, whatever the widths and batch sizes of its data.

    Example:
        ```python
        import numpy as np
        from keras_bert_lib import bert_tiny
        from keras_bert_lib.runtime.compile_path import any_shape, inference_function
        encoder = bert_tiny(num_hidden_layers=1)
        ids = {k: np.ones((2, 5), "int32") for k in ("token_ids", "segment_ids", "padding_mask")}
        inference_function(encoder).get_concrete_function(any_shape(ids))
        inference_function(encoder)({k: v[:, :3] for k, v in ids.items()})["pooled_output"].shape   # (2, 128)
        assert inference_function(encoder).experimental_get_tracing_count() == 1
        ```
    """
    import tensorflow as tf

    function = getattr(model, "_inference_function", None)
    if function is None:
        function = tf.function(lambda x: model(x, training=False))
        object.__setattr__(model, "_inference_function", function)
    return function


def any_shape(structure):
    """`tf.TensorSpec`s of `structure`'s arrays, tensors or specs, each with its rank and dtype and
    every dimension unknown (other specs as they are).

    Example:
        ```python
        import numpy as np
        from keras_bert_lib.runtime.compile_path import any_shape
        any_shape({"token_ids": np.ones((2, 5), "int32")})["token_ids"].shape.as_list()   # [None, None]
        ```
    """
    import tensorflow as tf

    def relaxed(value):
        if isinstance(value, tf.TypeSpec) and not isinstance(value, tf.TensorSpec):
            return value
        dtype = tf.as_dtype(value.dtype)
        return tf.TensorSpec((None,) * len(value.shape), dtype)

    return tf.nest.map_structure(relaxed, structure)


def _traced_once(model):
    """`graph_call`'s function: `inference_function`, traced once for each set of dtypes and ranks."""
    function = inference_function(model)
    traced, lock = set(), threading.Lock()

    def call(ids):
        ids = {name: np.asarray(value) for name, value in ids.items()}
        signature = tuple((name, value.dtype.str, value.ndim) for name, value in sorted(ids.items()))
        if signature not in traced:
            with lock:  # one trace at any shape: every later batch dispatches to it
                if signature not in traced:
                    function.get_concrete_function(any_shape(ids))
                    traced.add(signature)
        return keras.tree.map_structure(lambda t: t.numpy(), function(ids))

    call.function = function
    return call
