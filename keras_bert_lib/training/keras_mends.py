"""Keras 3 mends for `fit` and `evaluate`: one that halves the first step's tracing, two that let
them run under MultiWorkerMirroredStrategy."""

import types

import tensorflow as tf


def _multi_worker(strategy):
    # The same test Keras's trainer makes before it takes its multi-worker reduction path.
    return (isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)
            and strategy.extended._in_multi_worker_mode())


def _build_before_tracing(model, iterator=None, data_batch=None):
    """Builds the model, its losses, metrics and optimizer from shapes before the first step.

    Without a strategy Keras leaves that to the first trace of the train function; the variables
    created there make TensorFlow trace the whole step a second time. On one device the shapes
    come from the dataset's `element_spec`, so no batch is read; on several workers from the first
    local replica's batch instead of a reduced nest of per-replica dicts (keras-team/keras#20329).
    """
    cls = type(model)
    strategy = model._distribute_strategy
    if strategy is None:
        if data_batch is None and iterator is not None:
            data_batch = iterator.data_adapter.get_tf_dataset().element_spec
        if data_batch is not None:
            model._symbolic_build(data_batch=data_batch)
        return None
    if iterator is None:
        return cls._maybe_symbolic_build(model, iterator=iterator, data_batch=data_batch)
    for _, _, batches in iterator:
        data_batch = tf.nest.map_structure(
            lambda v: strategy.experimental_local_results(v)[0]
            if isinstance(v, tf.distribute.DistributedValues) else v, next(batches))
        break
    with strategy.scope():
        model._symbolic_build(data_batch=data_batch)


def _reducible(model, logs):
    """Scalar logs as shape (1,), so Keras's `reduce("MEAN", axis=0)` averages the workers'
    values instead of failing on a scalar (tensorflow#72388)."""
    if not _multi_worker(model.distribute_strategy):
        return logs
    return {k: tf.reshape(v, [1]) if tf.is_tensor(v) and v.shape.rank == 0 else v for k, v in logs.items()}


def mend_fit(model):
    """Makes `model.fit` start faster, and run with dict inputs on several workers; returns `model`.

    On one device, Keras 3.15's TensorFlow trainer builds the optimizer's slots and the loss
    trackers inside the first trace of the train step, and TensorFlow then traces the step again:
    the model is built from the dataset's shapes
    first, as Keras does under a strategy.

    Under MultiWorkerMirroredStrategy with more than one worker, the trainer fails twice, for any
    model:

    - before the first step it reduces the whole first batch, a nest of per-replica dicts, with
      one `strategy.reduce("MEAN", ...)` just to learn shapes, and the strategy cannot reduce a
      nest ("Attempt to convert a value ({'token_ids': PerReplica…}) … to a Tensor",
      keras-team/keras#20329). The build needs only shapes and dtypes, so it is done from the
      first local replica's tensors;
    - after each step it reduces every scalar log with `strategy.reduce("MEAN", v, axis=0)`,
      which fails on a scalar ("Invalid reduction dimension 0 for input with 0 dimensions",
      tensorflow#72388). The step's logs are returned with shape (1,), so that reduction averages
      the replicas' values to the scalar Keras expects.

    The losses, gradients and updates are Keras's own; only when and from what the model is built,
    and the shapes of the logs, change. The mends
    are set on this one model object (its class, and so its `.keras` files, stay as they were);
    on one device or a MirroredStrategy they change nothing. The training loop applies them.
    On Keras' JAX and PyTorch backends (another trainer, no tf.distribute) the model is returned
    as it is.

    Example:
        ```python
        from keras_bert_lib import BertPretrainer, bert_tiny
        from keras_bert_lib.training import mend_fit
        pretrainer = mend_fit(BertPretrainer(bert_tiny(num_hidden_layers=1)))
        ```
    """
    import keras

    if keras.backend.backend() != "tensorflow":
        return model
    cls = type(model)
    model._maybe_symbolic_build = types.MethodType(_build_before_tracing, model)
    model.train_step = types.MethodType(lambda self, data: _reducible(self, cls.train_step(self, data)), model)
    model.test_step = types.MethodType(lambda self, data: _reducible(self, cls.test_step(self, data)), model)
    return model
