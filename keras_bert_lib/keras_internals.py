"""Every private name of Keras and TensorFlow the library relies on, here and nowhere else.

Each piece says which private name it reads, sets or overrides and why the public API does not do
the job; `tests/runtime/test_keras_internals.py` looks each name up in the installed versions, so
an upgrade that renames or drops one fails there, by name. Raising the Keras bound means reading
this file against the new release. TensorFlow is imported inside the functions that need it: the
models import this module on every backend.
"""

import contextlib

import keras

# --- models: Keras' trainer -----------------------------------------------------------------


class ResolvesAutoJitCompile:
    """Mixin for a keras.Model: Keras' `jit_compile="auto"` (a model never compiled, or compiled
    without saying) resolved by the model's `_auto_jit_compile()` (None: Keras' own rule).
    Overrides `Trainer._resolve_auto_jit_compile`, which Keras calls from `compile` and from the
    `jit_compile` property; `compile(jit_compile=...)` cannot cover a model that is never compiled."""

    def _auto_jit_compile(self):
        return None

    def _resolve_auto_jit_compile(self):
        choice = self._auto_jit_compile()
        return super()._resolve_auto_jit_compile() if choice is None else choice


def is_fit_held_out_pass(evaluate_kwargs):
    """Whether an `evaluate` call is `fit`'s held-out pass (Keras passes the private
    `_use_cached_eval_dataset=True`): its data was prepared and checked by `fit`."""
    return bool(evaluate_kwargs.get("_use_cached_eval_dataset"))


def fit_held_out_batches(model):
    """The batches of `fit`'s held-out pass (Keras' private `_eval_epoch_iterator`), or None."""
    return getattr(getattr(model, "_eval_epoch_iterator", None), "num_batches", None)


def runs_under_strategy(model):
    """Whether `model` was built under a tf.distribute strategy: Keras' `_distribute_strategy`
    slot (the public `distribute_strategy` gives the default strategy where there is none)."""
    return getattr(model, "_distribute_strategy", None) is not None


def held_out_update(model, data, y_pred):
    """Keras' TensorFlow `test_step` (3.15) after its forward pass, on one device: the loss
    (`Trainer._compute_loss`, with Keras' own regularisation and scaling) into the model's
    `_loss_tracker`, then the compiled metrics; returns the logs."""
    x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
    loss = model._compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight, training=False)
    rows = keras.ops.shape(next(t for t in keras.tree.flatten(x) if t is not None))[0]
    model._loss_tracker.update_state(loss, sample_weight=rows)
    return model.compute_metrics(x, y, y_pred, sample_weight=sample_weight)


def build_before_first_trace(model):
    """Makes `model.fit` build the model, its losses, metrics and optimizer from shapes before
    the first step (`TensorFlowTrainer._maybe_symbolic_build`, replaced on this one object).

    Without a strategy Keras leaves that to the first trace of the train function; the variables
    created there make TensorFlow trace the whole step a second time. On one device the shapes
    come from the dataset's `element_spec`, so no batch is read; on several workers from the first
    local replica's batch instead of a reduced nest of per-replica dicts (keras-team/keras#20329).
    """
    import types

    import tensorflow as tf

    cls = type(model)

    def build(self, iterator=None, data_batch=None):
        strategy = self._distribute_strategy
        if strategy is None:
            if data_batch is None and iterator is not None:
                data_batch = iterator.data_adapter.get_tf_dataset().element_spec
            if data_batch is not None:
                self._symbolic_build(data_batch=data_batch)
            return None
        if iterator is None:
            return cls._maybe_symbolic_build(self, iterator=iterator, data_batch=data_batch)
        for _, _, batches in iterator:
            data_batch = tf.nest.map_structure(
                lambda v: strategy.experimental_local_results(v)[0]
                if isinstance(v, tf.distribute.DistributedValues) else v, next(batches))
            break
        with strategy.scope():
            self._symbolic_build(data_batch=data_batch)

    model._maybe_symbolic_build = types.MethodType(build, model)


def in_multi_worker_mode(strategy):
    """The test Keras' trainer makes before it takes its multi-worker reduction path."""
    import tensorflow as tf

    return (isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)
            and strategy.extended._in_multi_worker_mode())


# --- data: Keras' array adapter ----------------------------------------------------------------


@contextlib.contextmanager
def arrays_without_autotune():
    """While open, on TensorFlow, the tf.data dataset Keras makes of arrays for `fit`, `evaluate`
    and `predict` (`ArrayDataAdapter.get_tf_dataset`) has tf.data's autotuning off.

    Keras drops each epoch's iterator at the epoch's end, and TensorFlow 2.21 then waits out the
    autotuning thread's sleep (`data.pipeline_options.without_autotune` says more): up to the
    epoch's own length, with the processor idle. The options change no element, so the batches,
    their order and every number stay Keras' own. Keras turns autotuning off in its `PyDataset`
    adapter itself; its array adapter has no switch for it, so the method is swapped on the class,
    for the whole process, while the outermost use is open."""
    if keras.backend.backend() != "tensorflow":
        yield
        return
    from keras.src.trainers.data_adapters.array_data_adapter import ArrayDataAdapter

    keras_own = ArrayDataAdapter.get_tf_dataset
    if getattr(keras_own, "without_autotune", False):  # an outer use is open
        yield
        return

    import tensorflow as tf

    options = tf.data.Options()
    options.autotune.enabled = False

    def get_tf_dataset(self):
        return keras_own(self).with_options(options)

    get_tf_dataset.without_autotune = True
    ArrayDataAdapter.get_tf_dataset = get_tf_dataset
    try:
        yield
    finally:
        ArrayDataAdapter.get_tf_dataset = keras_own


# --- layers ---------------------------------------------------------------------------------


def graph_after(model, layer):
    """`model`'s functional graph from its call of `layer` on: a keras.Model of [that call's
    outputs (flat, Keras' order), `model`'s input dict] → `model`'s outputs. Keras keeps a layer's
    calls as its private `_inbound_nodes`; the public `layer.output` of a nested functional model
    is its own graph's output, not its call's. The call is the one whose outputs lead to
    `model`'s (a layer shared by two models has a call in each)."""
    for node in layer._inbound_nodes:
        try:
            return keras.Model([*node.outputs, model.input], model.output), node.outputs
        except ValueError:  # that call belongs to another model's graph
            continue
    raise ValueError(f"{layer.name} is not called in {model.name}'s graph.")


def takes_strings(layer):
    """Tells Keras that `layer` takes strings and other non-tensor arguments as they are: no
    conversion of its inputs (`Layer._convert_input_args`), positional non-tensors allowed
    (`Layer._allow_non_tensor_positional_args`); and that it is built."""
    layer._convert_input_args = False
    layer._allow_non_tensor_positional_args = True
    layer.built = True


def set_untracked(layer, **values):
    """Sets attributes of `layer` that hold no variables or layers (a vocabulary's tens of
    thousands of strings) past Keras' attribute tracking: `Layer.__setattr__` would copy a list
    or dict into a tracked one and visit each element, a tenth of a second a vocabulary."""
    for name, value in values.items():
        object.__setattr__(layer, name, value)


# --- optimizers: Keras' base optimizer --------------------------------------------------------


class ClipAfterAllReduce:
    """Mixin for a keras optimizer: clips the replicas' summed gradient, not each replica's own
    (`BaseOptimizer._clip_gradients`, `TFOptimizer._all_reduce_sum_gradients`).

    Keras clips by global norm before it sums the gradients across replicas, so two replicas
    clip two half-batch gradients, a different update from one device's (tensorflow#33929
    describes the ordering). Here the sum comes first, once, and the update step then uses it
    as it is: the same update as one device, and still one all-reduce per step. On TensorFlow
    the clipping is `clip_by_global_norm`, which keeps a sparse gradient sparse.
    """

    def _clip_gradients(self, grads):
        import tensorflow as tf

        context = tf.distribute.get_replica_context()
        if context is not None and context.num_replicas_in_sync > 1:
            present = [g for g in grads if g is not None]
            summed = iter(context.all_reduce(tf.distribute.ReduceOp.SUM, present))
            grads = [None if g is None else next(summed) for g in grads]
        if self.clipnorm or not self.global_clipnorm or keras.backend.backend() != "tensorflow":
            return super()._clip_gradients(grads)
        return clip_by_global_norm(grads, self.global_clipnorm)

    def _all_reduce_sum_gradients(self, grads_and_vars):
        return list(grads_and_vars)  # summed already, in _clip_gradients


def clip_by_global_norm(grads, clip_norm):
    """Keras' `clip_by_global_norm` where a sparse gradient stays sparse (TensorFlow tensors).

    The token embedding's gradient is a `tf.IndexedSlices` of the batch's ids; Keras squares and
    scales it as a dense vocabulary × width tensor (all-MiniLM-L6-v2: 11.7M numbers, twice a
    step). Here the rows of a repeated id are summed first, giving the dense gradient's nonzero
    rows, and `tf.clip_by_global_norm` (Keras' formula, which reads an `IndexedSlices` by its
    rows) clips those: the same norm and update. A NaN or Inf norm gives NaN gradients, as
    Keras' does.

    Example:
        ```python
        import tensorflow as tf
        from keras_bert_lib.keras_internals import clip_by_global_norm
        rows = tf.IndexedSlices(tf.constant([[3.0, 0.0], [1.0, 0.0]]), tf.constant([4, 4]), tf.constant([9, 2]))
        clipped = clip_by_global_norm([rows, tf.constant([3.0])], 1.0)   # norm 5: scaled by 0.2
        float(clipped[1][0])   # 0.6
        ```
    """
    import tensorflow as tf

    def rows_per_id(slices):  # each id once: the rows of a repeated id summed
        ids, where = tf.unique(slices.indices)
        return tf.IndexedSlices(tf.math.unsorted_segment_sum(slices.values, where, tf.shape(ids)[0]), ids,
                                slices.dense_shape)

    return tf.clip_by_global_norm([rows_per_id(g) if isinstance(g, tf.IndexedSlices) else g for g in grads],
                                  clip_norm)[0]


class FusedAdamStep:
    """Mixin for keras.optimizers.AdamW: on TensorFlow, on one device, a float32 variable's Adam
    step is TensorFlow's fused kernel (`ResourceApplyAdam`: the same formula as Keras'
    `Adam.update_step`, in one pass over the variable, its moments and the gradient, where Keras'
    takes eight). The step's scalars (β powers, learning rate, ε) and the decoupled weight decay's
    factor lr·λ are computed once per step, not once per variable as Keras does. Overrides
    `BaseOptimizer._backend_update_step` and `_apply_weight_decay`; reads the moments
    (`_momentums`, `_velocities`, `_get_variable_index`) and `_use_weight_decay`."""

    def _fused(self):
        import tensorflow as tf

        return keras.backend.backend() == "tensorflow" and not tf.distribute.has_strategy() and not self.amsgrad

    def _backend_update_step(self, grads, trainable_variables, learning_rate):
        if self._fused():
            import tensorflow as tf

            step = tf.cast(self.iterations + 1, tf.float32)
            beta_1, beta_2 = tf.constant(self.beta_1, tf.float32), tf.constant(self.beta_2, tf.float32)
            # read by update_step for this step's variables; not an attribute Keras tracks
            object.__setattr__(self, "_step_scalars", dict(
                beta1_power=tf.pow(beta_1, step), beta2_power=tf.pow(beta_2, step), beta1=beta_1, beta2=beta_2,
                lr=tf.cast(learning_rate, tf.float32), epsilon=tf.constant(self.epsilon, tf.float32)))
        try:
            super()._backend_update_step(grads, trainable_variables, learning_rate)
        finally:
            object.__setattr__(self, "_step_scalars", None)

    def update_step(self, gradient, variable, learning_rate):
        scalars = getattr(self, "_step_scalars", None)
        if scalars is None or variable.dtype != "float32":
            return super().update_step(gradient, variable, learning_rate)
        import tensorflow as tf

        def handle(v):  # the resource handle of a Keras variable (TensorFlow backend) or of a tf.Variable
            return v.handle if hasattr(v, "handle") else v.value.handle

        index = self._get_variable_index(variable)
        tf.raw_ops.ResourceApplyAdam(var=handle(variable), m=handle(self._momentums[index]),
                                     v=handle(self._velocities[index]),
                                     grad=tf.convert_to_tensor(gradient, tf.float32), **scalars)

    def _apply_weight_decay(self, variables):
        if self.weight_decay is None or not self._fused():
            return super()._apply_weight_decay(variables)
        import tensorflow as tf

        factor = {}  # lr·λ once per dtype, where Keras evaluates the schedule for each variable
        for variable in variables:
            if self._use_weight_decay(variable):
                dtype = variable.dtype
                if dtype not in factor:
                    factor[dtype] = tf.cast(self.learning_rate, dtype) * tf.cast(self.weight_decay, dtype)
                variable.assign_sub(variable * factor[dtype])


# --- TensorFlow -------------------------------------------------------------------------------


def onednn_enabled():
    """Whether TensorFlow runs its CPU kernels through oneDNN in this process (None: TensorFlow is
    not installed), as TensorFlow's private `_pywrap_util_port.IsMklEnabled` says; no public API
    tells. TensorFlow reads `TF_ENABLE_ONEDNN_OPTS` once, when it is imported, and leaves oneDNN
    off by default on CPUs without AVX512: `import keras_bert_lib` turns it on only where it is
    imported before TensorFlow (and so before `keras`, which imports TensorFlow).

    Example:
        ```python
        from keras_bert_lib.keras_internals import onednn_enabled
        onednn_enabled()   # True (after `import keras_bert_lib` came first, on any x86 CPU)
        ```
    """
    try:
        from tensorflow.python.util import _pywrap_util_port
    except ImportError:
        return None
    return bool(_pywrap_util_port.IsMklEnabled())
