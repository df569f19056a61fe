"""Real Ctrl-Cs (SIGINT to the main thread) at batch 2 of a short `fit` inside KeepInterrupts
(and with `at_once=True`, once as it lands, once swallowed where it lands, as C code that calls
Python can, and once caught and turned into another error, as Keras' `ops.shape` can); prints one
JSON line per run: how many presses, how many batches ended,
whether `fit` raised KeyboardInterrupt and whether the SIGINT handler was put back.

    python -X faulthandler ctrl_c_run.py

Run as its own process: a signal is process-wide, and in a pytest worker a crash or a stray
KeyboardInterrupt takes every test left on that worker with it (a full suite lost one so, twice,
at this test); here a crash is this test's failure, with faulthandler's traceback.
"""

import json
import signal
import threading

import keras
import numpy as np

from keras_bert_lib.training.callbacks import KeepInterrupts


class CtrlCAt(keras.callbacks.Callback):
    """Presses Ctrl-C `presses` times when batch 2 begins; counts the batches that end."""

    def __init__(self, presses, swallow, mangle):
        super().__init__()
        self.presses, self.swallow, self.mangle, self.ended = presses, swallow, mangle, 0

    def on_train_batch_begin(self, batch, logs=None):
        if batch == 2:  # signal.pthread_kill runs the Python handler before it returns
            for _ in range(self.presses):
                try:
                    signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
                except KeyboardInterrupt:
                    if self.mangle:  # as `ops.shape`'s bare except leaves a None that a reshape refuses
                        raise TypeError("Failed to convert elements of (25, None, 2, 64) to Tensor.") from None
                    if not self.swallow:
                        raise

    def on_train_batch_end(self, batch, logs=None):
        self.ended += 1


def run(presses, at_once=False, swallow=False, mangle=False):
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.compile(loss="mse")
    counter, keep, raised = CtrlCAt(presses, swallow, mangle), KeepInterrupts(at_once), False
    before = signal.getsignal(signal.SIGINT)
    try:
        with keep:
            model.fit(np.ones((10, 1)), np.ones((10, 1)), batch_size=1, epochs=1, callbacks=[counter, keep],
                      verbose=0)
    except KeyboardInterrupt:
        raised = True
    return {"presses": presses, "at_once": at_once, "swallowed": swallow, "mangled": mangle, "ended": counter.ended,
            "raised": raised, "handler_put_back": signal.getsignal(signal.SIGINT) is before}


if __name__ == "__main__":
    for presses, at_once, swallow, mangle in ((1, False, False, False), (2, False, False, False),
                                              (1, True, False, False), (1, True, True, False), (1, True, False, True)):
        print(json.dumps(run(presses, at_once, swallow, mangle)), flush=True)
