"""A task model's `fit` trains as `keras-bert finetune` does: the same optimizer and schedule,
sized to the call."""

import numpy as np
import pytest

from keras_bert_lib import TextClassifier, bert_tiny
from keras_bert_lib.tasks.task_model import default_optimizer
from keras_bert_lib.training import WarmupLinearDecay, create_optimizer


def _batch(rows):
    ids = np.random.default_rng(0).integers(5, 100, (rows, 8)).astype("int32")
    return {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": np.ones_like(ids)}


@pytest.mark.slow
def test_fit_sizes_the_default_warm_up_and_decay_to_its_own_steps():
    model = TextClassifier(bert_tiny(vocab_size=100), num_classes=2)
    model.fit(_batch(40), np.arange(40) % 2, batch_size=8, epochs=2, verbose=0)   # 5 batches x 2 epochs
    schedule = model.optimizer._learning_rate
    assert isinstance(schedule, WarmupLinearDecay)
    assert (schedule.peak_learning_rate, schedule.warmup_steps, schedule.total_steps) == (5e-5, 1, 10)
    assert int(model.optimizer.iterations) == 10 and float(schedule(10)) == 0.0
    cli = create_optimizer("adamw", 5e-5, 1, 10, weight_decay=0.01, clipnorm=1.0)   # what finetune builds
    for name in ("weight_decay", "beta_1", "beta_2", "epsilon", "global_clipnorm"):
        assert getattr(model.optimizer, name) == getattr(cli, name), name
    model.fit(_batch(16), np.arange(16) % 2, batch_size=8, epochs=3, verbose=0)   # a second call: a run of its own
    assert model.optimizer._learning_rate.total_steps == 6 and int(model.optimizer.iterations) == 6


@pytest.mark.slow
def test_a_peak_of_ones_own_keeps_the_recipe_and_another_optimizer_is_left_alone():
    model = TextClassifier(bert_tiny(vocab_size=100), num_classes=2)
    model.compile(optimizer=default_optimizer(learning_rate=3e-4))
    model.fit(_batch(32), np.arange(32) % 2, batch_size=16, epochs=5, verbose=0)
    assert model.optimizer._learning_rate.peak_learning_rate == 3e-4
    assert model.optimizer._learning_rate.total_steps == 10
    model.compile(optimizer="adam")
    adam = model.optimizer
    model.fit(_batch(32), np.arange(32) % 2, batch_size=16, verbose=0)
    assert model.optimizer is adam and float(adam.learning_rate) == pytest.approx(1e-3)


@pytest.mark.slow
def test_train_on_batch_steps_one_optimizer_whose_moments_it_keeps():
    """Only `fit` sizes the default optimizer to its call; `train_on_batch` is one step of it."""
    model = TextClassifier(bert_tiny(vocab_size=100, num_hidden_layers=1), num_classes=2)
    optimizer = model.optimizer
    for _ in range(3):
        model.train_on_batch(_batch(4), np.array([0, 1, 0, 1]))
    assert model.optimizer is optimizer and int(optimizer.iterations) == 3
    moments = [v for v in optimizer.variables if v.path.endswith("_momentum")]
    assert moments and all(np.any(np.asarray(v)) for v in moments)  # every weight's first moment has moved
