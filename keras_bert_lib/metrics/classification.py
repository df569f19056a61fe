"""Classification metrics on whole held-out sets: accuracy, F1 and Matthews correlation, equal to
scikit-learn's on the same inputs (tested)."""

import numpy as np


def _labels(y_true, y_pred):
    y_true, y_pred = np.asarray(y_true).reshape(-1), np.asarray(y_pred).reshape(-1)
    if y_true.shape != y_pred.shape:
        raise ValueError(f"y_true has {y_true.size} labels but y_pred has {y_pred.size}.")
    if not y_true.size:
        raise ValueError("No labels: a metric needs at least one example.")
    return y_true, y_pred


def accuracy(y_true, y_pred):
    """The share of predictions equal to the label.

    Example:
        ```python
        from keras_bert_lib.metrics import accuracy
        accuracy([0, 1, 1, 0], [0, 1, 0, 0])   # 0.75
        ```
    """
    y_true, y_pred = _labels(y_true, y_pred)
    return float(np.mean(y_true == y_pred))


def _f1_of(y_true, y_pred, label):
    tp = np.sum((y_pred == label) & (y_true == label))
    predicted, actual = np.sum(y_pred == label), np.sum(y_true == label)
    return 0.0 if predicted + actual == 0 else float(2 * tp / (predicted + actual))


def f1(y_true, y_pred, average="binary", positive=1):
    """F1 = 2·precision·recall / (precision + recall): of the `positive` class ("binary", GLUE's
    MRPC/QQP F1) or the unweighted mean over the classes present in either array ("macro").

    A class that is neither predicted nor present scores 0, as scikit-learn's `zero_division=0`.

    Example:
        ```python
        from keras_bert_lib.metrics import f1
        f1([0, 1, 1, 0], [0, 1, 0, 0])                    # 0.667: precision 1, recall 0.5
        f1([0, 1, 2, 2], [0, 2, 2, 2], average="macro")   # 0.6
        ```
    """
    y_true, y_pred = _labels(y_true, y_pred)
    if average == "binary":
        return _f1_of(y_true, y_pred, positive)
    if average == "macro":
        return float(np.mean([_f1_of(y_true, y_pred, c) for c in np.union1d(y_true, y_pred)]))
    raise ValueError(f"average={average!r} is not 'binary' or 'macro'.")


def matthews(y_true, y_pred):
    """Matthews correlation coefficient (GLUE's CoLA metric), multi-class form (Gorodkin 2004):
    1 is perfect, 0 is chance, -1 is always wrong; 0 when either side has one class only.

    Example:
        ```python
        from keras_bert_lib.metrics import matthews
        matthews([0, 1, 1, 0], [0, 1, 0, 0])   # 0.577
        ```
    """
    y_true, y_pred = _labels(y_true, y_pred)
    classes = np.union1d(y_true, y_pred)
    t = (y_true[:, None] == classes).sum(0).astype(np.float64)  # true count per class
    p = (y_pred[:, None] == classes).sum(0).astype(np.float64)  # predicted count per class
    n, correct = float(y_true.size), float(np.sum(y_true == y_pred))
    denominator = np.sqrt((n * n - p @ p) * (n * n - t @ t))
    return 0.0 if denominator == 0 else float((correct * n - t @ p) / denominator)


def classification_metrics(y_true, y_pred, num_classes):
    """The held-out numbers a classification run reports: accuracy, macro F1 and Matthews
    correlation, and the positive class's F1 for two classes.

    Example:
        ```python
        from keras_bert_lib.metrics import classification_metrics
        classification_metrics([0, 1, 1, 0], [0, 1, 0, 0], num_classes=2)
        ```
    """
    results = {"accuracy": accuracy(y_true, y_pred), "f1_macro": f1(y_true, y_pred, "macro"),
               "matthews": matthews(y_true, y_pred)}
    if num_classes == 2:
        results["f1"] = f1(y_true, y_pred, "binary")
    return results
