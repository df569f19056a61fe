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


@pytest.mark.slow
def test_a_saved_model_loads_with_the_optimizer_that_trained_it_moments_and_all(tmp_path):
    """`fit` replaces the compiled optimizer with one sized to the call; the `.keras` file holds that
    one: its schedule, its slots, its weight-decay exclusions (which Keras' config leaves out) and
    the rule that the next `fit` is a new run. A step on the saved model and on the loaded one gives
    the same weights; Keras skips a file's slots that do not match, with only a warning."""
    import warnings

    import keras

    model = TextClassifier(bert_tiny(vocab_size=100, num_hidden_layers=1), num_classes=2)
    model.fit(_batch(16), np.arange(16) % 2, batch_size=8, epochs=2, verbose=0)   # sized to 4 steps
    model.save(tmp_path / "fitted.keras")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)   # "Skipping variable loading for optimizer ..."
        loaded = keras.saving.load_model(tmp_path / "fitted.keras")
    assert loaded.optimizer._learning_rate.total_steps == 4 and int(loaded.optimizer.iterations) == 4
    assert [v.path.split("/", 1)[1] for v in loaded.optimizer.variables] == \
        [v.path.split("/", 1)[1] for v in model.optimizer.variables]
    for saved, restored in zip(model.optimizer.variables, loaded.optimizer.variables):
        np.testing.assert_array_equal(np.asarray(restored), np.asarray(saved), err_msg=saved.path)
    loaded.fit(_batch(8), np.arange(8) % 2, batch_size=8, epochs=3, verbose=0)   # still sized by each fit
    assert loaded.optimizer._learning_rate.total_steps == 3

    no_dropout = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}   # the same step on both
    model = TextClassifier(bert_tiny(vocab_size=100, num_hidden_layers=1, **no_dropout), num_classes=2, dropout=0.0)
    model.train_on_batch(_batch(4), np.array([0, 1, 0, 1]))   # the unsized default: a constant peak
    model.save(tmp_path / "stepped.keras")
    loaded = keras.saving.load_model(tmp_path / "stepped.keras")
    for each in (model, loaded):
        each.train_on_batch(_batch(4), np.array([1, 0, 1, 0]))
    for saved, restored in zip(model.weights, loaded.weights):   # LayerNorm's gamma: no weight decay on either
        np.testing.assert_array_equal(np.asarray(restored), np.asarray(saved), err_msg=saved.path)


def test_a_model_compiled_without_an_optimizer_saves_and_loads_without_one(tmp_path):
    import keras

    model = TextClassifier(bert_tiny(vocab_size=100, num_hidden_layers=1), num_classes=2)
    model.compile(optimizer=None, loss="sparse_categorical_crossentropy")   # for evaluate only
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    assert loaded.compiled and loaded.optimizer is None
    config = model.get_compile_config()   # as a file written before "optimizer_built" was recorded
    del config["optimizer_built"]
    loaded.compile_from_config(config)
    assert loaded.compiled and loaded.optimizer is None
