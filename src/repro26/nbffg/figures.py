"""Figures of NBFFG, one function per figure; they read the tables written by the stages.

Inputs are the stage tables: ``eval/<task>/seed<s>.csv`` (+ ``_nodes.csv``),
``train/<task>/seed<s>_history.csv`` and ``cost.csv``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.ticker import NullFormatter

from repro26.core import io, plotting
from repro26.core.stats import mean_ci

METHODS = ("nbffg", "bffg", "naive", "mcmc")
COLOURS = {"nbffg": "C0", "bffg": "C1", "naive": "C2", "mcmc": "C3", "truth": "k"}


def _concat(paths: list[Path]) -> dict[str, np.ndarray]:
    tables = [io.read_table(p) for p in paths]
    if not tables:
        return {}
    return {k: np.concatenate([t[k] for t in tables]) for k in tables[0]}


def eval_table(inputs: list[Path]) -> dict[str, np.ndarray]:
    return _concat([p for p in inputs if p.parent.parent.name == "eval" and
                    p.name.startswith("seed") and not p.name.endswith("_nodes.csv")])


def _dynamics(task: str) -> str:
    return task.split("_")[0]


def _empty(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes)
    ax.set_axis_off()


def _tasks_of(table, dynamics: str) -> list[str]:
    return sorted({t for t in table.get("task", []) if _dynamics(t) == dynamics})


def _save_empty(fig, axes, out: Path, text: str) -> None:
    """The figure of a task kind this scale does not run: every panel says so."""
    for ax in axes.ravel():
        _empty(ax, text)
    plotting.save(fig, out)


def _per_seed(table, task, method, column):
    sel = (table["task"] == task) & (table["method"] == method)
    order = np.argsort(table["seed"][sel])
    return table[column][sel][order].astype(float)


def _bars(ax, table, tasks, methods, column, transform=lambda v: v):
    width = 0.8 / len(methods)
    for j, method in enumerate(methods):
        means, halves = [], []
        for task in tasks:
            mean, half = mean_ci(transform(_per_seed(table, task, method, column)))
            means.append(mean)
            halves.append(half)
        ax.bar(np.arange(len(tasks)) + (j - (len(methods) - 1) / 2) * width, means, width,
               yerr=halves, label=method, color=COLOURS[method])
    ax.set_xticks(np.arange(len(tasks)))
    ax.set_xticklabels([t.replace("_", "\n") for t in tasks], fontsize=7)


def linear_recovery(cfg, inputs: list[Path], out: Path) -> None:
    """Experiment 1: exact posterior means vs NBFFG/BFFG, and the ELBO gap to exact log p(y)."""
    table = eval_table(inputs)
    fig, axes = plotting.subplots(1, 2, width=3.6)
    tasks = _tasks_of(table, "linear")
    if not tasks:
        return _save_empty(fig, axes, out, "no linear task")
    task = tasks[0]
    nodes = _concat([p for p in inputs if p.name.endswith("_nodes.csv") and p.parent.name == task])
    ax = axes[0, 0]
    internal = nodes["internal"] == True  # noqa: E712
    ref = nodes["value"][internal & (nodes["method"] == "reference")]
    for method in ("nbffg", "bffg", "mcmc"):
        est = nodes["value"][internal & (nodes["method"] == method)]
        ax.scatter(ref, est, s=10, alpha=0.7, label=method, color=COLOURS[method])
    lim = [ref.min() - 0.1, ref.max() + 0.1]
    ax.plot(lim, lim, "k--", lw=0.8)
    ax.set_xlabel("exact posterior mean (internal nodes)")
    ax.set_ylabel("estimated posterior mean")
    ax.set_title(f"{task}: posterior means")
    ax.legend()
    ax = axes[0, 1]
    hist = [io.read_table(p) for p in sorted(inputs) if p.name.endswith("_history.csv")
            and p.parent.name == task]
    exact = _per_seed(table, task, "nbffg", "exact_log_p")
    if hist:
        steps = hist[0]["step"]
        gaps = np.stack([exact[i] - h["elbo"] for i, h in enumerate(hist)])
        plotting.line_with_ci(ax, steps, gaps, label="NBFFG training (batch ELBO)")
    for method, style in (("nbffg", "-"), ("bffg", "--")):
        gap = exact - _per_seed(table, task, method, "elbo")
        ax.axhline(float(np.mean(gap)), ls=style, color=COLOURS[method],
                   label=f"{method} eval: {np.mean(gap):.3f} nats")
    ax.axhline(0.0, color="k", lw=0.6)
    ax.set_xlabel("training step")
    ax.set_ylabel("log p(y) - ELBO (nats)")
    ax.set_title("ELBO gap to exact evidence")
    ax.legend(fontsize=6)
    plotting.save(fig, out)


def elbo_ess(cfg, inputs: list[Path], out: Path) -> None:
    """Experiment 2/3: ELBO gain of NBFFG over BFFG and normalised ESS per nonlinear task."""
    table = eval_table(inputs)
    tasks = sorted({t for t in table.get("task", []) if _dynamics(t) != "linear"})
    fig, axes = plotting.subplots(1, 2, width=max(3.4, 0.9 * len(tasks) + 1.5))
    if not tasks:
        return _save_empty(fig, axes, out, "no nonlinear task")
    ax = axes[0, 0]
    gains = [_per_seed(table, t, "nbffg", "elbo") - _per_seed(table, t, "bffg", "elbo") for t in tasks]
    means, halves = zip(*(mean_ci(g) for g in gains))
    ax.bar(np.arange(len(tasks)), means, 0.6, yerr=halves, color=COLOURS["nbffg"])
    ax.axhline(0.0, color="k", lw=0.8)
    ax.set_xticks(np.arange(len(tasks)))
    ax.set_xticklabels([t.replace("_", "\n") for t in tasks], fontsize=7)
    ax.set_ylabel("ELBO(NBFFG) - ELBO(BFFG) (nats)")
    ax.set_title("ELBO gain of the neural residual")
    ax = axes[0, 1]
    _bars(ax, table, tasks, ("nbffg", "bffg", "naive"), "ess")
    ax.set_yscale("log")
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_ylabel("ESS / N of importance weights")
    ax.set_title(f"ESS ({cfg.evaluate.samples} samples)")
    ax.legend()
    plotting.save(fig, out)


def posterior_error(cfg, inputs: list[Path], out: Path) -> None:
    """Posterior means of internal nodes vs the reference (exact, long pCN, or truth); continuous
    tasks only (the discrete ones, whose posterior means are marginal probabilities, are in
    :func:`discrete`)."""
    table = eval_table(inputs)
    tasks = sorted({t for t in table.get("task", []) if _dynamics(t) != "ctmc"})
    fig, axes = plotting.subplots(1, 1, width=max(4.0, 1.0 * len(tasks) + 1.5))
    ax = axes[0, 0]
    if not tasks:
        _empty(ax, "no continuous task")
    else:
        _bars(ax, table, tasks, METHODS, "post_rmse")
        ax.set_yscale("log")
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_ylabel("RMSE of internal-node posterior mean")
        refs = {t: table["reference"][table["task"] == t][0] for t in tasks}
        ax.set_title("reference: " + ", ".join(sorted(set(refs.values()))))
        ax.legend(ncol=2)
    plotting.save(fig, out)


def shapes(cfg, inputs: list[Path], out: Path) -> None:
    """Experiment 3: ancestral landmark shapes (one seed) and reconstruction error over seeds."""
    table = eval_table(inputs)
    tasks = _tasks_of(table, "shapes")
    fig, axes = plotting.subplots(1, 5, width=2.9, height=2.6)
    if not tasks:
        return _save_empty(fig, axes, out, "no shape task")
    task = tasks[0]
    files = sorted(p for p in inputs if p.name.endswith("_nodes.csv") and p.parent.name == task)
    nodes = io.read_table(files[0])
    internal = sorted({int(v) for v, i in zip(nodes["node"], nodes["internal"]) if i == True})  # noqa: E712
    show = internal[: 4]
    for ax, v in zip(axes[0, :4], show):
        for method in ("truth", "nbffg", "bffg", "naive"):
            sel = (nodes["method"] == method) & (nodes["node"] == v)
            pts = nodes["value"][sel][np.argsort(nodes["coord"][sel])].reshape(-1, 2)
            if method == "truth":
                closed = np.vstack([pts, pts[:1]])
                ax.plot(closed[:, 0], closed[:, 1], "-", lw=0.5, color="0.6")
            ax.plot(pts[:, 0], pts[:, 1], "o" if method == "truth" else "x", ms=4,
                    color=COLOURS[method], label=method)
        ax.set_aspect("equal")
        seed = files[0].name.removeprefix("seed").split("_")[0]
        ax.set_title(f"{task} seed {seed}: node {v}" + (" (root)" if v == 0 else ""), fontsize=7)
        ax.set_xlabel("x (shape units)")
    axes[0, 0].set_ylabel("y (shape units)")
    axes[0, 0].legend(fontsize=6)
    for ax in axes[0, len(show):4]:
        _empty(ax, "")
    ax = axes[0, 4]
    _bars(ax, table, tasks, METHODS, "post_rmse")
    ax.set_ylabel("landmark RMSE (internal nodes)")
    ax.set_title("error, all seeds")
    ax.legend(fontsize=6)
    fig.tight_layout()
    plotting.save(fig, out)


def cost(cfg, inputs: list[Path], out: Path) -> None:
    """Experiment 4: seconds per training step vs number of leaves, with and without subsampling."""
    table = io.read_table([p for p in inputs if p.name == "cost.csv"][0])
    fig, axes = plotting.subplots(1, 1, width=4.0)
    ax = axes[0, 0]
    leaves = np.unique(table["leaves"])
    for mode, colour in (("full", "C1"), ("subsampled", "C0")):
        sel = table["mode"] == mode
        ys = np.stack([np.sort(table["sec_per_step"][sel & (table["leaves"] == n)]) for n in leaves], 1)
        label = "whole tree" if mode == "full" else f"{cfg.cost.paths} paths / sample"
        plotting.line_with_ci(ax, leaves, ys * 1e3, label=label, color=colour, marker="o")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("leaves (balanced tree)")
    ax.set_ylabel("ms per training step")
    ax.set_title(f"cost per step, batch {cfg.cost.batch}")
    ax.legend()
    plotting.save(fig, out)


def training(cfg, inputs: list[Path], out: Path) -> None:
    """NBFFG training curves per task: batch ELBO minus the seed's evaluated BFFG ELBO
    (25-step moving average; mean and 95% CI over seeds). Above 0 = the residual helps."""
    table = eval_table(inputs)
    tasks = sorted({p.parent.name for p in inputs if p.name.endswith("_history.csv")})
    cols = min(3, max(1, len(tasks)))
    rows = max(1, -(-len(tasks) // cols))
    fig, axes = plotting.subplots(rows, cols, width=3.2, height=3.1)
    for ax in axes.reshape(-1)[len(tasks):]:
        _empty(ax, "")
    for ax, task in zip(axes.reshape(-1), tasks):
        files = sorted(p for p in inputs if p.name.endswith("_history.csv") and p.parent.name == task)
        seeds = [int(p.name.removeprefix("seed").split("_")[0]) for p in files]
        bffg = {int(s): float(e) for s, m, t, e in zip(table["seed"], table["method"], table["task"],
                                                      table["elbo"]) if m == "bffg" and t == task}
        hist = [io.read_table(p) for p in files]
        window = max(1, min(25, len(hist[0]["elbo"]) // 4))
        kernel = np.ones(window) / window
        gain = np.stack([np.convolve(h["elbo"] - bffg.get(s, np.nan), kernel, mode="valid")
                         for h, s in zip(hist, seeds)])
        plotting.line_with_ci(ax, hist[0]["step"][window - 1:], gain, label="NBFFG - BFFG")
        ax.axhline(0.0, color="k", lw=0.6)
        ax.set_title(task, fontsize=8)
        ax.set_xlabel("training step")
        ax.set_ylabel("ELBO gain over BFFG (nats)")
    fig.tight_layout()
    plotting.save(fig, out)


def discrete(cfg, inputs: list[Path], out: Path) -> None:
    """Discrete traits (``ctmc`` tasks): (a) internal-node posterior marginals ``p(x_v = s | y)``
    of every method vs the exact ones (first task, all seeds); (b) ELBO gap to the exact
    evidence over NBFFG training, with the evaluated NBFFG/BFFG gaps; (c) RMSE of the marginals."""
    table = eval_table(inputs)
    tasks = _tasks_of(table, "ctmc")
    fig, axes = plotting.subplots(1, 3, width=3.6, height=3.1)
    if not tasks:
        return _save_empty(fig, axes, out, "no discrete (ctmc) task")
    task = tasks[0]
    nodes = _concat(sorted(p for p in inputs if p.name.endswith("_nodes.csv") and p.parent.name == task))
    ax = axes[0, 0]
    internal = nodes["internal"] == True  # noqa: E712
    ref = nodes["value"][internal & (nodes["method"] == "reference")]
    for method in METHODS:
        est = nodes["value"][internal & (nodes["method"] == method)]
        ax.scatter(ref, est, s=6, alpha=0.5, label=method, color=COLOURS[method])
    ax.plot([0, 1], [0, 1], "k--", lw=0.8)
    ax.set_xlabel("exact posterior marginal p(x_v = s | y)")
    ax.set_ylabel("estimated marginal")
    ax.set_title(f"{task}: internal nodes, all seeds", fontsize=8)
    ax.legend(fontsize=6)
    ax = axes[0, 1]
    for i, t in enumerate(tasks):
        exact = _per_seed(table, t, "nbffg", "exact_log_p")
        hist = [io.read_table(p) for p in sorted(inputs) if p.name.endswith("_history.csv")
                and p.parent.name == t]
        colour = f"C{4 + i}"
        if hist:
            window = max(1, min(25, len(hist[0]["elbo"]) // 4))
            kernel = np.ones(window) / window
            gaps = np.stack([np.convolve(exact[j] - h["elbo"], kernel, mode="valid")
                             for j, h in enumerate(hist)])
            plotting.line_with_ci(ax, hist[0]["step"][window - 1:], gaps, color=colour,
                                  label=f"{t} training")
        for method, style in (("nbffg", "-"), ("bffg", "--")):
            gap = float(np.mean(exact - _per_seed(table, t, method, "elbo")))
            ax.axhline(gap, ls=style, color=colour, lw=1.0, label=f"{method} eval: {gap:.2f}")
    ax.axhline(0.0, color="k", lw=0.6)
    ax.set_xlabel("training step")
    ax.set_ylabel("log p(y) - ELBO (nats)")
    ax.set_title("ELBO gap to the exact evidence")
    ax.legend(fontsize=5)
    ax = axes[0, 2]
    _bars(ax, table, tasks, METHODS, "post_rmse")
    ax.set_yscale("log")
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_ylabel("RMSE of internal-node marginals")
    ax.set_title("vs exact marginals, all seeds")
    ax.legend(fontsize=6)
    fig.tight_layout()
    plotting.save(fig, out)
