"""Estimator names, the minimax rate curves and log-log slope summaries: what the stages, the
figures and the claims share, in NumPy only, so that a figure or claims job imports no JAX."""

from __future__ import annotations

import numpy as np

from repro26.core.stats import loglog_slope, summary

ESTIMATORS: tuple[str, ...] = ("srgw", "usvt", "sas", "nh", "sc", "density")
ESTIMATOR_LABELS = {
    "srgw": "srGW (ours)",
    "srgw_ktheory": "srGW, K = rate theory",
    "usvt": "USVT",
    "sas": "sorting-and-smoothing",
    "nh": "network histogram",
    "sc": "spectral + block means",
    "pot": "POT srGW (same BCD)",
    "density": "edge density (trivial)",
}

SCALING_MIN_N = 10_000  # below, fixed per-call costs hide the O(nnz K) term of an iteration


def theory_rate(kind: str, n: np.ndarray, K: np.ndarray) -> np.ndarray:
    r"""Minimax / oracle rate of the K-block least-squares estimator (Gao, Lu & Zhou 2015):
    SBM :math:`K^2/n^2 + \log K/n`; smooth graphon with K blocks adds the approximation error
    :math:`K^{-2}` (Lipschitz in L2)."""
    n, K = np.asarray(n, float), np.asarray(K, float)
    rate = K**2 / n**2 + np.log(np.maximum(K, 2.0)) / n
    return rate if kind == "sbm" else rate + K**-2.0


def slope_summary(ns, values_by_seed) -> dict:
    """Log-log slope per seed, summarised over seeds (NaN when a value is not positive)."""
    values_by_seed = np.asarray(values_by_seed, float)
    slopes = [loglog_slope(ns, v) if np.all(v > 0) else float("nan") for v in values_by_seed]
    finite = [s for s in slopes if np.isfinite(s)]
    out = summary(finite) if finite else {"mean": float("nan"), "ci95": [float("nan")] * 2, "n": 0}
    return {**out, "per_seed": slopes}
