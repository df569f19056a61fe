"""The task metrics equal scikit-learn's and SciPy's on the same inputs, and the ranking metrics
equal a direct count."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn import metrics as sk

from keras_bert_lib import metrics

labels = st.lists(st.integers(0, 3), min_size=1, max_size=40)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:A single label was found")
@settings(max_examples=200, deadline=None)
@given(st.data())
def test_classification_metrics_equal_scikit_learns(data):
    y_true = np.array(data.draw(labels))
    y_pred = np.array(data.draw(st.lists(st.integers(0, 3), min_size=y_true.size, max_size=y_true.size)))
    assert metrics.accuracy(y_true, y_pred) == pytest.approx(sk.accuracy_score(y_true, y_pred))
    assert metrics.f1(y_true, y_pred, "macro") == pytest.approx(
        sk.f1_score(y_true, y_pred, average="macro", zero_division=0))
    assert metrics.f1(y_true, y_pred, positive=1) == pytest.approx(
        sk.f1_score(y_true == 1, y_pred == 1, zero_division=0))
    assert metrics.matthews(y_true, y_pred) == pytest.approx(sk.matthews_corrcoef(y_true, y_pred), abs=1e-12)


@pytest.mark.filterwarnings("ignore:An input array is constant")
@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.floats(-3, 3)), min_size=3, max_size=30))
def test_spearman_equals_scipys_with_ties(pairs):
    a, b = np.array(pairs, np.float64).T
    expected = stats.spearmanr(a, b).statistic
    if np.isnan(expected):
        assert np.isnan(metrics.spearman(a, b))
    else:
        assert metrics.spearman(a, b) == pytest.approx(expected, abs=1e-12)


def test_recall_and_mrr_count_the_relevant_candidates_place():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(50, 20))
    relevant = rng.integers(0, 20, 50)
    place = [int(np.sum(row > row[r])) for row, r in zip(scores, relevant)]  # candidates above it
    for k in (1, 5, 10):
        assert metrics.recall_at_k(scores, relevant, k) == np.mean([p < k for p in place])
        assert metrics.mrr_at_k(scores, relevant, k) == pytest.approx(
            np.mean([1 / (p + 1) if p < k else 0 for p in place]))
    # A scorer that cannot tell candidates apart earns nothing.
    assert metrics.recall_at_k(np.zeros((3, 4)), [0, 1, 2], k=1) == 0.0


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="y_true has 2 labels but y_pred has 3"):
        metrics.accuracy([0, 1], [0, 1, 1])
    with pytest.raises(ValueError, match="relevant indices must lie in 0 … 1"):
        metrics.recall_at_k([[0.1, 0.2]], [2])
    with pytest.raises(ValueError, match="average='micro'"):
        metrics.f1([0], [0], average="micro")
