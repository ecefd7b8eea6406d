"""Figures of NBFFG in the paper's order; each reads the stage tables
(``eval/<task>/seed<s>.csv`` and ``_nodes.csv``, ``train/<task>/seed<s>_history.csv``,
``cost.csv``) named by its declaration, and its docstring is its caption."""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import NullFormatter

from repro26.core import plotting, tables
from repro26.core.method import figure, figures_by_name
from repro26.core.stats import mean_ci
from repro26.nbffg.layout import (
    history_path,
    metrics_path,
    nodes_path,
    per_seed,
    read_tables,
    table_paths,
    tasks_where,
)

METHODS = ("nbffg", "bffg", "bffg_lin", "naive", "mcmc")
COLOURS = {"nbffg": "C0", "bffg": "C1", "bffg_lin": "C4", "naive": "C2", "mcmc": "C3",
           "truth": "k"}


def _histories(run, task: str) -> list[dict]:
    """The task's training ELBO histories, one per seed in seed order."""
    return [tables.read(run.input(history_path(task, s))) for s in sorted(run.cfg.seeds)]


def _empty(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes)
    ax.set_axis_off()


def _all_empty(fig, axes, text: str):
    """The figure of a task kind this scale does not run: every panel says so."""
    for ax in axes.ravel():
        _empty(ax, text)
    return fig


def _bars(ax, table, tasks, methods, column):
    """Grouped bars of a positive `column` (ESS/N, RMSE) on a log axis: geometric mean over seeds
    with the 95% CI of its log, one group per task (a t-interval of the raw values runs below 0,
    which a log axis cannot show)."""
    width = 0.8 / len(methods)
    for j, method in enumerate(methods):
        centres, errors = [], []
        for task in tasks:
            values = per_seed(table, task, method, column)  # empty: method not run on the task
            log_mean, half = mean_ci(np.log(values)) if values.size else (np.nan, np.nan)
            centre = np.exp(log_mean)
            centres.append(centre)
            errors.append((centre - np.exp(log_mean - half), np.exp(log_mean + half) - centre))
        ax.bar(np.arange(len(tasks)) + (j - (len(methods) - 1) / 2) * width, centres, width,
               yerr=np.asarray(errors).T, label=method, color=COLOURS[method])
    ax.set_xticks(np.arange(len(tasks)))
    ax.set_xticklabels([t.replace("_", "\n") for t in tasks], fontsize=7)


def _first_linear(cfg) -> list[str]:
    return tasks_where(cfg, lambda d: d == "linear")[:1]


@figure(inputs_from=lambda cfg: table_paths(cfg, _first_linear(cfg), metrics_path, nodes_path,
                                            history_path))
def linear(run):
    """NBFFG experiment 1 (linear-Gaussian tree, exact posterior known). Left: posterior means of
    the internal nodes estimated by NBFFG, BFFG (self-normalised importance sampling) and guided pCN
    MCMC against exact dense Gaussian conditioning, all seeds. Right: gap between the exact
    log-evidence and the NBFFG batch ELBO during training (mean and 95% CI over seeds); horizontal
    lines: the evaluated ELBO gap of NBFFG and BFFG (BFFG is exact here, so its gap is 0 up to Euler
    error)."""
    fig, axes = plotting.subplots(1, 2, width=3.6)
    tasks = _first_linear(run.cfg)
    if not tasks:
        return _all_empty(fig, axes, "no linear task")
    task = tasks[0]
    table = read_tables(run, metrics_path, tasks)
    nodes = read_tables(run, nodes_path, tasks)
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
    hist = _histories(run, task)
    exact = per_seed(table, task, "nbffg", "exact_log_p")
    if hist:
        steps = hist[0]["step"]
        gaps = np.stack([exact[i] - h["elbo"] for i, h in enumerate(hist)])
        plotting.line_with_ci(ax, steps, gaps, label="NBFFG training (batch ELBO)")
    for method, style in (("nbffg", "-"), ("bffg", "--")):
        gap = exact - per_seed(table, task, method, "elbo")
        ax.axhline(float(np.mean(gap)), ls=style, color=COLOURS[method],
                   label=f"{method} eval: {np.mean(gap):.3f} nats")
    ax.axhline(0.0, color="k", lw=0.6)
    ax.set_xlabel("training step")
    ax.set_ylabel("log p(y) - ELBO (nats)")
    ax.set_title("ELBO gap to exact evidence")
    ax.legend(fontsize=6)
    return fig


def _nonlinear(cfg) -> list[str]:
    return tasks_where(cfg, lambda d: d != "linear")


@figure(inputs_from=lambda cfg: table_paths(cfg, _nonlinear(cfg), metrics_path))
def elbo_ess(run):
    """NBFFG experiments 2-3 (nonlinear dynamics: double-well, state-dependent OU, Kunita landmark
    shapes, and discrete traits under a CTMC with time-dependent rates). Left: ELBO of NBFFG minus
    ELBO of BFFG with the paper's proxy (bffg) and of the fair BFFG whose proxy linearises the
    drift around the observations (bffg_lin; continuous tasks), paired over seeds (mean and 95%
    CI). Right: normalised effective sample size of the importance weights of NBFFG, both BFFGs
    and naive forward simulation (geometric mean and 95% CI of its log over seeds, log scale)."""
    tasks = _nonlinear(run.cfg)
    fig, axes = plotting.subplots(1, 2, width=max(3.4, 0.9 * len(tasks) + 1.5))
    if not tasks:
        return _all_empty(fig, axes, "no nonlinear task")
    table = read_tables(run, metrics_path, tasks)
    ax = axes[0, 0]
    for j, base in enumerate(("bffg", "bffg_lin")):
        gains = [per_seed(table, t, "nbffg", "elbo") - per_seed(table, t, base, "elbo")
                 if per_seed(table, t, base, "elbo").size else np.full(1, np.nan) for t in tasks]
        means, halves = zip(*(mean_ci(g) for g in gains))
        ax.bar(np.arange(len(tasks)) + (j - 0.5) * 0.4, means, 0.4, yerr=halves,
               color=COLOURS[base], label=f"vs {base}")
    ax.axhline(0.0, color="k", lw=0.8)
    ax.legend(fontsize=7)
    ax.set_xticks(np.arange(len(tasks)))
    ax.set_xticklabels([t.replace("_", "\n") for t in tasks], fontsize=7)
    ax.set_ylabel("ELBO(NBFFG) - ELBO(BFFG) (nats)")
    ax.set_title("paired ELBO gain of NBFFG")
    ax = axes[0, 1]
    _bars(ax, table, tasks, ("nbffg", "bffg", "bffg_lin", "naive"), "ess")
    ax.set_yscale("log")
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_ylabel("ESS / N of importance weights")
    ax.set_title(f"ESS ({run.cfg.evaluate.samples} samples)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return fig


def _continuous(cfg) -> list[str]:
    return tasks_where(cfg, lambda d: d != "ctmc")


@figure(inputs_from=lambda cfg: table_paths(cfg, _continuous(cfg), metrics_path))
def posterior(run):
    """RMSE of the internal-node posterior means of NBFFG, BFFG (paper proxy), the fair BFFG
    (drift linearised around the observations), naive importance sampling and
    guided pCN MCMC (same number of forward solves) against the reference: exact conditioning
    (linear), a long multi-chain guided pCN run (double-well, state-dependent OU), the simulated
    true shapes (Kunita shapes). Continuous tasks only (discrete traits: see the discrete figure).
    Geometric mean and 95% CI of its log over seeds, log scale."""
    tasks = _continuous(run.cfg)
    table = read_tables(run, metrics_path, tasks)
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
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        fig.tight_layout()
    return fig


def _shape_tasks(cfg) -> list[str]:
    return tasks_where(cfg, lambda d: d == "shapes")


def _shapes_inputs(cfg) -> list[str]:
    """Every shape task's metrics; the nodes of the first task's first seed (drawn)."""
    tasks = _shape_tasks(cfg)
    return table_paths(cfg, tasks, metrics_path) + [nodes_path(t, cfg.seeds[0]) for t in tasks[:1]]


@figure(inputs_from=_shapes_inputs)
def shapes(run):
    """NBFFG experiment 3: landmark shapes (root: Fay's butterfly curve) evolving as a Kunita flow
    on a random tree. Four internal nodes of one seed: true ancestral shapes and the posterior-mean
    reconstructions of NBFFG, BFFG and naive forward simulation; right: internal-node landmark RMSE
    of each method incl. the fair BFFG and pCN MCMC (geometric mean and 95% CI of its log over
    seeds)."""
    tasks = _shape_tasks(run.cfg)
    fig, axes = plotting.subplots(1, 5, width=2.9, height=2.6)
    if not tasks:
        return _all_empty(fig, axes, "no shape task")
    task, seed = tasks[0], run.cfg.seeds[0]
    table = read_tables(run, metrics_path, tasks)
    nodes = tables.read(run.input(nodes_path(task, seed)))
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
    return fig


@figure("cost.csv")
def cost(run):
    """NBFFG experiment 4, against the number of leaves of a balanced tree, on the whole tree and
    with pathwise subsampling (a fixed number of root-to-leaf paths per sample). Left: CPU
    milliseconds per training step (forward, gradient, Adam), every tree timed in the same
    interleaved rounds. Middle: relative variance of the ELBO gradient (trace of its covariance
    over independent keys divided by the squared norm of its mean, initial network). Right:
    their product, the cost of training to a fixed relative accuracy up to a constant. Mean and
    95% CI over timing rounds, log-log axes."""
    cfg = run.cfg
    table = tables.read(run.input("cost.csv"))
    fig, axes = plotting.subplots(1, 3, width=3.3)
    leaves = np.unique(table["leaves"])
    for mode, colour in (("full", "C1"), ("subsampled", "C0")):
        sel = table["mode"] == mode

        def by(col):
            return np.stack([table[col][sel & (table["leaves"] == n)][
                np.argsort(table["repeat"][sel & (table["leaves"] == n)])] for n in leaves], 1)

        label = "whole tree" if mode == "full" else f"{cfg.cost.paths} paths / sample"
        sec, var = by("cpu_sec_per_step"), by("grad_rel_var")
        for ax, ys in zip(axes[0], (sec * 1e3, var, sec * var)):
            plotting.line_with_ci(ax, leaves, ys, label=label, color=colour, marker="o")
    for ax, ylabel, title in zip(axes[0], ("CPU ms per training step",
                                          "relative gradient variance",
                                          "CPU s/step x relative variance"),
                                 (f"CPU time per step, batch {cfg.cost.batch}",
                                  "ELBO gradient, relative variance", "cost to fixed accuracy")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("leaves (balanced tree)")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    return fig


@figure(inputs_from=lambda cfg: table_paths(cfg, sorted(cfg.tasks), metrics_path, history_path))
def training(run):
    """NBFFG training curves: batch ELBO minus the evaluated ELBO of linear BFFG on the same seed,
    25-step moving average, per task (mean and 95% CI over seeds); above 0 the neural residual
    improves on BFFG."""
    tasks = sorted(run.cfg.tasks)
    table = read_tables(run, metrics_path, tasks)
    cols = min(3, max(1, len(tasks)))
    rows = max(1, -(-len(tasks) // cols))
    fig, axes = plotting.subplots(rows, cols, width=3.2, height=3.1)
    for ax in axes.reshape(-1)[len(tasks):]:
        _empty(ax, "")
    for ax, task in zip(axes.reshape(-1), tasks):
        bffg = per_seed(table, task, "bffg", "elbo")  # seed order, as the histories
        hist = _histories(run, task)
        window = max(1, min(25, len(hist[0]["elbo"]) // 4))
        kernel = np.ones(window) / window
        gain = np.stack([np.convolve(h["elbo"] - b, kernel, mode="valid")
                         for h, b in zip(hist, bffg)])
        plotting.line_with_ci(ax, hist[0]["step"][window - 1:], gain, label="NBFFG - BFFG")
        ax.axhline(0.0, color="k", lw=0.6)
        ax.set_title(task, fontsize=8)
        ax.set_xlabel("training step")
        ax.set_ylabel("ELBO gain over BFFG (nats)")
    fig.tight_layout()
    return fig


def _ctmc_tasks(cfg) -> list[str]:
    return tasks_where(cfg, lambda d: d == "ctmc")


@figure(inputs_from=lambda cfg: table_paths(cfg, _ctmc_tasks(cfg), metrics_path, history_path)
        + table_paths(cfg, _ctmc_tasks(cfg)[:1], nodes_path))
def discrete(run):
    """NBFFG for discrete traits (ctmc tasks): a 4-state chain whose jump rates into each state
    oscillate along the tree's time axis, guided by Felsenstein pruning with its time-averaged
    (Jukes–Cantor) proxy; leaves observed through a noisy emission matrix. Left: posterior marginals
    p(x_v = s | y) of internal nodes (incl. the root) of NBFFG, BFFG, naive importance sampling and
    guided pCN MCMC against the exact marginals (inside–outside with the true time-dependent chain),
    first task, all seeds. Middle: log p(y) minus the batch ELBO during NBFFG training (25-step
    moving average, mean and 95% CI over seeds) and the evaluated gaps of NBFFG (solid) and BFFG
    (dashed). Right: RMSE of the internal-node marginals per task (geometric mean and 95% CI of its
    log over seeds, log scale)."""
    tasks = _ctmc_tasks(run.cfg)
    fig, axes = plotting.subplots(1, 3, width=3.6, height=3.1)
    if not tasks:
        return _all_empty(fig, axes, "no discrete (ctmc) task")
    task = tasks[0]
    table = read_tables(run, metrics_path, tasks)
    nodes = read_tables(run, nodes_path, [task])
    ax = axes[0, 0]
    internal = nodes["internal"] == True  # noqa: E712
    ref = nodes["value"][internal & (nodes["method"] == "reference")]
    for method in ("nbffg", "bffg", "naive", "mcmc"):  # no linearised proxy for chains
        est = nodes["value"][internal & (nodes["method"] == method)]
        ax.scatter(ref, est, s=6, alpha=0.5, label=method, color=COLOURS[method])
    ax.plot([0, 1], [0, 1], "k--", lw=0.8)
    ax.set_xlabel("exact posterior marginal p(x_v = s | y)")
    ax.set_ylabel("estimated marginal")
    ax.set_title(f"{task}: internal nodes, all seeds", fontsize=8)
    ax.legend(fontsize=6)
    ax = axes[0, 1]
    for i, t in enumerate(tasks):
        exact = per_seed(table, t, "nbffg", "exact_log_p")
        hist = _histories(run, t)
        colour = f"C{4 + i}"
        if hist:
            window = max(1, min(25, len(hist[0]["elbo"]) // 4))
            kernel = np.ones(window) / window
            gaps = np.stack([np.convolve(exact[j] - h["elbo"], kernel, mode="valid")
                             for j, h in enumerate(hist)])
            plotting.line_with_ci(ax, hist[0]["step"][window - 1:], gaps, color=colour,
                                  label=f"{t} training")
        for method, style in (("nbffg", "-"), ("bffg", "--")):
            gap = float(np.mean(exact - per_seed(table, t, method, "elbo")))
            ax.axhline(gap, ls=style, color=colour, lw=1.0, label=f"{method} eval: {gap:.2f}")
    ax.axhline(0.0, color="k", lw=0.6)
    ax.set_xlabel("training step")
    ax.set_ylabel("log p(y) - ELBO (nats)")
    ax.set_title("ELBO gap to the exact evidence")
    ax.legend(fontsize=5)
    ax = axes[0, 2]
    _bars(ax, table, tasks, ("nbffg", "bffg", "naive", "mcmc"), "post_rmse")
    ax.set_yscale("log")
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_ylabel("RMSE of internal-node marginals")
    ax.set_title("vs exact marginals, all seeds")
    ax.legend(fontsize=6)
    fig.tight_layout()
    return fig


FIGURES = figures_by_name(linear, elbo_ess, posterior, shapes, cost, training, discrete)
