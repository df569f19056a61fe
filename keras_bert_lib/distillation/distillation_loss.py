"""Knowledge distillation of a task model: the student learns the teacher's softened outputs
(Hinton et al., 2015; DistilBERT), mixed with the hard labels where there are any."""

import keras
import numpy as np
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class DistillationLoss(keras.losses.Loss):
    """loss = α · T² · KL(softmax(t / T) ‖ softmax(s / T)) + (1 − α) · CE(y, s), the second term
    only where a hard label y is given; without one the teacher's targets are the whole loss.

    `y_true` is (B, C + 1): the teacher's C logits t, then the hard label's index, or -1 where the
    text has none (`distillation_targets` builds it). T² keeps the soft term's gradients on the
    scale of the hard one's as T grows (Hinton et al., §2).

    Args:
        temperature: float T (DistilBERT: 2).
        alpha: float. Weight of the soft term where a hard label is given.
    Example:
        ```python
        import numpy as np
        from keras_bert_lib.distillation import DistillationLoss
        targets = np.array([[2.0, -1.0, 1], [0.5, 0.5, -1]], "float32")   # teacher logits, label (or -1)
        DistillationLoss()(targets, np.array([[1.0, 0.0], [0.0, 1.0]], "float32"))
        ```
    Reference:
        Hinton, Vinyals & Dean, 2015 (https://arxiv.org/abs/1503.02531); Sanh et al., 2019 (DistilBERT)
    """

    def __init__(self, temperature=2.0, alpha=0.5, name="distillation", **kwargs):
        super().__init__(name=name, **kwargs)
        self.temperature = temperature
        self.alpha = alpha

    def call(self, y_true, y_pred):
        t = float(self.temperature)
        teacher, label = ops.cast(y_true[:, :-1], "float32"), ops.cast(y_true[:, -1], "int32")
        student = ops.cast(y_pred, "float32")
        soft = ops.softmax(teacher / t, axis=-1)
        kl = ops.sum(soft * (ops.log(ops.maximum(soft, 1e-12)) - ops.log_softmax(student / t, axis=-1)), axis=-1)
        has_label = ops.cast(label >= 0, "float32")
        hard = keras.losses.sparse_categorical_crossentropy(ops.maximum(label, 0), student, from_logits=True)
        alpha = has_label * self.alpha + (1.0 - has_label)  # no label: the soft term only
        return alpha * t * t * kl + (1.0 - alpha) * hard

    def get_config(self):
        return {**super().get_config(), "temperature": self.temperature, "alpha": self.alpha}


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class LabelledAccuracy(keras.metrics.Metric):
    """Accuracy against the hard labels of distillation targets (`distillation_targets`' last
    column), counting only the rows that have one (label ≥ 0); NaN while none has (texts labelled
    by the teacher alone: see `teacher_agreement`).

    Example:
        ```python
        import numpy as np
        from keras_bert_lib.distillation.distillation_loss import LabelledAccuracy
        metric = LabelledAccuracy()
        metric.update_state(np.array([[2.0, -1.0, 0], [0.5, 0.5, -1]]), np.array([[1.0, 0.0], [0.0, 1.0]]))
        float(metric.result())   # 1.0: one labelled row, and it is right
        ```
    """

    def __init__(self, name="accuracy", **kwargs):
        super().__init__(name=name, **kwargs)
        self.correct = self.add_variable((), initializer="zeros", name="correct")
        self.count = self.add_variable((), initializer="zeros", name="count")

    def update_state(self, y_true, y_pred, sample_weight=None):
        label = ops.cast(y_true[:, -1], "int32")
        labelled = ops.cast(label >= 0, "float32")
        right = ops.cast(ops.equal(ops.argmax(y_pred, axis=-1), label), "float32") * labelled
        self.correct.assign_add(ops.sum(right))
        self.count.assign_add(ops.sum(labelled))

    def result(self):
        return ops.where(self.count > 0, ops.divide_no_nan(self.correct, self.count), float("nan"))

    def reset_state(self):
        self.correct.assign(0.0)
        self.count.assign(0.0)


@keras.saving.register_keras_serializable(package="keras_bert_lib")
def teacher_agreement(y_true, y_pred):
    """1 where the student's class is the teacher's (the argmax of the targets' logits), else 0:
    the metric of distillation that needs no label.

    Example:
        ```python
        import numpy as np
        from keras_bert_lib.distillation.distillation_loss import teacher_agreement
        teacher_agreement(np.array([[2.0, -1.0, -1]]), np.array([[0.5, 0.1]]))   # [1.0]
        ```
    """
    same = ops.equal(ops.argmax(y_pred, axis=-1), ops.argmax(y_true[:, :-1], axis=-1))
    return ops.cast(same, "float32")


def distillation_targets(teacher, x, labels=None, batch_size=32, verbose=0):
    """(B, C + 1) targets for `DistillationLoss`: the teacher's logits on `x` (any input the
    teacher's `predict` takes: raw texts, pairs, the id dict) and each hard label, -1 for none.

    Example:
        ```python
        from keras_bert_lib import TextClassifier, bert_tiny
        from keras_bert_lib.distillation import distillation_targets
        teacher = TextClassifier(bert_tiny(vocab_size=50, num_hidden_layers=1), num_classes=2)
        ids = {"token_ids": [[2, 7, 3]], "segment_ids": [[0, 0, 0]], "padding_mask": [[1, 1, 1]]}
        distillation_targets(teacher, {k: __import__("numpy").array(v) for k, v in ids.items()})   # (1, 3)
        ```
    """
    logits = np.asarray(teacher.predict(x, batch_size=batch_size, verbose=verbose), np.float32)
    if labels is None:
        labels = np.full(len(logits), -1)
    labels = np.asarray([-1 if label is None else label for label in labels], np.float32)
    if labels.shape != (len(logits),):
        raise ValueError(f"{len(labels)} labels for {len(logits)} inputs: give one per input (None or -1 for none).")
    return np.concatenate([logits, labels[:, None]], axis=1)
