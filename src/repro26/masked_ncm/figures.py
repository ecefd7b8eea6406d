"""Figures of masked_ncm in the paper's order; each reads the bounds tables (never models), and
its docstring is its caption."""

from __future__ import annotations

import numpy as np

from repro26.core import plotting, tables
from repro26.core.method import figure, figures_by_name
from repro26.core.stats import mean_ci
from repro26.masked_ncm.claims import wilson

#: given the true CPDAG
METHODS = {"ncm": "Masked NCM", "ida": "plug-in IDA"}
#: with PC's estimated CPDAG (what a user has)
PC_METHODS = {"ncm_pc": "Masked NCM (PC class)", "single": "single-DAG NCM (PC, one DAG)",
              "ida_pc": "plug-in IDA (PC class)"}


def _by_instance(table: dict, column: str) -> tuple[np.ndarray, np.ndarray]:
    """(sample sizes, values with one row per instance (seed, graph size) and one column per n)."""
    grids = [tables.pivot(table, column, num_nodes=d) for d in tables.unique(table, "num_nodes")]
    return grids[0][0], np.concatenate([grid for _, grid in grids])


def _bounds(run) -> dict:
    return tables.read(run.input("bounds.csv"))


@figure("bounds.csv")
def endpoints(run):
    """Estimated vs true bound endpoints of P(Y=1 | do(X=1)) at the largest sample size, one point
    per instance (seed x graph size). True bounds: IDA over the true Markov equivalence class with
    the exact joint. Panels: Masked NCM given the true CPDAG (masks over every DAG of the class),
    plug-in IDA over the same class, and the single-DAG NCM (its own model, on a random consistent
    extension of the CPDAG estimated by PC)."""
    t = _bounds(run)
    last = t["n"] == t["n"].max()
    fig, axes = plotting.subplots(1, 3, width=3.0, height=3.0)
    panels = {**METHODS, "single": "single-DAG NCM"}
    for ax, (key, label) in zip(axes[0], panels.items()):
        ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls="--")
        ax.scatter(t["true_lo"][last], t[f"{key}_lo"][last], s=14, marker="v", label="lower endpoint")
        ax.scatter(t["true_hi"][last], t[f"{key}_hi"][last], s=14, marker="^", label="upper endpoint")
        ax.set(xlabel="true bound (IDA, exact joint)", ylabel=f"{label} bound", title=label,
               xlim=(0, 1), ylim=(0, 1))
    axes[0, 0].legend(loc="upper left")
    fig.suptitle(f"largest sample size, n = {int(t['n'].max()):,}", y=1.06)
    return fig


@figure("bounds.csv")
def error_vs_n(run):
    """Mean absolute endpoint error (|lo_hat - lo| + |hi_hat - hi|) / 2 against the true bounds vs
    the number of observational samples n; mean over instances (seeds x graph sizes) with a 95% CI
    band. Left: given the true CPDAG, Masked NCM vs plug-in IDA on the same samples (the dotted
    line is the claim's 0.02 threshold at the largest n). Right: with PC's estimated CPDAG."""
    t = _bounds(run)
    fig, axes = plotting.subplots(1, 2, width=4.2, height=3.2, sharey=True)
    axes[0, 0].axhline(0.02, color="grey", ls=":", lw=1, label="0.02 (claim)")
    for ax, methods, title in ((axes[0, 0], METHODS, "given the true CPDAG"),
                               (axes[0, 1], PC_METHODS, "CPDAG estimated by PC")):
        for key, label in methods.items():
            ns, grid = _by_instance(t, f"{key}_err")
            plotting.line_with_ci(ax, ns, grid, label=label, marker="o")
        ax.set(xscale="log", yscale="log", xlabel="sample size n", title=title)
        ax.legend(fontsize=7)
    axes[0, 0].set(ylabel="mean |endpoint - true endpoint|")
    return fig


@figure("bounds.csv")
def coverage(run):
    """Fraction of instances whose interval contains the true effect (the query in the
    data-generating DAG) vs n, with Wilson 95% intervals, all with the CPDAG estimated by PC from
    the same samples. The Masked NCM interval is a profile-likelihood region (chi^2_1, alpha = 0.05)
    united over PC's class; the single-DAG NCM is its own model on a random consistent extension of
    PC's CPDAG; dashed: the Masked NCM given the true CPDAG (the region's level by construction,
    a reference)."""
    t = _bounds(run)
    fig, axes = plotting.subplots(1, 1, width=5.0, height=3.8)
    ax = axes[0, 0]
    series = [*PC_METHODS.items(), ("ncm", "Masked NCM (true CPDAG)")]
    for i, (key, label) in enumerate(series):
        ns, grid = _by_instance(t, f"{key}_cover")
        k, m = grid.sum(axis=0), grid.shape[0]
        lo, hi = wilson(k, m)
        x = ns * (1.0 + 0.06 * (i - 1.5))
        yerr = np.maximum(0.0, [k / m - lo, hi - k / m])  # Wilson bounds: float error at k = m
        ax.errorbar(x, k / m, yerr=yerr, marker="o", label=label, ls="--" if key == "ncm" else "-")
    ax.axhline(0.95, color="grey", ls=":", lw=1, label="95%")
    ax.set(xscale="log", ylim=(0, 1.02), xlabel="sample size n",
           ylabel="coverage of true P(Y=1 | do(X=1))", title="Coverage of the true effect")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=7)
    return fig


@figure("bounds.csv")
def width_vs_class(run):
    """Width of the true bounds and of the Masked NCM interval (smallest and largest n) vs the
    number of DAGs in the Markov equivalence class; mean and 95% CI over the instances of each class
    size, clipped to a width's [0, 1] (a class size with one instance has no interval)."""
    t = _bounds(run)
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
        yerr = plotting.clipped_yerr(np.asarray(means), np.asarray(halves), (0.0, 1.0))
        ax.errorbar(sizes + 0.12 * (i - 1), means, yerr=yerr, marker="o", capsize=2, label=label)
    ax.set(xlabel="size of the Markov equivalence class (DAGs)", ylabel="interval width",
           title="Width vs class size")
    ax.set_xticks(sizes)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=7)
    return fig


@figure("iv_bounds.csv")
def iv_bounds(run):
    """Semi-Markovian variant: instrument Z -> X -> Y with X <-> Y confounded (binary). The Masked
    NCM reads a shared discrete confounder (iv.num_latent states: 8 at smoke and small, 16 at paper)
    in the mechanisms of X and Y; its query phase is not scaled by n^{-1/2} and anneals the data-fit
    region from n = 100 to the real n; several restarts. Left: mean absolute endpoint error against
    the Balke-Pearl LP bounds of the true distribution vs n (95% CI over seeds). Right: endpoints at
    the largest n. The trivial baseline is the plug-in natural bounds (ignore Z); the plug-in
    Balke-Pearl LP is the specialist for this graph."""
    t = tables.read(run.input("iv_bounds.csv"))
    fig, axes = plotting.subplots(1, 2, width=3.6, height=3.2)
    for key, label in (("ncm", "Masked NCM"), ("natural", "natural bounds (no Z)"),
                       ("lp", "plug-in Balke-Pearl LP")):
        ns, grid = tables.pivot(t, f"{key}_err")
        plotting.line_with_ci(axes[0, 0], ns, grid, label=label, marker="o")
    axes[0, 0].set(xscale="log", yscale="log", xlabel="sample size n",
                   ylabel="mean |endpoint - LP endpoint|", title="IV: error vs Balke-Pearl bounds")
    axes[0, 0].legend(fontsize=7)
    ax = axes[0, 1]
    last = t["n"] == t["n"].max()
    ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls="--")
    ax.scatter(t["true_lo"][last], t["ncm_lo"][last], s=14, marker="v", label="lower endpoint")
    ax.scatter(t["true_hi"][last], t["ncm_hi"][last], s=14, marker="^", label="upper endpoint")
    ax.set(xlabel="Balke-Pearl bound (true P)", ylabel="Masked NCM bound", xlim=(0, 1), ylim=(0, 1),
           title=f"n = {int(t['n'].max()):,}")
    ax.legend(loc="upper left")
    return fig


FIGURES = figures_by_name(endpoints, error_vs_n, coverage, width_vs_class, iv_bounds)
