"""Backups for resuming a run: each epoch's training state written beside the last one and
renamed into place, the newest two kept; a damaged newest one falls back to the one before.

`backup/epoch-0003/` holds `model.weights.h5` (the model's and the optimizer's variables, as
Keras' `save_weights` writes them) and `state.json` (the epoch, and the states of the model's
random-seed generators, which `save_weights` leaves out and which dropout draws from). A folder is
written as `backup/.epoch-0003-XXXX/` and renamed whole, so a kill at any moment leaves either the
new backup or none, never a half-written one; the weights are on disk (fsync) before the rename.
Keras' `BackupAndRestore` rewrites its one file in place, so a kill in that write left a run that
could not resume.
"""

import glob
import json
import logging
import os
import shutil
import tempfile

import keras

from keras_bert_lib.atomic_write import atomic_write_text, default_mode, fsync_file

logger = logging.getLogger(__name__)
WEIGHTS, STATE = "model.weights.h5", "state.json"


def backups(folder):
    """[(epoch, path)] of the complete backups in `folder`, newest first.

    Example:
        ```python
        from keras_bert_lib.training.backups import backups
        assert backups("no/such/folder") == []
        ```
    """
    found = []
    for path in glob.glob(os.path.join(glob.escape(folder), "epoch-*")):
        number = os.path.basename(path)[len("epoch-"):]
        if number.isdigit() and os.path.isfile(os.path.join(path, STATE)):
            found.append((int(number), path))
    return sorted(found, reverse=True)


def seed_states(model):
    """The model's random-seed generator states (dropout's), in `model.variables` order.

    Example:
        ```python
        from keras_bert_lib import bert_tiny
        from keras_bert_lib.training.backups import seed_states
        assert len(seed_states(bert_tiny())) > 0   # one per dropout
        ```
    """
    return [v for v in model.variables if v.path.endswith("seed_generator_state")]


def save_backup(model, folder, epoch, keep=2):
    """Writes `model`'s training state after `epoch` epochs as `folder/epoch-NNNN/` (beside, then
    renamed), then removes all but the newest `keep` backups and any staging folder a kill left.

    Example:
        ```python
        import tempfile
        from keras_bert_lib import TextClassifier, bert_tiny
        from keras_bert_lib.training.backups import backups, save_backup
        folder = tempfile.mkdtemp()
        save_backup(TextClassifier(bert_tiny(num_hidden_layers=1), num_classes=2), folder, epoch=1)
        assert [epoch for epoch, _ in backups(folder)] == [1]
        ```
    """
    os.makedirs(folder, exist_ok=True)
    staging = tempfile.mkdtemp(dir=folder, prefix=f".epoch-{epoch:04d}-")
    try:
        model.save_weights(os.path.join(staging, WEIGHTS))
        fsync_file(os.path.join(staging, WEIGHTS))
        seeds = [keras.ops.convert_to_numpy(v).tolist() for v in seed_states(model)]
        atomic_write_text(os.path.join(staging, STATE), json.dumps({"epoch": epoch, "seeds": seeds}))
        default_mode(staging)
        target = os.path.join(folder, f"epoch-{epoch:04d}")
        shutil.rmtree(target, ignore_errors=True)  # the same epoch again, after a fall-back
        os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    for _, old in backups(folder)[keep:]:
        shutil.rmtree(old, ignore_errors=True)


def restore_backup(model, folder):
    """Restores the newest backup in `folder` that loads into `model` (its weights, its
    optimizer's state and its seed generators); returns its epoch, or 0 where there is none (the
    run starts from the beginning). A damaged backup is named in a warning and the one before it
    is tried; where none loads, a ValueError says so (a half-loaded model never trains on).
    Staging folders that a kill left are removed. The optimizer must be built.

    Example:
        ```python
        import tempfile
        from keras_bert_lib import TextClassifier, bert_tiny
        from keras_bert_lib.training.backups import restore_backup
        assert restore_backup(TextClassifier(bert_tiny(num_hidden_layers=1), num_classes=2), tempfile.mkdtemp()) == 0
        ```
    """
    for stale in glob.glob(os.path.join(glob.escape(folder), ".epoch-*")):
        shutil.rmtree(stale, ignore_errors=True)
    found = backups(folder)
    for i, (epoch, path) in enumerate(found):
        try:
            with open(os.path.join(path, STATE), encoding="utf-8") as f:
                seeds = json.load(f)["seeds"]
            model.load_weights(os.path.join(path, WEIGHTS))
            states = seed_states(model)
            if len(seeds) != len(states):
                raise ValueError(f"it holds {len(seeds)} seed states, the model has {len(states)}")
            for variable, value in zip(states, seeds):
                variable.assign(value)
            return epoch
        except (OSError, ValueError, KeyError, TypeError) as e:  # truncated, corrupt, or of another model
            why = str(e).splitlines()[0] if str(e) else type(e).__name__
            if i + 1 == len(found):
                raise ValueError(f"No backup in {folder} loads (the last, of epoch {epoch}: {why}): pass --overwrite "
                                 "to start the run again.") from None
            logger.warning("The backup of epoch %d (%s) does not load (%s): resuming from the backup of epoch %d.",
                           epoch, path, why, found[i + 1][0])
    return 0


class EpochBackups(keras.callbacks.Callback):
    """Backs the training state up at the end of every epoch (`save_backup`), numbered as `fit`
    numbers epochs (a run resumed with `initial_epoch=3` writes epoch-0004 next).

    Example:
        ```python
        import tempfile
        from keras_bert_lib.training.backups import EpochBackups
        callback = EpochBackups(tempfile.mkdtemp())
        ```
    """

    def __init__(self, folder, keep=2):
        super().__init__()
        self.folder, self.keep = folder, keep

    def on_epoch_end(self, epoch, logs=None):
        save_backup(self.model, self.folder, epoch + 1, self.keep)
