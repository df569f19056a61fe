"""Training callbacks: stop on a NaN/Inf loss while keeping the last good checkpoint; periodic
checkpoints; a Ctrl-C that Python could not raise still stops training."""

import glob
import math
import os
import shutil
import signal
import sys
import threading

import keras
import numpy as np


class StopOnNonFiniteLoss(keras.callbacks.Callback):
    """Stops training at the first NaN or Inf loss with a FloatingPointError naming the step, and
    before the first step if the model's weights already hold NaN or Inf (a damaged checkpoint:
    no learning rate fixes that).

    Put it first in the callback list: it raises in `on_train_batch_end` before any later
    callback (the backups, ModelCheckpoint) can save the bad weights, so the checkpoints written
    before stay as they were.

    Example:
        ```python
        from keras_bert_lib.training import StopOnNonFiniteLoss
        callback = StopOnNonFiniteLoss()
        ```
    """

    def __init__(self):
        super().__init__()
        self.bad_step = None

    def on_train_begin(self, logs=None):
        weights = [w for w in self.model.weights if "float" in str(w.dtype)]
        bad = [w.path for w in weights if not np.isfinite(keras.ops.convert_to_numpy(w)).all()]
        if bad:
            raise FloatingPointError(
                f"{len(bad)} of the model's {len(weights)} weights hold NaN or Inf before training ({bad[0]}, ...): "
                "the checkpoint it starts from is damaged. Start from another checkpoint; no setting fixes this.")
        self._first = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations)) + 1

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(loss)):
            self.bad_step = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
            self.model.stop_training = True
            if self.bad_step <= getattr(self, "_first", 1):  # no update of this run came before it
                raise FloatingPointError(
                    f"The loss was {loss} at the first step ({self.bad_step}), before any update: the weights or "
                    "the data, not the learning rate. Check the checkpoint and the data for empty or corrupt "
                    "examples.")
            raise FloatingPointError(
                f"The loss became {loss} at step {self.bad_step}; training stopped. The last "
                "checkpoint written before it is intact: lower the learning rate (--learning-rate), check the "
                "data for empty or corrupt examples, or use mixed_bfloat16 instead of mixed_float16 (--dtype).")


class PeriodicCheckpoints(keras.callbacks.Callback):
    """Every `every_steps` optimizer steps, a checkpoint of the model in `directory`, the newest
    `max_to_keep` kept (tf.train.CheckpointManager's policy, as Google's run_pretraining.py
    keeps its last five); and one at the end of training.

    On TensorFlow a TensorFlow checkpoint of the model and its optimizer (`ckpt-STEP.index`):
    restore with `tf.train.Checkpoint(model=model, optimizer=model.optimizer).restore(path)`.
    On JAX and PyTorch, whose variables TensorFlow cannot track, Keras' weights file
    `ckpt-STEP.weights.h5` (written whole or not at all): `model.load_weights(path)`.
    Snapshots to pick from or fine-tune; resuming a killed run is the backups' job
    (`training.backups`). What a killed save left (TensorFlow's `ckpt-N_temp/` folder, a partial
    weights file) is removed when training begins.

    Example:
        ```python
        import tempfile
        from keras_bert_lib.training import PeriodicCheckpoints
        callback = PeriodicCheckpoints(tempfile.mkdtemp(), every_steps=1000, max_to_keep=5)
        ```
    """

    def __init__(self, directory, every_steps=1000, max_to_keep=3):
        super().__init__()
        self.directory, self.every_steps, self.max_to_keep = directory, every_steps, max_to_keep
        self.manager = None

    def on_train_begin(self, logs=None):
        for stale in glob.glob(os.path.join(glob.escape(self.directory), "*_temp")):  # CheckpointManager's
            shutil.rmtree(stale, ignore_errors=True)
        for stale in glob.glob(os.path.join(glob.escape(self.directory), ".partial-ckpt-*")):
            os.remove(stale)
        if keras.backend.backend() != "tensorflow":
            return
        import tensorflow as tf

        checkpoint = tf.train.Checkpoint(model=self.model, optimizer=self.model.optimizer)
        self.manager = tf.train.CheckpointManager(checkpoint, self.directory, self.max_to_keep)

    def _save(self, step):
        if self.manager is not None:
            self.manager.save(checkpoint_number=step)
            return
        os.makedirs(self.directory, exist_ok=True)
        partial = os.path.join(self.directory, f".partial-ckpt-{step}.weights.h5")
        self.model.save_weights(partial)
        os.replace(partial, os.path.join(self.directory, f"ckpt-{step}.weights.h5"))
        saved = sorted((int(name[5:-len(".weights.h5")]), name) for name in os.listdir(self.directory)
                       if name.startswith("ckpt-") and name.endswith(".weights.h5"))
        for _, name in saved[:-self.max_to_keep]:
            os.remove(os.path.join(self.directory, name))

    def on_train_batch_end(self, batch, logs=None):
        step = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
        if step % self.every_steps == 0:
            self._save(step)

    def on_train_end(self, logs=None):
        step = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
        if step % self.every_steps:  # not saved at this step yet
            self._save(step)


class KeepInterrupts(keras.callbacks.Callback):
    """A Ctrl-C during `fit` stops training at the end of the current batch, wherever it lands.

    Python raises KeyboardInterrupt wherever the main thread happens to be, and where that is a
    garbage-collector callback or a `__del__` (JAX, imported by Keras where installed, keeps one
    in `gc.callbacks`) the interrupt is "ignored": printed as a traceback, and `fit` goes on.
    Inside `with KeepInterrupts() as keep:` (in the main thread) the first SIGINT only sets a
    flag, and an interrupt that Python swallowed anyway is noted through `sys.unraisablehook`; the
    callback raises KeyboardInterrupt at the end of the next batch (training or held-out) or epoch,
    or when the block ends. A second Ctrl-C raises at once. Work outside `fit` that may stop
    anywhere (a corpus job, whose shards are written whole) takes `at_once=True`: the first Ctrl-C
    raises where it lands, and `keep.check()` raises one that Python swallowed. Where library code
    caught the interrupt and failed otherwise (Keras' `ops.shape` catches everything, and the
    shape it leaves fails later), the block ends with KeyboardInterrupt, not that error.

    Example:
        ```python
        import keras
        import numpy as np
        from keras_bert_lib.training.callbacks import KeepInterrupts
        model = keras.Sequential([keras.layers.Dense(1)])
        model.compile(loss="mse")
        with KeepInterrupts() as keep:
            model.fit(np.ones((4, 1)), np.ones((4, 1)), callbacks=[keep], verbose=0)
        with KeepInterrupts(at_once=True) as keep:  # a loop of whole pieces of work
            for piece in range(3):
                keep.check()  # raises KeyboardInterrupt if a Ctrl-C was swallowed
        assert keep.swallowed is False
        ```
    """

    def __init__(self, at_once=False):
        super().__init__()
        self.at_once, self.swallowed, self._previous_hook, self._previous_handler = at_once, False, None, None

    def __enter__(self):
        self.swallowed = False
        self._previous_hook, sys.unraisablehook = sys.unraisablehook, self._unraisable
        if threading.current_thread() is threading.main_thread():
            self._previous_handler = signal.signal(signal.SIGINT, self._sigint)
        return self

    def __exit__(self, exc_type, exc, traceback):
        sys.unraisablehook = self._previous_hook
        if self._previous_handler is not None:
            signal.signal(signal.SIGINT, self._previous_handler)
            self._previous_handler = None
        if exc_type is None:
            self.check()  # a Ctrl-C after the last batch: the caller still hears it
        elif self.swallowed and not issubclass(exc_type, KeyboardInterrupt):
            self.swallowed = False  # a Ctrl-C that code caught and turned into another error
            raise KeyboardInterrupt from exc

    def _sigint(self, signum, frame):
        first, self.swallowed = not self.swallowed, True
        if not first or self.at_once:  # the second Ctrl-C: at once; the flag stays should this one be swallowed
            raise KeyboardInterrupt

    def _unraisable(self, unraisable):
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            self.swallowed = True
        else:
            self._previous_hook(unraisable)

    def check(self, *args, **kwargs):
        """Raises KeyboardInterrupt if a Ctrl-C came since the last check (Keras passes a batch's
        or epoch's arguments, which it ignores)."""
        if self.swallowed:
            self.swallowed = False
            raise KeyboardInterrupt

    on_train_batch_end = on_test_batch_end = on_epoch_end = check
