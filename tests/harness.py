"""One test harness for every layer and model: a spec per class, one test id per check.

A spec names the class, non-default constructor arguments, the call inputs (the first is passed
positionally, the rest as keywords; models take one dict) and the padding mask. Each check is a
plain function that fails with the property it names.
"""

import dataclasses
import inspect
import json
import os
import subprocess
import sys
import tempfile
import textwrap

import keras
import numpy as np
import tensorflow as tf

RNG_SEED = 0


@dataclasses.dataclass
class LayerSpec:
    cls: type
    # A dict, or a callable(**extra) -> dict that places `extra` (e.g. dtype) itself, for
    # arguments that are layers (a head's token embedding, a pretrainer's encoder).
    init_kwargs: object
    inputs: dict  # name -> np.ndarray; the first is positional (layers) unless dict_input
    padding_mask: np.ndarray | None = None
    expected_output_shape: tuple | dict | None = None
    expected_num_trainable_weights: int | None = None
    output_dtype: str | None = None  # None: the compute dtype; heads return "float32"
    stochastic: bool = False  # True when training=True must change the output (dropout > 0)
    dict_input: bool = False  # models: call(inputs_dict), the mask inside it
    fresh_process: bool = False  # models: load .keras and SavedModel in a fresh interpreter, not in this one


# --- input helpers --------------------------------------------------------------------------
def hidden_states(batch, length, hidden, seed=RNG_SEED):
    return np.random.default_rng(seed).normal(size=(batch, length, hidden)).astype("float32")


def token_ids(batch, length, vocab, seed=RNG_SEED):
    return np.random.default_rng(seed).integers(1, vocab, size=(batch, length)).astype("int32")


def right_padded(lengths, length=None):
    length = length or max(lengths)
    return np.array([[1] * n + [0] * (length - n) for n in lengths], "int32")


# --- plumbing -------------------------------------------------------------------------------
def _kwargs(spec, **extra):
    if callable(spec.init_kwargs):
        return spec.init_kwargs(**extra)
    return {**spec.init_kwargs, **extra}


def _make(spec, **extra):
    return spec.cls(**_kwargs(spec, **extra))


def checks_for(spec):
    """The checks that apply: padding invariance needs a padding mask; a fresh process is for
    the specs that ask for one, and there it replaces the in-process file checks (it makes both
    files and compares each at their tolerances)."""
    left_out = {check_keras_file, check_saved_model} if spec.fresh_process else {check_fresh_process}
    if spec.padding_mask is None:
        left_out.add(check_padding_invariance)
    return [c for c in LAYER_CHECKS if c not in left_out]


def _call(spec, layer, inputs, padding_mask, **kw):
    if spec.dict_input:
        feed = dict(inputs)
        if padding_mask is not None:
            feed["padding_mask"] = padding_mask
        return layer(feed, **kw)
    first, *rest = inputs
    extra = {k: inputs[k] for k in rest}
    if padding_mask is not None:
        extra["padding_mask"] = padding_mask
    return layer(inputs[first], **extra, **kw)


def _numpy(outputs):
    return [np.asarray(keras.ops.convert_to_numpy(o), dtype="float32")
            for o in keras.tree.flatten(outputs)]


def _assert_close(actual, expected, atol, what):
    for i, (a, e) in enumerate(zip(_numpy(actual), _numpy(expected))):
        assert a.shape == e.shape, f"{what}: output {i} has shape {a.shape}, expected {e.shape}"
        diff = float(np.max(np.abs(a - e))) if a.size else 0.0
        assert diff <= atol, f"{what}: output {i} differs by {diff:.3g} (> {atol})"


def _built(spec, **extra):
    layer = _make(spec, **extra)
    _call(spec, layer, spec.inputs, spec.padding_mask)
    return layer


def _wrap(spec, layer):
    """A functional model with one named input per call input, for saving and exporting."""
    if spec.dict_input:
        return layer
    arrays = dict(spec.inputs)
    if spec.padding_mask is not None:
        arrays["padding_mask"] = spec.padding_mask
    sym = {k: keras.Input(v.shape[1:], dtype=str(v.dtype), name=k) for k, v in arrays.items()}
    mask = sym.pop("padding_mask", None)
    return keras.Model(sym | ({} if mask is None else {"padding_mask": mask}),
                       _call(spec, layer, sym, mask))


def _feed(spec):
    feed = dict(spec.inputs)
    if spec.padding_mask is not None:
        feed["padding_mask"] = spec.padding_mask
    return feed


def _run_fresh(script):
    """Runs a script in a new interpreter that can import keras_bert_lib but not the tests."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    # Once the script is through, the interpreter's teardown would free TensorFlow for a second.
    script = textwrap.dedent(script) + "\nimport os as _os\n_os._exit(0)\n"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True,
                            text=True, cwd=tempfile.gettempdir(), env=env, timeout=300)
    assert result.returncode == 0, f"fresh process failed:\n{result.stderr[-3000:]}"


# --- the checks -----------------------------------------------------------------------------
def check_config_round_trip(spec):
    layer = _built(spec)
    config = layer.get_config()
    as_json = json.dumps(config, sort_keys=True, default=str)
    revived = spec.cls.from_config(config)
    assert json.dumps(revived.get_config(), sort_keys=True, default=str) == as_json, \
        "from_config(get_config()) changed the config"
    again = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer))
    assert type(again) is spec.cls, f"deserialized a {type(again)}, not a {spec.cls}"
    assert json.dumps(again.get_config(), sort_keys=True, default=str) == as_json, \
        "deserialize(serialize(layer)) changed the config"
    params = inspect.signature(spec.cls.__init__).parameters
    # BertEncoder's `config` (an EncoderConfig) is saved as its fields, flat, as its keyword arguments.
    shape = getattr(layer, "config", None)
    flat = {f.name for f in dataclasses.fields(shape)} if dataclasses.is_dataclass(shape) else set()
    missing = [p for p in params if p not in ("self", "kwargs") and p not in config
               and not (p == "config" and flat and flat <= set(config))]
    assert not missing, f"__init__ arguments missing from get_config(): {missing}"
    for name, value in _kwargs(spec).items():
        default = params[name].default if name in params else inspect.Parameter.empty
        if default is not inspect.Parameter.empty and not isinstance(value, keras.layers.Layer):
            assert value != default, f"spec passes the default {name}={value!r}; test a non-default"
        if name in params and not isinstance(value, keras.layers.Layer):
            assert config[name] == value, f"get_config()[{name!r}] is {config[name]!r}, but {value!r} was given"


def check_build(spec):
    eager = _built(spec)
    symbolic = _make(spec)
    sym_inputs = {k: keras.KerasTensor((None, *v.shape[1:]), dtype=str(v.dtype))
                  for k, v in spec.inputs.items()}
    sym_mask = (None if spec.padding_mask is None
                else keras.KerasTensor((None, spec.padding_mask.shape[1]), dtype="int32"))
    spec_out = _call(spec, symbolic, sym_inputs, sym_mask)
    assert len(symbolic.weights) == len(eager.weights), \
        f"symbolic build made {len(symbolic.weights)} weights, eager {len(eager.weights)}"
    if spec.expected_num_trainable_weights is not None:
        assert len(eager.trainable_weights) == spec.expected_num_trainable_weights, \
            f"{len(eager.trainable_weights)} trainable weights, expected {spec.expected_num_trainable_weights}"
    eager_out = _call(spec, eager, spec.inputs, spec.padding_mask)
    for s, e in zip(keras.tree.flatten(spec_out), keras.tree.flatten(eager_out)):
        assert tuple(s.shape[1:]) == tuple(e.shape[1:]), f"symbolic shape {s.shape} != eager {e.shape}"
        assert keras.backend.standardize_dtype(s.dtype) == keras.backend.standardize_dtype(e.dtype), \
            f"symbolic dtype {s.dtype} != eager {e.dtype}"
    if spec.expected_output_shape is not None:
        shapes = keras.tree.map_structure(lambda t: tuple(t.shape), eager_out)
        assert shapes == spec.expected_output_shape, f"output shape {shapes}, expected {spec.expected_output_shape}"


def check_keras_file(spec):
    model = _wrap(spec, _built(spec))
    expected = model(_feed(spec), training=False)
    with tempfile.TemporaryDirectory() as tmp:
        model.save(os.path.join(tmp, "model.keras"))
        loaded = keras.saving.load_model(os.path.join(tmp, "model.keras"), safe_mode=True)
        _assert_close(loaded(_feed(spec), training=False), expected, 1e-6, ".keras round trip")


def check_saved_model(spec):
    model = _wrap(spec, _built(spec))
    expected = model(_feed(spec), training=False)
    with tempfile.TemporaryDirectory() as tmp:
        model.export(tmp + "/sm", format="tf_saved_model", verbose=False)
        reloaded = tf.saved_model.load(tmp + "/sm")  # keep a reference: it owns the variables
        _assert_close(reloaded.serve(_feed(spec)), expected, 1e-5, "SavedModel serve")


def check_fresh_process(spec):
    """The SavedModel serves in a new interpreter that has imported nothing but TensorFlow, and
    then the .keras file loads there with only keras_bert_lib imported (not the tests)."""
    model = _wrap(spec, _built(spec))
    expected = model(_feed(spec), training=False)
    with tempfile.TemporaryDirectory() as tmp:
        model.save(os.path.join(tmp, "model.keras"))
        model.export(os.path.join(tmp, "sm"), format="tf_saved_model", verbose=False)
        np.savez(os.path.join(tmp, "feed.npz"), **_feed(spec))
        _run_fresh(f"""
            import sys, numpy as np, tensorflow as tf
            feed = dict(np.load({os.path.join(tmp, "feed.npz")!r}))
            reloaded = tf.saved_model.load({os.path.join(tmp, "sm")!r})  # owns the variables
            served = reloaded.serve(feed)
            assert not any(m.startswith(("keras_bert_lib", "tests", "harness")) for m in sys.modules)
            np.savez({os.path.join(tmp, "served.npz")!r}, **{{k: v.numpy() for k, v in served.items()}})
            import keras, keras_bert_lib
            model = keras.saving.load_model({os.path.join(tmp, "model.keras")!r}, safe_mode=True)
            out = keras.tree.flatten(model(feed, training=False))
            np.savez({os.path.join(tmp, "out.npz")!r}, *[np.asarray(o, "float32") for o in out])
        """)
        served = dict(np.load(os.path.join(tmp, "served.npz")))
        _assert_close({k: served[k] for k in expected}, expected, 1e-5, "SavedModel in a fresh process")
        out = np.load(os.path.join(tmp, "out.npz"))
        _assert_close([out[f"arr_{i}"] for i in range(len(out.files))], expected, 1e-6,
                      ".keras loaded in a fresh process")


def check_dtype_policies(spec):
    reference = _built(spec)
    expected = _call(spec, reference, spec.inputs, spec.padding_mask, training=False)
    for policy in ("mixed_float16", "mixed_bfloat16"):
        layer = _built(spec, dtype=policy)
        layer.set_weights(reference.get_weights())
        out = _call(spec, layer, spec.inputs, spec.padding_mask, training=False)
        want = spec.output_dtype or keras.DTypePolicy(policy).compute_dtype
        for o in keras.tree.flatten(out):
            assert keras.backend.standardize_dtype(o.dtype) == want, f"{policy}: output {o.dtype}, expected {want}"
        for v in layer.weights:
            if "float" in v.dtype:
                assert v.dtype == "float32", f"{policy}: variable {v.path} is {v.dtype}"
        assert all(np.isfinite(a).all() for a in _numpy(out)), f"{policy}: NaN or Inf in the output"
        _assert_close(out, expected, 5e-2, f"{policy} against float32")


def check_xla(spec):
    layer = _built(spec)
    model = _wrap(spec, layer)
    feed = _feed(spec)
    eager = model(feed, training=False)
    compiled = tf.function(lambda f: model(f, training=False), jit_compile=True)(feed)
    _assert_close(compiled, eager, 1e-5, "XLA against eager")
    if not model.trainable_variables:  # e.g. sinusoidal positions: nothing to train
        return

    optimizer = keras.optimizers.SGD(0.1)
    optimizer.build(model.trainable_variables)

    @tf.function(jit_compile=True)
    def train_step(f):
        with tf.GradientTape() as tape:
            loss = sum(tf.reduce_mean(tf.cast(o, "float32") ** 2) for o in keras.tree.flatten(model(f, training=True)))
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        return loss

    before = [v.numpy().copy() for v in model.trainable_variables]
    assert np.isfinite(train_step(feed).numpy()), "XLA train step gave a non-finite loss"
    changed = [not np.array_equal(b, v.numpy()) for b, v in zip(before, model.trainable_variables)]
    assert any(changed), "an XLA train step changed no weight"


def check_padding_invariance(spec):
    layer = _built(spec)
    lengths = spec.padding_mask.sum(axis=1)
    T = spec.padding_mask.shape[1]
    rng = np.random.default_rng(RNG_SEED + 1)

    def positional(out_list):
        return [o.ndim >= 2 and o.shape[1] == T for o in out_list]

    base = _numpy(_call(spec, layer, spec.inputs, spec.padding_mask, training=False))
    is_pos = positional(base)
    k = 3
    garbage = {}
    for name, v in spec.inputs.items():
        if v.ndim >= 2 and v.shape[1] == T:
            pad_shape = (v.shape[0], k, *v.shape[2:])
            noise = (rng.integers(0, int(v.max()) + 1, pad_shape) if v.dtype.kind in "iu"
                     else rng.normal(size=pad_shape) * 10)
            padded = np.concatenate([v, noise.astype(v.dtype)], axis=1)
            # Garbage also at the padded positions inside the original length.
            inside = ~spec.padding_mask.astype(bool)
            fill = (rng.integers(0, int(v.max()) + 1, v.shape) if v.dtype.kind in "iu"
                    else rng.normal(size=v.shape) * 10).astype(v.dtype)
            padded[:, :T][inside] = fill[inside]
            garbage[name] = padded
        else:
            garbage[name] = v
    mask = np.concatenate([spec.padding_mask, np.zeros((len(lengths), k), "int32")], axis=1)
    noisy = _numpy(_call(spec, layer, garbage, mask, training=False))
    for b, n in enumerate(lengths):
        row = {name: (v[b:b + 1, :n] if v.ndim >= 2 and v.shape[1] == T
                      else v[b:b + 1] if v.shape[0] == len(lengths) else v)  # a table, not a batch: whole
               for name, v in spec.inputs.items()}
        alone = _numpy(_call(spec, layer, row, np.ones((1, n), "int32"), training=False))
        for i, pos in enumerate(is_pos):
            sl = (slice(b, b + 1), slice(0, n)) if pos else (slice(b, b + 1),)
            for got, what in ((base[i][sl], "right-padded"), (noisy[i][sl], "padded with garbage")):
                diff = float(np.max(np.abs(got - alone[i])))
                assert diff <= 1e-5, f"row {b}, output {i}: {what} differs from unpadded by {diff:.3g}"
    if not spec.dict_input and "padding_mask" in inspect.signature(layer.call).parameters:
        ones = np.ones_like(spec.padding_mask)
        _assert_close(_call(spec, layer, spec.inputs, ones, training=False),
                      _call(spec, layer, spec.inputs, None, training=False), 1e-6,
                      "an all-ones mask against padding_mask=None")


def check_gradients(spec):
    layer = _built(spec)
    rng = np.random.default_rng(RNG_SEED + 2)
    with tf.GradientTape() as tape:
        outputs = keras.tree.flatten(_call(spec, layer, spec.inputs, spec.padding_mask, training=True))
        loss = sum(tf.reduce_sum(tf.cast(o, "float32") * rng.normal(size=o.shape).astype("float32"))
                   for o in outputs if o.dtype.is_floating)
    grads = tape.gradient(loss, layer.trainable_variables)
    for v, g in zip(layer.trainable_variables, grads):
        assert g is not None, f"no gradient reaches {v.path}"
        assert np.any(tf.convert_to_tensor(g).numpy() != 0), f"the gradient of {v.path} is all zeros"


def check_inference_deterministic(spec):
    layer = _built(spec)
    first = _call(spec, layer, spec.inputs, spec.padding_mask, training=False)
    _assert_close(_call(spec, layer, spec.inputs, spec.padding_mask, training=False), first, 0.0,
                  "two calls with training=False")
    train = _numpy(_call(spec, layer, spec.inputs, spec.padding_mask, training=True))
    same = all(np.array_equal(a, b) for a, b in zip(train, _numpy(first)))
    if spec.stochastic:
        assert not same, "training=True with dropout > 0 did not change the output"
    else:
        assert same, "training=True changed the output of a layer without dropout"


LAYER_CHECKS = [
    check_config_round_trip,
    check_build,
    check_keras_file,
    check_saved_model,
    check_fresh_process,
    check_dtype_policies,
    check_xla,
    check_padding_invariance,
    check_gradients,
    check_inference_deterministic,
]
