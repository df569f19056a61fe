"""Runs a `keras-bert` command that kills itself with a real SIGKILL at a chosen moment:

    python tests/training/killed_at.py step:N -- finetune classify ...      # after optimizer step N
    python tests/training/killed_at.py backup:E -- finetune classify ...    # inside the write of epoch E's backup

A kill -9 from outside cannot aim at one write; from inside, the moment is exact. The backup kill
lands once the weights file is half written, as a kill during a large checkpoint's write would.
"""

import os
import signal
import sys


def main():
    moment, _, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
    kind, number = moment.split(":")
    number = int(number)

    import keras

    from keras_bert_lib.training import backups, callbacks

    if kind == "step":
        check = callbacks.StopOnNonFiniteLoss.on_train_batch_end

        def killed_after_step(self, batch, logs=None):
            check(self, batch, logs)
            if int(keras.ops.convert_to_numpy(self.model.optimizer.iterations)) == number:
                os.kill(os.getpid(), signal.SIGKILL)

        callbacks.StopOnNonFiniteLoss.on_train_batch_end = killed_after_step
    else:
        save = keras.Model.save_weights

        def killed_mid_write(model, path, *args, **kwargs):
            save(model, path, *args, **kwargs)
            if f".epoch-{number:04d}-" in path:
                with open(path, "r+b") as f:  # half of it on disk, as the kill found it
                    f.truncate(os.path.getsize(path) // 2)
                os.kill(os.getpid(), signal.SIGKILL)

        keras.Model.save_weights = killed_mid_write
        assert backups.save_backup  # the writer whose weights file is cut
    from keras_bert_lib.cli import main as run

    sys.exit(run(argv))


if __name__ == "__main__":
    main()
