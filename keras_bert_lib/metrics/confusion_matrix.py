"""ClassificationStatistic: macro F1, the positive class's F1 or Matthews correlation as a Keras
metric, from a confusion matrix summed over every batch, so that the held-out pass of `fit` gives
the same numbers as `classification_metrics` on the whole held-out set (tested) and a run's
report needs no other pass over it."""

import keras
from keras import ops

STATISTICS = ("f1_macro", "f1", "matthews")


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class ClassificationStatistic(keras.metrics.Metric):
    """One of `STATISTICS` over all the batches seen since the last reset, from the confusion
    matrix C[true, predicted] (the predicted class is the argmax of `y_pred`):

    - "f1_macro": the mean over the classes that occur as a label or a prediction of
      2·C[c, c] / (Σ_p C[c, p] + Σ_t C[t, c]);
    - "f1": that F1 of class 1 alone (GLUE's F1 for MRPC and QQP);
    - "matthews": (correct·n − t·p) / √((n² − p·p)(n² − t·t)), t and p the true and predicted
      counts per class (Gorodkin 2004), 0 where the denominator is; computed from whole-count
      differences, so that float32 keeps its precision on large, lopsided sets (tested on
      200,000 rows).

    Batch means of these are not the set's, which is why Keras' own F1 needs the whole set in one
    batch; a confusion matrix sums exactly. Rows with `sample_weight` 0 do not count.

    Args:
        num_classes: int. Classes of the labels.
        statistic: one of "f1_macro", "f1", "matthews"; also the metric's default name.
    Example:
        ```python
        import numpy as np
        from keras_bert_lib.metrics import ClassificationStatistic
        metric = ClassificationStatistic(2, "matthews")
        metric.update_state(np.array([0, 1]), np.array([[2.0, 0.0], [0.0, 1.0]]))
        metric.update_state(np.array([1, 0]), np.array([[2.0, 0.0], [1.0, 0.0]]))
        float(metric.result())   # 0.577: the same as matthews([0, 1, 1, 0], [0, 1, 0, 0])
        ```
    """

    def __init__(self, num_classes, statistic, name=None, **kwargs):
        if statistic not in STATISTICS:
            raise ValueError(f"statistic={statistic!r} is not one of {STATISTICS}.")
        if statistic == "f1" and num_classes != 2:
            raise ValueError(f"statistic='f1' is the F1 of class 1 of two classes; with {num_classes} classes "
                             "use 'f1_macro'.")
        super().__init__(name=name or statistic, **kwargs)
        self.num_classes, self.statistic = num_classes, statistic
        self.counts = self.add_variable((num_classes, num_classes), initializer="zeros", name="confusion_matrix")

    def update_state(self, y_true, y_pred, sample_weight=None):
        true = ops.one_hot(ops.reshape(ops.cast(y_true, "int32"), (-1,)), self.num_classes, dtype="float32")
        predicted = ops.one_hot(ops.argmax(ops.reshape(y_pred, (-1, self.num_classes)), axis=-1),
                                self.num_classes, dtype="float32")
        if sample_weight is not None:
            true = true * ops.reshape(ops.cast(sample_weight, "float32"), (-1, 1))
        self.counts.assign_add(ops.matmul(ops.transpose(true), predicted))

    def result(self):
        counts = ops.convert_to_tensor(self.counts)
        actual, predicted, right = ops.sum(counts, axis=1), ops.sum(counts, axis=0), ops.diagonal(counts)
        if self.statistic == "matthews":
            # n·correct − t·p = Σ_k (TP_k·TN_k − FN_k·FP_k) and n² − p·p = Σ_k P_k·(n − P_k): every
            # difference is of whole counts (exact in float32), so nothing cancels in rounding
            n = ops.sum(actual)
            share = lambda count: ops.divide_no_nan(count, n)  # noqa: E731
            false_negative, false_positive = actual - right, predicted - right
            true_negative = n - actual - false_positive
            covariance = ops.sum(share(right) * share(true_negative) - share(false_negative) * share(false_positive))
            spread = ops.sum(share(predicted) * share(n - predicted)) * ops.sum(share(actual) * share(n - actual))
            return ops.divide_no_nan(covariance, ops.sqrt(spread))
        f1 = ops.divide_no_nan(2.0 * right, actual + predicted)
        if self.statistic == "f1":
            return f1[1]
        present = ops.cast(actual + predicted > 0, "float32")
        return ops.divide_no_nan(ops.sum(f1 * present), ops.sum(present))

    def reset_state(self):
        self.counts.assign(ops.zeros((self.num_classes, self.num_classes)))

    def get_config(self):
        return {**super().get_config(), "num_classes": self.num_classes, "statistic": self.statistic}
