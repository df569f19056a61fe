"""Task metrics on whole held-out sets, in NumPy: classification, similarity, retrieval, ranking.

Each equals its usual reference on the same inputs (scikit-learn's accuracy, F1 and Matthews
correlation, SciPy's Spearman correlation; tested), so the numbers in a run's report can be set
beside published ones.
"""

import numpy as np

__all__ = ["accuracy", "f1", "matthews", "spearman", "recall_at_k", "mrr_at_k", "classification_metrics"]


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


def _ranks(x):
    """1-based ranks, ties given their average rank."""
    x = np.asarray(x, np.float64)
    order = np.argsort(x, kind="stable")
    ranks = np.empty(x.size)
    ranks[order] = np.arange(1, x.size + 1)
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse, weights=ranks)
    return sums[inverse] / counts[inverse]


def spearman(a, b):
    """Spearman's rank correlation: Pearson's correlation of the ranks (ties averaged), as in
    SciPy. The usual score of sentence embeddings against human similarity judgements (STS).

    Example:
        ```python
        from keras_bert_lib.metrics import spearman
        spearman([0.1, 0.4, 0.35, 0.8], [1, 3, 2, 4])   # 1.0: the same order
        ```
    """
    a, b = np.asarray(a, np.float64).reshape(-1), np.asarray(b, np.float64).reshape(-1)
    if a.shape != b.shape or a.size < 2:
        raise ValueError(f"spearman needs two equal-length arrays of 2 or more values; got {a.size} and {b.size}.")
    ra, rb = _ranks(a) - (a.size + 1) / 2, _ranks(b) - (b.size + 1) / 2
    denominator = np.sqrt((ra @ ra) * (rb @ rb))
    return float("nan") if denominator == 0 else float(ra @ rb / denominator)


def _rank_of_relevant(scores, relevant):
    """0-based rank of each query's relevant column in its row, best score first (ties: the
    relevant item after the others, so a constant scorer earns nothing)."""
    scores = np.asarray(scores, np.float64)
    relevant = np.asarray(relevant).reshape(-1)
    if scores.ndim != 2 or scores.shape[0] != relevant.size:
        raise ValueError(f"scores must be (queries, candidates) with one relevant index per query; got "
                         f"scores {scores.shape} and {relevant.size} indices.")
    if np.any((relevant < 0) | (relevant >= scores.shape[1])):
        raise ValueError(f"relevant indices must lie in 0 … {scores.shape[1] - 1}.")
    own = scores[np.arange(relevant.size), relevant]
    return np.sum(scores >= own[:, None], axis=1) - 1


def recall_at_k(scores, relevant, k=1):
    """The share of queries whose relevant candidate is among their k best-scored.

    Args:
        scores: (queries, candidates) similarity scores, higher is better.
        relevant: (queries,) the index of each query's relevant candidate.
        k: int.
    Example:
        ```python
        from keras_bert_lib.metrics import recall_at_k
        recall_at_k([[0.9, 0.1], [0.8, 0.3]], relevant=[0, 1], k=1)   # 0.5
        ```
    """
    return float(np.mean(_rank_of_relevant(scores, relevant) < k))


def mrr_at_k(scores, relevant, k=10):
    """Mean reciprocal rank of each query's relevant candidate, 0 when it is not in the top k
    (MS MARCO's MRR@10 for re-ranking).

    Example:
        ```python
        from keras_bert_lib.metrics import mrr_at_k
        mrr_at_k([[0.9, 0.1, 0.5], [0.8, 0.3, 0.9]], relevant=[0, 0], k=10)   # (1 + 1/2) / 2 = 0.75
        ```
    """
    rank = _rank_of_relevant(scores, relevant)
    return float(np.mean(np.where(rank < k, 1.0 / (rank + 1), 0.0)))


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
