"""Training callbacks: stop on a NaN/Inf loss while keeping the last good checkpoint."""

import math

import keras


class StopOnNonFiniteLoss(keras.callbacks.Callback):
    """Stops training at the first NaN or Inf loss with a FloatingPointError naming the step.

    Put it first in the callback list: it raises in `on_train_batch_end` before any later
    callback (BackupAndRestore, ModelCheckpoint) can save the bad weights, so the checkpoints
    written before stay as they were.

    Example:
        ```python
        from keras_bert_lib.training import StopOnNonFiniteLoss
        callback = StopOnNonFiniteLoss()
        ```
    """

    def __init__(self):
        super().__init__()
        self.bad_step = None

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(loss)):
            self.bad_step = int(self.model.optimizer.iterations.numpy())
            self.model.stop_training = True
            raise FloatingPointError(
                f"The loss became {loss} at step {self.bad_step}; training stopped. The last "
                "checkpoint written before it is intact: lower the learning rate, check the data "
                "for empty or corrupt examples, or use mixed_bfloat16 instead of mixed_float16.")
