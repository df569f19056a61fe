"""Rank metrics: Spearman correlation with human similarity scores (equal to SciPy's), and
recall@k and MRR@k for retrieval and re-ranking."""

import numpy as np


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
