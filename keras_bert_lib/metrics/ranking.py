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


def mrr_by_query(queries, labels, scores, k=10):
    """MRR@k over labelled (query, passage) rows, the way a re-ranker is scored: each query's
    candidates are its own rows, and its rank is that of its best-scored relevant passage
    (label > 0.5). Queries without a relevant passage are left out; none at all gives nan.

    Example:
        ```python
        from keras_bert_lib.metrics import mrr_by_query
        mrr_by_query(["q1", "q1", "q2", "q2"], [1, 0, 0, 1], [0.2, 0.9, 0.1, 0.8])   # (1/2 + 1) / 2 = 0.75
        ```
    """
    by_query = {}
    for i, query in enumerate(queries):
        by_query.setdefault(query, []).append(i)
    scores = np.asarray(scores, np.float64)
    rows, relevant = [], []
    width = max((len(v) for v in by_query.values()), default=0)
    for indices in by_query.values():
        good = [i for i in indices if float(labels[i]) > 0.5]
        if good:
            row = np.full(width, -np.inf)
            row[:len(indices)] = scores[indices]
            rows.append(row)
            relevant.append(indices.index(max(good, key=lambda i: scores[i])))
    return mrr_at_k(np.array(rows), relevant, k=k) if rows else float("nan")


def retrieval_metrics(query_vectors, answer_vectors):
    """Query i's answer is answer i, retrieved among all the answers by dot product (cosine for
    normalised vectors): recall@1, @5, @10 and MRR@10.

    Example:
        ```python
        import numpy as np
        from keras_bert_lib.metrics import retrieval_metrics
        retrieval_metrics(np.eye(3), np.eye(3))["recall@1"]   # 1.0
        ```
    """
    q, a = np.asarray(query_vectors, np.float64), np.asarray(answer_vectors, np.float64)
    scores, relevant = q @ a.T, np.arange(len(q))
    return {**{f"recall@{k}": recall_at_k(scores, relevant, k) for k in (1, 5, 10)},
            "mrr@10": mrr_at_k(scores, relevant, 10)}
