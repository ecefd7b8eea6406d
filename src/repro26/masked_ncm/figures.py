"""Figures from the bounds tables (never from models); one function per figure."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy import stats

from repro26.core import plotting
from repro26.core.stats import mean_ci

METHODS = {"ncm": "Masked NCM", "single": "single-DAG NCM", "ida": "plug-in IDA"}


def _by_instance(table: dict, column: str) -> tuple[np.ndarray, np.ndarray]:
    """(sample sizes, values with one row per instance (seed, graph size) and one column per n)."""
    ns = np.unique(table["n"])
    keys = sorted(set(zip(table["seed"].tolist(), table["num_nodes"].tolist())))
    grid = np.full((len(keys), len(ns)), np.nan)
    for i, key in enumerate(keys):
        sel = (table["seed"] == key[0]) & (table["num_nodes"] == key[1])
        for j, n in enumerate(ns):
            grid[i, j] = table[column][sel & (table["n"] == n)][0]
    return ns, grid


def _wilson(k: np.ndarray, n: int, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    z = stats.norm.ppf(0.5 + level / 2)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def endpoints(tables: list[dict], out: Path) -> None:
    """Estimated vs true bound endpoints at the largest n, per estimator."""
    (t,) = tables
    last = t["n"] == t["n"].max()
    fig, axes = plotting.subplots(1, 3, width=3.0, height=3.0)
    for ax, (key, label) in zip(axes[0], METHODS.items()):
        ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls="--")
        ax.scatter(t["true_lo"][last], t[f"{key}_lo"][last], s=14, marker="v", label="lower endpoint")
        ax.scatter(t["true_hi"][last], t[f"{key}_hi"][last], s=14, marker="^", label="upper endpoint")
        ax.set(xlabel="true bound (IDA, exact joint)", ylabel=f"{label} bound",
               title=f"{label}, n = {int(t['n'].max()):,}", xlim=(0, 1), ylim=(0, 1))
    axes[0, 0].legend(loc="upper left")
    plotting.save(fig, out)


def error_vs_n(tables: list[dict], out: Path) -> None:
    """Mean absolute endpoint error vs sample size (95% CI over instances)."""
    (t,) = tables
    fig, axes = plotting.subplots(1, 1, width=4.2, height=3.2)
    ax = axes[0, 0]
    for key, label in METHODS.items():
        ns, grid = _by_instance(t, f"{key}_err")
        plotting.line_with_ci(ax, ns, grid, label=label, marker="o")
    ax.axhline(0.02, color="grey", ls=":", lw=1, label="0.02 (claim)")
    ax.set(xscale="log", yscale="log", xlabel="sample size n",
           ylabel="mean |endpoint - true endpoint|", title="Bound error vs n")
    ax.legend()
    plotting.save(fig, out)


def coverage(tables: list[dict], out: Path) -> None:
    """Fraction of instances whose interval contains the true effect (Wilson 95% CI)."""
    (t,) = tables
    fig, axes = plotting.subplots(1, 1, width=4.2, height=3.2)
    ax = axes[0, 0]
    for i, (key, label) in enumerate(METHODS.items()):
        ns, grid = _by_instance(t, f"{key}_cover")
        k, m = grid.sum(axis=0), grid.shape[0]
        lo, hi = _wilson(k, m)
        x = ns * (1.0 + 0.06 * (i - 1))
        yerr = np.maximum(0.0, [k / m - lo, hi - k / m])  # Wilson bounds: float error at k = m
        ax.errorbar(x, k / m, yerr=yerr, marker="o", label=label)
    ax.axhline(0.95, color="grey", ls=":", lw=1, label="95%")
    ax.set(xscale="log", ylim=(0, 1.02), xlabel="sample size n",
           ylabel="coverage of true P(Y=1 | do(X=1))", title="Coverage of the true effect")
    ax.legend(loc="lower right")
    plotting.save(fig, out)


def width_vs_class(tables: list[dict], out: Path) -> None:
    """Interval width vs size of the Markov equivalence class (mean and 95% CI per size)."""
    (t,) = tables
    fig, axes = plotting.subplots(1, 1, width=4.2, height=3.2)
    ax = axes[0, 0]
    sizes = np.unique(t["class_size"])
    series = [("true_width", t["n"] == t["n"].max(), "true bounds"),
              ("ncm_width", t["n"] == t["n"].max(), f"Masked NCM, n = {int(t['n'].max()):,}"),
              ("ncm_width", t["n"] == t["n"].min(), f"Masked NCM, n = {int(t['n'].min()):,}")]
    for i, (col, sel, label) in enumerate(series):
        means, halves = [], []
        for s in sizes:
            mean, half = mean_ci(t[col][sel & (t["class_size"] == s)])
            means.append(mean)
            halves.append(half)
        ax.errorbar(sizes + 0.12 * (i - 1), means, yerr=halves, marker="o", capsize=2, label=label)
    ax.set(xlabel="size of the Markov equivalence class (DAGs)", ylabel="interval width",
           title="Width vs class size")
    ax.set_xticks(sizes)
    ax.legend()
    plotting.save(fig, out)


def iv_bounds(tables: list[dict], out: Path) -> None:
    """Semi-Markovian IV model: Masked NCM bounds vs Balke-Pearl LP bounds."""
    (t,) = tables
    fig, axes = plotting.subplots(1, 2, width=3.6, height=3.2)
    ns = np.unique(t["n"])
    seeds = np.unique(t["seed"])
    grid = np.array([[t["ncm_err"][(t["seed"] == s) & (t["n"] == n)][0] for n in ns] for s in seeds])
    plotting.line_with_ci(axes[0, 0], ns, grid, label="Masked NCM", marker="o")
    axes[0, 0].set(xscale="log", yscale="log", xlabel="sample size n",
                   ylabel="mean |endpoint - LP endpoint|", title="IV: error vs Balke-Pearl bounds")
    axes[0, 0].legend()
    ax = axes[0, 1]
    last = t["n"] == t["n"].max()
    ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls="--")
    ax.scatter(t["true_lo"][last], t["ncm_lo"][last], s=14, marker="v", label="lower endpoint")
    ax.scatter(t["true_hi"][last], t["ncm_hi"][last], s=14, marker="^", label="upper endpoint")
    ax.set(xlabel="Balke-Pearl bound (true P)", ylabel="Masked NCM bound", xlim=(0, 1), ylim=(0, 1),
           title=f"n = {int(t['n'].max()):,}")
    ax.legend(loc="upper left")
    plotting.save(fig, out)
