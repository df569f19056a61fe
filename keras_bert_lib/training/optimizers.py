"""BERT's optimizers: AdamW without decay on LayerNorm and biases, or LAMB; clipping, accumulation."""

import keras
import tensorflow as tf

from keras_bert_lib.training.schedules import WarmupLinearDecay

OPTIMIZERS = ("adamw", "lamb")
# Google's BERT excludes LayerNorm and bias from weight decay (optimization.py). Keras matches
# these against variable names: LayerNorm's are "gamma"/"beta", biases end in "bias".
NO_DECAY = ["gamma", "beta", "bias"]


class _ClipAfterAllReduce:
    """Clips the replicas' summed gradient, not each replica's own.

    Keras clips by global norm before it sums the gradients across replicas, so two replicas
    clip two half-batch gradients, a different update from one device's (tensorflow#33929
    describes the ordering). Here the sum comes first, once, and the update step then uses it
    as it is: the same update as one device, and still one all-reduce per step.
    """

    def _clip_gradients(self, grads):
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
        from keras_bert_lib.training.optimizers import clip_by_global_norm
        rows = tf.IndexedSlices(tf.constant([[3.0, 0.0], [1.0, 0.0]]), tf.constant([4, 4]), tf.constant([9, 2]))
        clipped = clip_by_global_norm([rows, tf.constant([3.0])], 1.0)   # norm 5: scaled by 0.2
        ```
    """
    return tf.clip_by_global_norm([_rows_per_id(g) if isinstance(g, tf.IndexedSlices) else g for g in grads],
                                  clip_norm)[0]


def _rows_per_id(slices):
    """A `tf.IndexedSlices` with each id once: the rows of a repeated id summed."""
    ids, where = tf.unique(slices.indices)
    return tf.IndexedSlices(tf.math.unsorted_segment_sum(slices.values, where, tf.shape(ids)[0]), ids,
                            slices.dense_shape)


def _handle(variable):
    """The resource handle of a Keras variable (TensorFlow backend) or of a tf.Variable."""
    return variable.handle if hasattr(variable, "handle") else variable.value.handle


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class AdamW(_ClipAfterAllReduce, keras.optimizers.AdamW):
    """keras.optimizers.AdamW whose global-norm clipping sees the sum over replicas.

    On TensorFlow, on one device, a float32 variable's Adam step is TensorFlow's fused kernel
    (`ResourceApplyAdam`: the same formula as Keras' `Adam.update_step`, in one pass over the
    variable, its moments and the gradient, where Keras' takes eight): about twice as fast. The step's
    scalars (β powers, learning rate, ε) and the decoupled weight decay's factor lr·λ are
    computed once per step, not once per variable as Keras does: the first step traces about 20
    fewer graph ops per variable (bert_tiny's update: 505 instead of 1,291).

    Example:
        ```python
        from keras_bert_lib.training.optimizers import AdamW
        optimizer = AdamW(learning_rate=1e-4, global_clipnorm=1.0)
        ```
    """

    def _fused(self):
        return keras.backend.backend() == "tensorflow" and not tf.distribute.has_strategy() and not self.amsgrad

    def _backend_update_step(self, grads, trainable_variables, learning_rate):
        if self._fused():
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
        index = self._get_variable_index(variable)
        tf.raw_ops.ResourceApplyAdam(var=_handle(variable), m=_handle(self._momentums[index]),
                                     v=_handle(self._velocities[index]),
                                     grad=tf.convert_to_tensor(gradient, tf.float32), **scalars)

    def _apply_weight_decay(self, variables):
        if self.weight_decay is None or not self._fused():
            return super()._apply_weight_decay(variables)
        factor = {}  # lr·λ once per dtype, where Keras evaluates the schedule for each variable
        for variable in variables:
            if self._use_weight_decay(variable):
                dtype = variable.dtype
                if dtype not in factor:
                    factor[dtype] = tf.cast(self.learning_rate, dtype) * tf.cast(self.weight_decay, dtype)
                variable.assign_sub(variable * factor[dtype])


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class Lamb(_ClipAfterAllReduce, keras.optimizers.Lamb):
    """keras.optimizers.Lamb whose global-norm clipping sees the sum over replicas.

    Example:
        ```python
        from keras_bert_lib.training.optimizers import Lamb
        optimizer = Lamb(learning_rate=1e-3, global_clipnorm=1.0)
        ```
    """


def create_optimizer(name="adamw", peak_learning_rate=1e-4, warmup_steps=10_000, total_steps=1_000_000,
                     weight_decay=0.01, clipnorm=1.0, gradient_accumulation_steps=None,
                     loss_scale=False):
    """Keras AdamW (β1 0.9, β2 0.999, ε 1e-6) or LAMB with warm-up and linear decay.

    Args:
        name: "adamw" or "lamb".
        peak_learning_rate, warmup_steps, total_steps: the schedule (see WarmupLinearDecay).
        weight_decay: float, decoupled; never applied to LayerNorm parameters or biases.
        clipnorm: float or None. Gradient clipping by global norm (BERT clips at 1.0).
        gradient_accumulation_steps: int or None. Apply the mean gradient of this many steps.
        loss_scale: bool. Wrap in a LossScaleOptimizer (needed for mixed_float16).
    Example:
        ```python
        from keras_bert_lib.training import create_optimizer
        optimizer = create_optimizer("lamb", peak_learning_rate=1e-3, warmup_steps=10, total_steps=100)
        ```
    Reference:
        Loshchilov & Hutter, 2019 (AdamW); You et al., 2020 (LAMB)
    """
    if name not in OPTIMIZERS:
        raise ValueError(f"optimizer {name!r} is not one of {OPTIMIZERS}.")
    schedule = WarmupLinearDecay(peak_learning_rate, warmup_steps, total_steps)
    cls = AdamW if name == "adamw" else Lamb
    optimizer = cls(learning_rate=schedule, weight_decay=weight_decay, beta_1=0.9, beta_2=0.999,
                    epsilon=1e-6, global_clipnorm=clipnorm,
                    gradient_accumulation_steps=gradient_accumulation_steps)
    optimizer.exclude_from_weight_decay(var_names=NO_DECAY)
    return keras.optimizers.LossScaleOptimizer(optimizer) if loss_scale else optimizer
