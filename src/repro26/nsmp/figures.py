"""Figures (read tables only, in the paper's order): relative error vs rounds / floats, messages
vs number of clients; each returns the matplotlib figure and its docstring is the caption.

Curves show each method at its chosen grid point (``evaluation.csv``). Seeds have different
communication per iteration, so each seed's error is read as a step function of the cumulative
cost on a common grid; the line is the geometric mean over seeds and the band its 95% CI (taken
on ``log10`` error).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from repro26.core import plotting, tables
from repro26.core.method import figure, figures_by_name
from repro26.core.stats import mean_ci
from repro26.nsmp.data import QUADRATIC, parse_case
from repro26.nsmp.evaluate import numeric

METHOD_STYLE = {
    "nsmp": ("NSMP (ours, 2 passes / round)", "C0"),
    "admm": ("consensus ADMM", "C1"),
    "fedavg": ("FedAvg", "C2"),
    "fedprox": ("FedProx", "C3"),
}


def _curve_paths(cfg) -> list[str]:
    """The error curves of every method on every convergence case."""
    return [f"runs/{case}/{method}.csv" for case in cfg.cases for method in METHOD_STYLE]


def _curves(run, evaluation) -> dict[tuple[str, str], dict[str, np.ndarray]]:
    """Curve tables restricted to the chosen grid point, by (case, method)."""
    chosen = {(str(c), str(m)): str(h) for c, m, h in
              zip(evaluation["case"], evaluation["method"], evaluation["hp"])}
    out = {}
    for path in map(Path, run.inputs):
        if path.name == "evaluation.csv":
            continue
        table = tables.read(path)
        if not table.get("case", np.array([])).size:
            continue
        key = (str(table["case"][0]), str(table["method"][0]))
        out[key] = tables.select(table, hp=chosen.get(key, ""))
    return out


def _on_grid(table, x_name: str, grid: np.ndarray) -> np.ndarray:
    """``log10`` error of every seed as a step function of cumulative ``x`` on ``grid``."""
    rows = []
    for seed in np.unique(table["seed"]):
        sel = table["seed"] == seed
        x = np.concatenate([[0.0], table[x_name][sel].astype(float)])
        e = np.concatenate([[1.0], table["rel_err"][sel].astype(float)])
        pos = np.searchsorted(x, grid, side="right") - 1
        rows.append(np.log10(np.maximum(e[pos], 1e-17)))
    return np.array(rows)


def _error_panels(run, x_name: str, xlabel: str):
    cfg = run.cfg
    evaluation = tables.read(run.input("evaluation.csv"))
    curves = _curves(run, evaluation)
    cases = list(cfg.cases)
    ncols = min(4, len(cases))
    nrows = int(np.ceil(len(cases) / ncols))
    fig, axes = plotting.subplots(nrows, ncols, width=3.6, height=3.0, constrained_layout=True)
    for ax in axes.ravel()[len(cases):]:
        ax.set_visible(False)
    for ax, case in zip(axes.ravel(), cases):
        xs = [curves[(case, m)][x_name].astype(float) for m in METHOD_STYLE if (case, m) in curves]
        hi = max(x.max() for x in xs)
        lo = min(x[x > 0].min() for x in xs)
        grid = np.geomspace(lo, hi, 300)
        for method, (label, color) in METHOD_STYLE.items():
            if (case, method) not in curves:
                continue
            table = curves[(case, method)]
            logs = _on_grid(table, x_name, grid)
            mean, half = mean_ci(logs, axis=0)
            hp = table["hp"][0]
            name = label if hp == "-" else f"{label} [{hp}]"
            ax.plot(grid, 10**mean, color=color, label=name)
            ax.fill_between(grid, 10 ** (mean - half), 10 ** (mean + half), color=color, alpha=0.2, lw=0)
        ax.axhline(cfg.tol, color="k", ls=":", lw=1, label=f"tol {cfg.tol:g}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_ylim(1e-17, 3)
        problem, topology, _ = parse_case(case)
        kind = "quadratic" if problem in QUADRATIC else "convex"
        ax.set_title(f"{problem} / {topology} ({kind}), n={cfg.n_clients}", fontsize=9)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(r"rel. error $\|x-x^*\|/\|x^*\|$")
        ax.legend(fontsize=6, loc="lower left")
    return fig


@figure(inputs_from=lambda cfg: ["evaluation.csv", *_curve_paths(cfg)])
def error_vs_rounds(run):
    """NSMP vs consensus ADMM, FedAvg and FedProx: relative error to the centralised optimum
    against communication rounds (sequential message hops; an NSMP outer round is one
    leaf-to-root and one root-to-leaf pass, 2 x tree height hops; a baseline iteration is one
    neighbour exchange). One panel per overlap pattern / problem; baselines at their best grid
    point (brackets). Geometric mean over seeds, band = 95% CI. Dotted line: the 1e-6
    tolerance."""
    return _error_panels(run, "rounds", "communication rounds (sequential hops)")


@figure(inputs_from=lambda cfg: ["evaluation.csv", *_curve_paths(cfg)])
def error_vs_floats(run):
    """Relative error to the centralised optimum against floats communicated. NSMP messages
    carry the separator's Schur-complement quadratic (s(s+1)/2 + s + 1 floats up, s down);
    baselines send each shared coordinate to its other owners every iteration. Geometric mean
    over seeds, band = 95% CI."""
    return _error_panels(run, "floats", "floats communicated")


@figure("evaluation.csv")
def messages_vs_clients(run):
    """Ridge regression on chain, tree and loopy overlap patterns: messages (top), sequential
    communication rounds (middle: NSMP's two passes cost one hop per tree level each, an ADMM
    iteration one round) and floats (bottom) needed to reach relative error 1e-6 against the
    number of clients n, as the solvers count them when sending. NSMP sends exactly 2(n-1)
    messages (dotted line); consensus ADMM at its best rho. Mean over seeds, bars = 95% CI."""
    cfg = run.cfg
    ev = tables.read(run.input("evaluation.csv"))
    topologies = list(cfg.scaling_topologies)
    fig, axes = plotting.subplots(3, len(topologies), width=3.4, height=2.6, constrained_layout=True)
    ns = np.array(sorted(cfg.scaling_n), float)
    for col, topo in enumerate(topologies):
        for row, (key, ylabel) in enumerate((("messages_to_tol", "messages to reach tol"),
                                             ("rounds_to_tol", "sequential rounds to tol"),
                                             ("floats_to_tol", "floats to reach tol"))):
            ax = axes[row, col]
            for method in ("nsmp", "admm"):
                label, color = METHOD_STYLE[method]
                means, halves, xs = [], [], []
                for n in ns:
                    sel = tables.where(ev, method=method, case=f"ridge-{topo}-n{int(n)}")
                    vals = numeric(ev, key)[sel]
                    if sel.any() and np.isfinite(vals).all():
                        m, h = mean_ci(vals)
                        means.append(m), halves.append(h), xs.append(n)
                if xs:
                    ax.errorbar(xs, means, yerr=halves, marker="o", ms=3, color=color, label=label)
            if key == "messages_to_tol":
                ax.plot(ns, 2 * (ns - 1), "k:", lw=1.5, zorder=5, label="2(n-1)")
                ax.set_title(f"ridge / {topo}: cost to rel. error {cfg.tol:g}")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            plotting.plain_log_ticks(ax.yaxis)
            ax.set_xlabel("number of clients n")
            ax.set_ylabel(ylabel)
            ax.legend(fontsize=6)
    return fig


FIGURES = figures_by_name(error_vs_rounds, error_vs_floats, messages_vs_clients)
