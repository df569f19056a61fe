"""DistillationLoss equals its formula written out in NumPy, reduces to Hinton's soft loss without
labels, and a student distilled from a teacher's soft targets on unlabelled inputs moves towards
the teacher's predictions."""

import keras
import numpy as np
import pytest

from keras_bert_lib import TextClassifier, bert_tiny
from keras_bert_lib.distillation import DistillationLoss, distillation_targets, student_from_teacher
from tests import harness


def _reference(teacher, label, student, t, alpha):
    def softmax(z):
        e = np.exp(z - z.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)
    p, q = softmax(teacher / t), softmax(student / t)
    kl = (p * (np.log(p) - np.log(q))).sum(-1)
    ce = -np.log(softmax(student)[np.arange(len(label)), np.maximum(label, 0)])
    a = np.where(label >= 0, alpha, 1.0)
    return (a * t * t * kl + (1 - a) * ce).mean()


def test_labelled_accuracy_counts_only_the_rows_with_a_label():
    from keras_bert_lib.distillation.distillation_loss import LabelledAccuracy

    rng = np.random.default_rng(0)
    metric = LabelledAccuracy()
    right = total = 0
    for _ in range(3):
        logits, teacher = rng.normal(size=(2, 20, 4)).astype("float32")
        label = rng.integers(-1, 4, 20)
        metric.update_state(np.concatenate([teacher, label[:, None]], 1).astype("float32"), logits)
        right += np.sum((logits.argmax(-1) == label) & (label >= 0))
        total += np.sum(label >= 0)
    assert float(metric.result()) == pytest.approx(right / total)
    metric.reset_state()
    metric.update_state(np.array([[0.0, 1.0, -1.0]], "float32"), np.array([[1.0, 0.0]], "float32"))
    assert np.isnan(float(metric.result()))  # no labelled row: nothing counted, not 0


@pytest.mark.parametrize("t, alpha", [(1.0, 0.5), (2.0, 0.5), (4.0, 0.9)])
def test_the_loss_equals_its_formula_with_and_without_hard_labels(t, alpha):
    rng = np.random.default_rng(0)
    teacher, student = rng.normal(size=(2, 6, 3)).astype("float32") * 3
    label = np.array([0, 2, -1, 1, -1, 0])
    y_true = np.concatenate([teacher, label[:, None]], axis=1).astype("float32")
    got = DistillationLoss(t, alpha)(y_true, student)
    np.testing.assert_allclose(got, _reference(teacher, label, student, t, alpha), rtol=1e-5)
    assert float(DistillationLoss(t)(np.concatenate([student, -np.ones((6, 1))], 1).astype("float32"), student)) \
        == pytest.approx(0.0, abs=1e-5)  # the student already is the teacher, no labels: nothing to learn
    restored = keras.losses.deserialize(keras.losses.serialize(DistillationLoss(t, alpha)))
    assert (restored.temperature, restored.alpha) == (t, alpha)


@pytest.mark.slow
def test_a_student_learns_the_teachers_predictions_from_unlabelled_inputs():
    keras.utils.set_random_seed(0)
    encoder = bert_tiny(vocab_size=50, num_hidden_layers=4, max_position_embeddings=16, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0)
    teacher = TextClassifier(encoder, num_classes=3, dropout=0.0)
    teacher.head.dense.kernel.assign(np.random.default_rng(1).normal(size=(128, 3)).astype("float32"))
    student = TextClassifier(student_from_teacher(encoder, [0]), num_classes=3, dropout=0.0)
    x = {"token_ids": harness.token_ids(batch=64, length=8, vocab=50), "segment_ids": np.zeros((64, 8), "int32"),
         "padding_mask": np.ones((64, 8), "int32")}
    targets = distillation_targets(teacher, x)
    assert targets.shape == (64, 4) and np.all(targets[:, -1] == -1)

    def agreement():
        return np.mean(np.argmax(student.predict(x, verbose=0), -1) == np.argmax(targets[:, :3], -1))
    before = agreement()
    student.compile(optimizer=keras.optimizers.Adam(3e-3), loss=DistillationLoss(2.0), jit_compile=False)
    history = student.fit(x, targets, batch_size=16, epochs=15, verbose=0).history
    assert agreement() >= max(0.9, before + 0.2), (before, agreement())
    assert np.isnan(history["accuracy"][-1]) and history["agreement"][-1] >= 0.9  # no labels: agreement only
    with pytest.raises(ValueError, match="2 labels for 64 inputs"):
        distillation_targets(teacher, x, labels=[0, 1])
