"""Two Keras 3 fixes that let `fit` and `evaluate` run under MultiWorkerMirroredStrategy."""

import tensorflow as tf


def _multi_worker(strategy):
    # The same test Keras's trainer makes before it takes its multi-worker reduction path.
    return (isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)
            and strategy.extended._in_multi_worker_mode())


class MultiWorkerFit:
    """Mixin for keras.Model: `fit`/`evaluate` with dict inputs on several workers.

    Keras 3.15's TensorFlow trainer fails twice under MultiWorkerMirroredStrategy with more than
    one worker, for any model:

    - before the first step it reduces the whole first batch, a nest of per-replica dicts, with
      one `strategy.reduce("MEAN", ...)` just to learn shapes, and the strategy cannot reduce a
      nest ("Attempt to convert a value ({'token_ids': PerReplica…}) … to a Tensor",
      keras-team/keras#20329). The build needs only shapes and dtypes, so it is done from the
      first local replica's tensors;
    - after each step it reduces every scalar log with `strategy.reduce("MEAN", v, axis=0)`,
      which fails on a scalar ("Invalid reduction dimension 0 for input with 0 dimensions",
      tensorflow#72388). The step's logs are returned with shape (1,), so that reduction averages
      the replicas' values to the scalar Keras expects.

    The losses, gradients and updates are Keras's own; only shapes around them change.

    Example:
        ```python
        import keras
        from keras_bert_lib.models.distributed_fit import MultiWorkerFit

        class MyModel(MultiWorkerFit, keras.Model):
            pass
        ```
    """

    def _maybe_symbolic_build(self, iterator=None, data_batch=None):
        strategy = self._distribute_strategy
        if strategy is None or iterator is None:
            return super()._maybe_symbolic_build(iterator=iterator, data_batch=data_batch)
        for _, _, batches in iterator:
            data_batch = tf.nest.map_structure(
                lambda v: strategy.experimental_local_results(v)[0]
                if isinstance(v, tf.distribute.DistributedValues) else v, next(batches))
            break
        with strategy.scope():
            self._symbolic_build(data_batch=data_batch)

    def train_step(self, data):
        return self._reducible(super().train_step(data))

    def test_step(self, data):
        return self._reducible(super().test_step(data))

    def _reducible(self, logs):
        if not _multi_worker(self.distribute_strategy):
            return logs
        return {k: tf.reshape(v, [1]) if tf.is_tensor(v) and v.shape.rank == 0 else v for k, v in logs.items()}
