"""The one set of overrides of Keras' entry points our models have: each is Keras' own after the
model's preprocessing and the input checks, and a task model's `predict` and `evaluate` go by
length on its runtime."""

import contextlib

import keras
import numpy as np

from keras_bert_lib.keras_internals import (
    ResolvesAutoJitCompile,
    arrays_without_autotune,
    fit_held_out_batches,
    is_fit_held_out_pass,
)
from keras_bert_lib.runtime.compile_path import choose_jit_compile, graph_call, inference_streams
from keras_bert_lib.runtime.evaluate_in_flight import evaluating_in_flight
from keras_bert_lib.runtime.input_checks import check_inputs, checked_dataset, concrete, is_tf_dataset
from keras_bert_lib.runtime.length_buckets import LengthBatches, predict_by_length


class EntryPoints(ResolvesAutoJitCompile):
    """Mixin for our keras.Models. Every way in — a call on values, `predict`, `predict_on_batch`,
    `fit`, `evaluate`, `train_on_batch`, `test_on_batch` — is Keras' own after two steps:

    1. the model's preprocessing, `_input_ids(x)` and `_targets(y)`: as they are here; a task model
       tokenizes raw strings and maps class names;
    2. `check_inputs` on the id dict, on the host, before the compiled program (where a bad id is
       silent). A tf.data.Dataset is checked by a map in its own pipeline; Python generators and
       `PyDataset`s are not checked.

    Where batches come at their own widths (`_widths_vary`: the task models), `predict` and
    `evaluate` go by length — rows of similar length batched together, each batch cut to its
    longest row, the results in the caller's order — with two batches in flight in TensorFlow's
    graph on a CPU, `predict` on `inference_model()` (a bfloat16 copy where it pays) or on the
    model's `runtime`. `steps`, `callbacks` or a dataset take Keras' own loop, on this model.
    Arrays reach Keras' loops with tf.data's autotuning off (`arrays_without_autotune`): Keras'
    own batches, without TensorFlow's idle wait at each epoch's end.

    The model defines `_input_config()` (its EncoderConfig) and `_extra_inputs` (index inputs).
    Keras' `jit_compile="auto"` is resolved by the runtime's rule (`compile_path.choose_jit_compile`)
    from the model's dtype and width: the model classes themselves do not read the machine.
    `fit` and `train_on_batch` build the optimizer's slots before the first step is traced (on
    TensorFlow without a strategy Keras builds them inside that trace, and the new variables make
    TensorFlow trace the whole step twice). A `.keras` file of a compiled model loads compiled,
    with its optimizer's state where the file holds it (`models.save_model_file` leaves it out):
    Keras skips `compile_from_config` for models that define their own `compile`, as ours do.

    Example:
        ```python
        import numpy as np
        from keras_bert_lib import bert_tiny
        encoder = bert_tiny()
        bad = {"token_ids": np.array([[101, 40000]], "int32"), "segment_ids": np.zeros((1, 2), "int32"),
               "padding_mask": np.ones((1, 2), "int32")}
        try:
            encoder.predict_on_batch(bad)
        except ValueError as e:
            print(e)   # token_ids holds 40000 at [0, 1]; valid ids are 0 … 30521 (vocab_size 30522).
        ```
    """

    _extra_inputs = ()
    _widths_vary = False  # True where batches come at their own widths: predict and evaluate go by length
    _padding_fill = 0.0  # what `predict` by length puts at padded positions of outputs with a token axis
    runtime = None  # what `predict` by length runs batches on (None: Keras); see TaskModel

    # --- the model's hooks ----------------------------------------------------------------------
    def _input_ids(self, x):
        """The model's inputs for `x` (an id dict here; a task model takes raw strings too)."""
        return x

    def _targets(self, y):
        return y

    def inference_model(self):
        """The model `predict` runs by length: this one (a task model may run a copy in another dtype)."""
        return self

    def _prepare_fit(self, x, args, kwargs):
        """Before `fit`'s first step (`x` and the call's other arguments as `fit` got them)."""
        self._build_optimizer()

    def _build_optimizer(self):
        """The optimizer's slots, built outside the first traced step."""
        optimizer = getattr(self, "optimizer", None)
        if keras.backend.backend() == "tensorflow" and self.built and optimizer is not None and not optimizer.built:
            with self.distribute_strategy.scope():
                optimizer.build(self.trainable_variables)

    # --- the entry points -------------------------------------------------------------------------
    def __call__(self, inputs, *args, **kwargs):
        if not any(isinstance(t, keras.KerasTensor) for t in keras.tree.flatten(inputs)):  # values, not symbols
            inputs = self._input_ids(inputs)
            self._check(inputs)
        return super().__call__(inputs, *args, **kwargs)

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        """Keras' `predict` after the model's preprocessing and the input checks. Where the model's
        batches come at their own widths (the task models), by length: rows sorted by token count,
        batched with rows of similar length, each batch cut to its longest row (rounded up to
        `_bucket_multiple`), the results in the caller's order; outputs with a token axis are
        padded back to the input's width with `_padding_fill` (0, or span logits' masked value) at
        every padded position. It runs `inference_model()` (a bfloat16 copy on CPUs with
        AVX512-BF16 or AMX), two batches at once in TensorFlow's graph on a CPU, or each batch on
        the model's `runtime` (`export.OpenVINORuntime()`). `steps`, `callbacks` or a dataset take
        Keras' own loop, at the width the data has."""
        x = self._check(self._input_ids(x))
        if isinstance(x, dict) and id_rows(x) == 0:  # Keras cannot run zero steps: one row's outputs, cut to none
            width = max(*np.shape(x["token_ids"])[1:2], 1)
            one = {k: np.full((1, width), int(k == "padding_mask"), "int32") for k in x}
            return keras.tree.map_structure(lambda a: a[:0], super().predict(one, verbose=0))
        if self._widths_vary and steps is None and not callbacks and isinstance(x, dict) and "padding_mask" in x:
            return self._predict_by_length(x, batch_size or 32, verbose)
        with arrays_without_autotune():
            return super().predict(x, batch_size=batch_size, verbose=verbose, steps=steps, callbacks=callbacks)

    def predict_on_batch(self, x):
        return super().predict_on_batch(self._check(self._input_ids(x)))

    def fit(self, x=None, y=None, *args, **kwargs):
        """Keras' `fit` after the model's preprocessing and the checks; held-out id rows with
        array targets in `validation_data` go by length, as `evaluate` takes them."""
        x, y = self._check(self._input_ids(x)), self._targets(y)
        if kwargs.get("validation_data") is not None:
            size = kwargs.get("validation_batch_size") or kwargs.get("batch_size") or (args[0] if args else None)
            kwargs["validation_data"] = self._held_out(kwargs["validation_data"], size)
        self._prepare_fit(x, args, kwargs)
        with arrays_without_autotune():
            return super().fit(x, y, *args, **kwargs)

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None, steps=None,
                 callbacks=None, return_dict=False, **kwargs):
        """Keras' `evaluate` after the model's preprocessing and the checks; by length, with the
        next batch's forward pass running while this one's counts (`evaluate_in_flight`), where the
        model's batches come at their own widths: Keras' own numbers."""
        if is_fit_held_out_pass(kwargs):  # fit's held-out pass: prepared and checked by fit
            in_flight = evaluating_in_flight(self, fit_held_out_batches(self)) if self._widths_vary else None
            with in_flight or contextlib.nullcontext():
                return super().evaluate(x, y, batch_size=batch_size, verbose=verbose, sample_weight=sample_weight,
                                        steps=steps, callbacks=callbacks, return_dict=return_dict, **kwargs)
        x, y = self._check(self._input_ids(x)), self._targets(y)
        data = self._length_batches(x, y, sample_weight, batch_size) if steps is None else None
        if data is not None:
            with evaluating_in_flight(self, len(data)):
                return super().evaluate(data, verbose=verbose, callbacks=callbacks, return_dict=return_dict,
                                        **kwargs)
        with arrays_without_autotune():
            return super().evaluate(x, y, batch_size=batch_size, verbose=verbose, sample_weight=sample_weight,
                                    steps=steps, callbacks=callbacks, return_dict=return_dict, **kwargs)

    def train_on_batch(self, x, y=None, *args, **kwargs):
        x = self._check(self._input_ids(x))
        self._build_optimizer()
        return super().train_on_batch(x, self._targets(y), *args, **kwargs)

    def test_on_batch(self, x, y=None, *args, **kwargs):
        return super().test_on_batch(self._check(self._input_ids(x)), self._targets(y), *args, **kwargs)

    # --- Keras' compile state in a .keras file --------------------------------------------------
    def get_compile_config(self):
        config = super().get_compile_config()
        optimizer = getattr(self, "optimizer", None)
        if config:  # compiled: whether the file holds the optimizer's slots, for compile_from_config
            config = {**config, "optimizer_built": bool(optimizer is not None and optimizer.built)}
        if config and optimizer is not None:  # the one whose slots the file holds (`fit` may replace `compile`'s)
            config["optimizer"] = self._optimizer_config(optimizer)
        return config

    def compile_from_config(self, config):
        config = dict(config)
        built = config.pop("optimizer_built", True)
        optimizer = self._optimizer_from_config(config.pop("optimizer", None))
        self.compile(optimizer=optimizer, **keras.saving.deserialize_keras_object(config))
        if self.built and built and self.optimizer is not None:  # the file's slots load into it
            self.optimizer.build(self.trainable_variables)

    def _optimizer_config(self, optimizer):
        """The optimizer as the `.keras` file records it (Keras' own config here)."""
        return keras.saving.serialize_keras_object(optimizer)

    def _optimizer_from_config(self, config):
        """The optimizer `_optimizer_config` recorded, before the file's slots load into it."""
        return keras.saving.deserialize_keras_object(config)

    # --- the runtime ------------------------------------------------------------------------------
    def _auto_jit_compile(self):
        if keras.backend.backend() == "torch":
            return None  # Keras' own rule
        dtype = getattr(self, "layers_dtype_policy", None) or self.dtype_policy
        return choose_jit_compile(dtype, hidden_size=self._input_config().hidden_size,
                                  widths_vary=self._widths_vary)[0]

    def _check(self, x):
        if isinstance(x, dict):
            values = {k: concrete(v) for k, v in x.items()}
            if all(v is not None for v in values.values()):
                check_inputs(values, self._input_config(), self._extra_inputs)
        elif is_tf_dataset(x):
            return checked_dataset(x, self._input_config(), self._extra_inputs)
        return x

    def _held_out(self, data, batch_size=None):
        """`fit`'s held-out data: (inputs, targets[, weights]) by length where the targets are
        arrays, as `evaluate` takes them; otherwise as Keras takes them."""
        if isinstance(data, tuple) and not is_tf_dataset(data[0]):
            x = self._check(self._input_ids(data[0]))
            rest = (self._targets(data[1]), *map(as_array, data[2:])) if len(data) > 1 else ()
            by_length = self._length_batches(x, *rest, batch_size=batch_size) if rest else None
            return (x, *rest) if by_length is None else by_length
        return self._check(self._input_ids(data))

    def _length_batches(self, ids, y, sample_weight=None, batch_size=None):
        """`LengthBatches` of id rows with array targets, sorted by length, each batch cut to its
        bucket; None where the model's widths do not vary or the rows or targets are not arrays."""
        arrays = all(isinstance(leaf, np.ndarray) for leaf in keras.tree.flatten(y)) if y is not None else False
        if not (self._widths_vary and isinstance(ids, dict) and "padding_mask" in ids and arrays and id_rows(ids)):
            return None
        return LengthBatches({k: np.asarray(v) for k, v in ids.items()}, y, as_array(sample_weight),
                             batch_size or 32, self._bucket_multiple(self))

    def _predict_by_length(self, ids, batch_size, verbose):
        ids = {k: np.asarray(v) for k, v in ids.items()}
        bar = None
        if verbose not in (0, "0") and len(ids["padding_mask"]) > batch_size:
            bar = keras.utils.Progbar(-(-len(ids["padding_mask"]) // batch_size), verbose=1 if verbose == "auto"
                                      else verbose, unit_name="batch")
        runtime = self.predict_runtime()
        if runtime is not None and hasattr(runtime, "calibrate"):  # sees predict's rows before its first batch (int8)
            runtime.calibrate(self, ids)
        run, multiple, streams, alone = self._batch_path()
        return predict_by_length(run, ids, batch_size, multiple, self._per_token(), self._padding_fill,
                                 None if bar is None else bar.update, streams, alone)

    def fixed_predictor(self, batch_size=32):
        """A function of an id dict → what `predict` returns for it, by length, on the path
        `predict` takes now (its runtime, or its inference copy), resolved once: for a caller that
        keeps the weights as they are (a server). `predict` itself asks on every call whether
        they changed since its copy was made (`inference_model`, a runtime's compiled model); this
        skips that and the input checks, so give it id rows the preprocessor made.

        Example:
            ```python
            import numpy as np
            from keras_bert_lib import SentenceEmbedder, bert_tiny
            embedder = SentenceEmbedder(bert_tiny(num_hidden_layers=1))
            ids = {"token_ids": np.array([[2, 7, 3], [2, 3, 0]]), "segment_ids": np.zeros((2, 3), "int32"),
                   "padding_mask": np.array([[1, 1, 1], [1, 1, 0]])}
            run = embedder.fixed_predictor()
            assert np.allclose(run(ids), embedder.predict(ids, verbose=0), atol=1e-6)
            ```
        """
        run, multiple, streams, alone = self._batch_path()
        per_token, fill = self._per_token(), self._padding_fill
        return lambda ids: predict_by_length(run, {k: np.asarray(v) for k, v in ids.items()}, batch_size, multiple,
                                             per_token, fill, None, streams, alone)

    def _batch_path(self):
        """(a function of one batch, its widths' multiple, batches at once, the first batches that
        run alone) on the runtime (compiled here: none alone) or on `inference_model()`
        (`compile_path.graph_call`: one trace for every width in TensorFlow's graph)."""
        runtime = self.predict_runtime()
        if runtime is not None:
            run = runtime.batch_function(self)
            return run, self._bucket_multiple(runtime=runtime), getattr(runtime, "streams", 1), 0
        model = self.inference_model()
        run, alone = graph_call(model)
        return run, self._bucket_multiple(model), inference_streams(model.jit_compile), alone

    def _per_token(self):
        return [len(o.shape) >= 2 and o.shape[1] is None for o in keras.tree.flatten(self.output)]

    def predict_runtime(self):
        """What `predict` by length runs batches on in place of Keras: the model's `runtime`, or None."""
        return self.runtime

    def _bucket_multiple(self, model=None, runtime=None):
        """What `predict` and `evaluate` round each batch's width up to when `model` or `runtime`
        runs it: the preprocessor's `pad_to_multiple_of` (8 by default) where it runs as XLA
        programs, one compiled per width (GPUs, TPUs, JAX); 1, the batch's longest row, where it
        runs in TensorFlow's graph (Keras' choice on a CPU), which traces once for every width; on
        a runtime, its `width_multiple` (OpenVINO's: 1, one program for every width), else the
        preprocessor's."""
        if model is not None and not model.jit_compile:
            return 1
        return (getattr(runtime, "width_multiple", None)
                or getattr(getattr(self, "preprocessor", None), "pad_to_multiple_of", None) or 8)


def id_rows(ids):
    """How many rows an id dict holds, or None where its tensors are symbols of unknown batch.

    Example:
        ```python
        import numpy as np
        from keras_bert_lib.runtime.entry_points import id_rows
        id_rows({"token_ids": np.zeros((3, 8), "int32")})   # 3
        ```
    """
    tokens = ids.get("token_ids")
    shape = getattr(tokens, "shape", None)
    if shape is None:
        return len(tokens) if hasattr(tokens, "__len__") else None
    return shape[0] if len(shape) and isinstance(shape[0], int) else None


def as_array(values):
    """Labels or weights as an array: Keras takes arrays and datasets, and a user's are often a list.

    Example:
        ```python
        from keras_bert_lib.runtime.entry_points import as_array
        as_array([0, 1]).shape   # (2,)
        ```
    """
    return np.asarray(values) if isinstance(values, (list, tuple)) else values
