"""Keras 3 mends for `fit` and `evaluate`: one that halves the first step's tracing, two that let
them run under MultiWorkerMirroredStrategy."""

import types

import tensorflow as tf

from keras_bert_lib.keras_internals import build_before_first_trace, in_multi_worker_mode


def _reducible(model, logs):
    """Scalar logs as shape (1,), so Keras's `reduce("MEAN", axis=0)` averages the workers'
    values instead of failing on a scalar (tensorflow#72388)."""
    if not in_multi_worker_mode(model.distribute_strategy):
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
    build_before_first_trace(model)
    model.train_step = types.MethodType(lambda self, data: _reducible(self, cls.train_step(self, data)), model)
    model.test_step = types.MethodType(lambda self, data: _reducible(self, cls.test_step(self, data)), model)
    return model
