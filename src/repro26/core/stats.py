"""Small statistics used by claims and figures: spread over seeds, log-log slopes."""

from __future__ import annotations

import numpy as np
from scipy.special import stdtrit  # Student-t quantile; scipy.stats costs every job ~0.7 CPU-s to import


def mean_ci(values, axis: int = 0, level: float = 0.95):
    """Mean and half-width of the Student-t confidence interval over ``axis`` (the seeds).
    With fewer than two values there is no interval: the half-width is NaN, never 0."""
    values = np.asarray(values, dtype=float)
    n = values.shape[axis]
    mean = values.mean(axis=axis)
    if n < 2:
        return mean, np.full_like(mean, np.nan)
    sem = values.std(axis=axis, ddof=1) / np.sqrt(n)
    return mean, stdtrit(n - 1, 0.5 + level / 2) * sem


def summary(values, level: float = 0.95, positive: bool = False) -> dict:
    """``{"mean", "ci95": [lo, hi], "n"}`` of a 1-D sample (for claims.json).

    ``positive=True`` is for quantities that cannot be negative (errors, counts, times, ratios):
    the interval is the t-interval of log(values) mapped back, so it never crosses 0, and
    ``mean`` is the geometric mean (``"scale": "log"`` says so)."""
    values = np.asarray(values, dtype=float).reshape(-1)
    if positive:
        if np.any(values <= 0):
            raise ValueError("summary(positive=True) needs values > 0")
        mean, half = mean_ci(np.log(values), level=level)
        return {"mean": float(np.exp(mean)), "ci95": [float(np.exp(mean - half)),
                                                      float(np.exp(mean + half))],
                "n": int(values.size), "scale": "log"}
    mean, half = mean_ci(values, level=level)
    return {"mean": float(mean), "ci95": [float(mean - half), float(mean + half)], "n": int(values.size)}


def loglog_slope(x, y) -> float:
    """Least-squares slope of log y against log x."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def loglog_slope_over_seeds(x, y_by_seed) -> dict:
    """Slope fitted per seed (rows of ``y_by_seed``), summarised with a CI over seeds."""
    slopes = [loglog_slope(x, y) for y in np.asarray(y_by_seed, float)]
    return {**summary(slopes), "per_seed": slopes}
