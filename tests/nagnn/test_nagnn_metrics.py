"""Ranking metrics against scipy and brute-force definitions."""

import numpy as np
from scipy import stats

from repro26.nagnn import evaluate


def _ap_brute_force(pos, neg):
    """Mean over positives of the precision at their rank (distinct scores)."""
    scores = np.concatenate([pos, neg])
    labels = np.r_[np.ones(len(pos)), np.zeros(len(neg))]
    order = np.argsort(-scores)
    hits = np.cumsum(labels[order])
    return np.mean([hits[k] / (k + 1) for k in range(len(order)) if labels[order][k]])


def test_ap_equals_mean_precision_at_each_positive_without_ties():
    rng = np.random.default_rng(0)
    pos, neg = rng.normal(1, 1, 50), rng.normal(0, 1, 70)
    assert abs(evaluate.average_precision(pos, neg) - _ap_brute_force(pos, neg)) < 1e-12


def test_ap_of_binary_scores_counts_ties_together():
    """EdgeBank-style 0/1 scores: AP = r1 p1 + (1 - r1) * base rate."""
    pos = np.array([1, 1, 1, 0, 0.0])
    neg = np.array([1, 0, 0, 0, 0, 0.0])
    r1, p1, base = 3 / 5, 3 / 4, 5 / 11
    assert abs(evaluate.average_precision(pos, neg) - (r1 * p1 + (1 - r1) * base)) < 1e-12


def test_auroc_is_the_mann_whitney_statistic():
    rng = np.random.default_rng(1)
    pos, neg = rng.integers(0, 5, 40).astype(float), rng.integers(0, 4, 60).astype(float)
    u = stats.mannwhitneyu(pos, neg).statistic
    assert abs(evaluate.auroc(pos, neg) - u / (40 * 60)) < 1e-12


def test_mrr_by_hand():
    pos = np.array([3.0, 1.0, 2.0])
    neg = np.array([[1.0, 2.0], [2.0, 3.0], [2.0, 0.0]])  # ranks 1, 3, 1.5
    assert abs(evaluate.mrr(pos, neg) - np.mean([1, 1 / 3, 1 / 1.5])) < 1e-12
