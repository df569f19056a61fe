"""ClassificationStatistic, summed over batches, equals scikit-learn's F1 and Matthews on the whole
set, in eager code, in `fit`/`evaluate` under XLA, and after saving."""

import keras
import numpy as np
import pytest
from sklearn import metrics as sk

from keras_bert_lib.metrics import ClassificationStatistic


def _streamed(num_classes, statistic, y_true, logits, batch=32, sample_weight=None):
    metric = ClassificationStatistic(num_classes, statistic)
    for i in range(0, len(y_true), batch):
        weight = None if sample_weight is None else sample_weight[i:i + batch]
        metric.update_state(y_true[i:i + batch], logits[i:i + batch], weight)
    return float(metric.result())


def _scikit(statistic, y_true, y_pred):
    if statistic == "matthews":
        return sk.matthews_corrcoef(y_true, y_pred)
    if statistic == "f1":
        return sk.f1_score(y_true == 1, y_pred == 1, zero_division=0)
    return sk.f1_score(y_true, y_pred, average="macro", zero_division=0)


@pytest.mark.parametrize("num_classes, statistic", [(2, "f1"), (2, "f1_macro"), (2, "matthews"),
                                                    (3, "f1_macro"), (3, "matthews"), (5, "f1_macro"),
                                                    (5, "matthews")])
def test_batches_sum_to_scikit_learns_number_on_the_whole_set(num_classes, statistic):
    rng = np.random.default_rng(num_classes)
    y_true = rng.integers(0, num_classes, 333)
    if num_classes > 2:
        y_true[y_true == num_classes - 1] = 0  # one class never a label: it counts where it is predicted
    logits = rng.normal(size=(333, num_classes)) + 1.5 * np.eye(num_classes)[y_true]
    expected = _scikit(statistic, y_true, logits.argmax(-1))
    assert _streamed(num_classes, statistic, y_true, logits) == pytest.approx(expected, abs=1e-6)
    # the mean of the batches' numbers is not the set's (why a confusion matrix is summed)
    batch_mean = np.mean([_scikit(statistic, y_true[i:i + 32], logits[i:i + 32].argmax(-1)) for i in range(0, 333, 32)])
    assert abs(batch_mean - expected) > 1e-4


def test_rows_weighted_zero_do_not_count():
    rng = np.random.default_rng(1)
    y_true, logits = rng.integers(0, 3, 200), rng.normal(size=(200, 3))
    weight = (rng.random(200) < 0.7).astype("float32")
    kept = weight == 1
    expected = sk.matthews_corrcoef(y_true[kept], logits[kept].argmax(-1))
    assert _streamed(3, "matthews", y_true, logits, sample_weight=weight) == pytest.approx(expected, abs=1e-6)


def test_a_large_lopsided_set_keeps_its_precision():
    # 200,000 rows, 99.9% predicted as class 0: n² is far past float32's exact integers
    rng = np.random.default_rng(2)
    y_true = (rng.random(200_000) < 0.01).astype(int)
    y_pred = np.where(rng.random(200_000) < 0.999, 0, y_true)
    logits = np.eye(2)[y_pred]
    for statistic in ("matthews", "f1", "f1_macro"):
        assert _streamed(2, statistic, y_true, logits, batch=4096) == pytest.approx(
            _scikit(statistic, y_true, y_pred), rel=1e-4)


def test_no_rows_and_one_class_give_zero():
    metric = ClassificationStatistic(3, "matthews")
    assert float(metric.result()) == 0.0
    metric.update_state(np.array([1, 1]), np.eye(3)[[1, 1]])
    assert float(metric.result()) == 0.0 == sk.matthews_corrcoef([1, 1], [1, 1])


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="not one of"):
        ClassificationStatistic(2, "recall")
    with pytest.raises(ValueError, match="use 'f1_macro'"):
        ClassificationStatistic(3, "f1")


@pytest.mark.slow
def test_fit_and_evaluate_under_xla_give_the_whole_sets_numbers_and_it_saves(tmp_path):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(300, 4)).astype("float32")
    y = (x[:, 0] + 0.5 * rng.normal(size=300) > 0).astype("int32") + (x[:, 1] > 1).astype("int32")
    inputs = keras.Input((4,))
    model = keras.Model(inputs, keras.layers.Dense(3)(inputs))
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=True,
                  metrics=[ClassificationStatistic(3, "f1_macro"), ClassificationStatistic(3, "matthews")])
    history = model.fit(x, y, batch_size=32, epochs=2, validation_data=(x, y), verbose=0)
    predicted = model.predict(x, verbose=0).argmax(-1)
    assert history.history["val_matthews"][-1] == pytest.approx(sk.matthews_corrcoef(y, predicted), abs=1e-5)
    assert history.history["val_f1_macro"][-1] == pytest.approx(
        sk.f1_score(y, predicted, average="macro", zero_division=0), abs=1e-5)
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    results = loaded.evaluate(x, y, batch_size=17, return_dict=True, verbose=0)
    assert results["matthews"] == pytest.approx(sk.matthews_corrcoef(y, predicted), abs=1e-5)
    config = ClassificationStatistic(3, "matthews").get_config()
    assert ClassificationStatistic.from_config(config).statistic == "matthews"
