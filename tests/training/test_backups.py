"""A run's backups: each written beside the last and renamed, the newest two kept; restoring
takes the newest that loads (weights, optimizer state and dropout's seed states), names a damaged
one and falls back; what a kill left half written is removed. And one writer per output."""

import logging
import os
import time

import keras
import numpy as np
import pytest

from keras_bert_lib import TextClassifier, bert_tiny
from keras_bert_lib.output_lock import output_lock
from keras_bert_lib.training.backups import EpochBackups, backups, restore_backup, save_backup, seed_states
from tests.lock_holder import lock_held_elsewhere

X = {"token_ids": np.arange(24, dtype="int32").reshape(3, 8) % 50, "segment_ids": np.zeros((3, 8), "int32"),
     "padding_mask": np.ones((3, 8), "int32")}
Y = np.array([0, 1, 0])


def _model(seed=0):
    keras.utils.set_random_seed(seed)
    model = TextClassifier(bert_tiny(num_hidden_layers=1, vocab_size=50), num_classes=2)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", run_eagerly=True)
    model.optimizer.build(model.trainable_variables)
    return model


def _state(model):
    return [keras.ops.convert_to_numpy(v) for v in model.variables + model.optimizer.variables]


@pytest.mark.slow
def test_a_backup_restores_weights_optimizer_and_seeds_and_two_are_kept(tmp_path):
    model = _model()
    folder = str(tmp_path / "backup")
    model.fit(X, Y, epochs=3, verbose=0, callbacks=[EpochBackups(folder)])
    assert [epoch for epoch, _ in backups(folder)] == [3, 2]
    assert sorted(os.listdir(folder)) == ["epoch-0002", "epoch-0003"]  # no staging folder left
    saved = _state(model)
    assert any(np.any(keras.ops.convert_to_numpy(v)[1] > 0) for v in seed_states(model))  # dropout drew
    fresh = _model(seed=1)
    assert restore_backup(fresh, folder) == 3
    for a, b in zip(saved, _state(fresh)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.slow
def test_a_damaged_newest_backup_falls_back_to_the_one_before_with_a_line(tmp_path, caplog):
    model = _model()
    folder = str(tmp_path / "backup")
    save_backup(model, folder, 1)
    first = _state(model)
    model.fit(X, Y, epochs=1, verbose=0)
    save_backup(model, folder, 2)
    weights = os.path.join(folder, "epoch-0002", "model.weights.h5")
    with open(weights, "r+b") as f:
        f.truncate(os.path.getsize(weights) // 2)
    os.makedirs(os.path.join(folder, ".epoch-0003-abcd"))  # a kill inside the next write
    fresh = _model(seed=1)
    with caplog.at_level(logging.WARNING):
        assert restore_backup(fresh, folder) == 1
    assert "The backup of epoch 2" in caplog.text and "resuming from the backup of epoch 1" in caplog.text
    for a, b in zip(first, _state(fresh)):
        np.testing.assert_array_equal(a, b)
    assert not os.path.exists(os.path.join(folder, ".epoch-0003-abcd"))
    (tmp_path / "backup" / "epoch-0001" / "state.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"No backup in .*backup loads \(the last, of epoch 1: .*\): pass --overwrite"):
        restore_backup(_model(), folder)


@pytest.mark.slow
def test_a_second_writer_is_refused_naming_the_first_and_a_dead_ones_lock_is_taken_over(tmp_path):
    lock = str(tmp_path / "run" / ".lock")
    with lock_held_elsewhere(lock) as holder:
        with pytest.raises(ValueError) as refused:
            with output_lock(lock, str(tmp_path / "run"), "--output-dir"):
                pass
    assert str(refused.value) == (f"{tmp_path / 'run'} is being written by process {holder.pid} (keras-bert): wait "
                                  "for it to end, stop it, or choose another --output-dir.")
    assert os.path.exists(lock)  # SIGKILL: no clean-up ran
    start = time.monotonic()
    with output_lock(lock, str(tmp_path / "run"), "--output-dir"):
        assert open(lock).read().strip() == str(os.getpid())
    assert time.monotonic() - start < 1 and not os.path.exists(lock)
