"""One function per figure; each reads tidy tables (``--input``) and writes ``run.out`` (PNG + PDF).

Means over seeds with 95% confidence bands (Student t over seeds) everywhere.
"""

from __future__ import annotations

import matplotlib.ticker
import numpy as np

from repro26.core import io, plotting
from repro26.core.stats import mean_ci

ALGO_LABELS = {
    "exp_weights": "exp. weights (theory η, γ)",
    "exp_weights_tuned": "exp. weights (tuned η, γ)",
    "exp3": "Exp3 (no kernel)",
    "gp_ucb": "GP-UCB",
    "gp_ts": "GP-TS",
    "uniform": "uniform",
}
ADVERSARY_LABELS = {
    "drift": "drifting peak (oblivious)",
    "switch": "abrupt switches (oblivious)",
    "adaptive": "adaptive peak",
    "bump": "bump lower-bound construction",
}
KERNEL_LABELS = {"matern12": "Matérn 1/2", "matern32": "Matérn 3/2", "matern52": "Matérn 5/2", "se": "SE"}


def _by_seed(table, mask, x_col: str, y_col: str):
    """x values and a (seeds × x) matrix of ``y_col`` for the rows in ``mask``."""
    xs = np.unique(table[x_col][mask])
    seeds = np.unique(table["seed"][mask])
    y = np.full((len(seeds), len(xs)), np.nan)
    for i, s in enumerate(seeds):
        for j, x in enumerate(xs):
            hit = mask & (table["seed"] == s) & (table[x_col] == x)
            if hit.any():
                y[i, j] = table[y_col][hit][0]
    return xs, y


def _input_with(run, column: str):
    for path in run.inputs:
        table = io.read_table(path)
        if column in table:
            return table
    raise io.UsageError(f"--input: stage '{run.stage}' needs a table with column '{column}'")


def regret_vs_t(run) -> None:
    """Experiment 1: regret R_T against T (log-log), one panel per adversary, main kernel."""
    cfg = run.cfg
    table = _input_with(run, "ratio")
    main = table["kernel"] == cfg.kernel
    adversaries = [a for a in cfg.adversaries if (main & (table["adversary"] == a)).any()]
    fig, axes = plotting.subplots(1, len(adversaries), width=3.3, height=3.0)
    for ax, adversary in zip(axes[0], adversaries):
        here = main & (table["adversary"] == adversary)
        for algo in cfg.algorithms:
            mask = here & (table["algo"] == algo)
            if mask.any():
                xs, y = _by_seed(table, mask, "horizon", "regret")
                plotting.line_with_ci(ax, xs, y, label=ALGO_LABELS[algo], marker="o", markersize=3)
        ref_mask = here & (table["algo"] == "exp_weights")
        if ref_mask.any():
            xs, ref = _by_seed(table, ref_mask, "horizon", "sqrt_T_gamma")
            xs, ours = _by_seed(table, ref_mask, "horizon", "regret")
            c = np.nanmean(ours[:, 0]) / ref[0, 0]
            ax.plot(xs, c * ref[0], "k--", linewidth=1, label="∝ √(T γ_T)")
            if adversary == "bump":
                _, lower = _by_seed(table, ref_mask, "horizon", "bump_lower")
                ax.plot(xs, lower[0], "k:", linewidth=1.2, label="lower-bound order Tε = σ√(T M^d)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("horizon T (rounds)")
        ax.set_title(ADVERSARY_LABELS[adversary])
    axes[0][0].set_ylabel("regret R_T (reward units)")
    handles = {}
    for ax in axes[0]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    fig.legend(list(handles.values()), list(handles.keys()), loc="upper center", ncol=4,
               bbox_to_anchor=(0.5, -0.02), frameon=False)
    fig.suptitle(f"Regret vs horizon, {KERNEL_LABELS[cfg.kernel]} (mean, 95% CI over {len(cfg.seeds)} seeds)",
                 y=1.03)
    plotting.save(fig, run.out)


def ratio_vs_t(run) -> None:
    """Experiment 2: R_T / √(T γ_T) of exp_weights against T, per kernel and adversary."""
    cfg = run.cfg
    table = _input_with(run, "ratio")
    ours = table["algo"] == "exp_weights"
    adversaries = [a for a in cfg.adversaries if a != "bump" and (ours & (table["adversary"] == a)).any()]
    fig, axes = plotting.subplots(1, len(adversaries), width=3.3, height=2.9)
    for ax, adversary in zip(axes[0], adversaries):
        for kernel in cfg.kernels:
            mask = ours & (table["adversary"] == adversary) & (table["kernel"] == kernel)
            if mask.any():
                xs, y = _by_seed(table, mask, "horizon", "ratio")
                plotting.line_with_ci(ax, xs, y, label=KERNEL_LABELS[kernel], marker="o", markersize=3)
        ax.axvspan(max(cfg.horizons) / 10, max(cfg.horizons), color="0.9", zorder=0)
        ax.set_xscale("log")
        ax.set_xlabel("horizon T (rounds)")
        ax.set_title(ADVERSARY_LABELS[adversary])
        ax.set_ylim(bottom=0)
    axes[0][0].set_ylabel("R_T / √(T γ_T)")
    axes[0][-1].legend(title="kernel (shaded: last decade)")
    fig.suptitle("Exponential weights: regret normalised by √(T γ_T)", y=1.03)
    plotting.save(fig, run.out)


def nystrom(run) -> None:
    """Experiment 3: Nyström regret and time per round against m, with the exact learner."""
    cfg = run.cfg
    fixed = _input_with(run, "sampler")
    timing = _input_with(run, "seconds_per_round")
    n_arms = cfg.nystrom.grid ** cfg.dim
    fig, axes = plotting.subplots(1, 2, width=3.6, height=3.0)
    exact = (fixed["sampler"] == "exact") & (fixed["n_arms"] == n_arms)
    mean, half = mean_ci(fixed["regret"][exact])
    for ax in axes[0][:1]:
        ax.axhline(mean, color="k", linewidth=1, label=f"exact (m = |X| = {n_arms})")
        ax.axhspan(mean - half, mean + half, color="k", alpha=0.1, linewidth=0)
        ax.axhspan(0.9 * mean, 1.1 * mean, fill=False, hatch="//", edgecolor="0.6", linewidth=0,
                   label="exact ± 10%")
    for sampler in cfg.nystrom.samplers:
        mask = (fixed["sampler"] == sampler) & (fixed["n_arms"] == n_arms)
        if mask.any():
            xs, y = _by_seed(fixed, mask, "m", "regret")
            plotting.line_with_ci(axes[0][0], xs, y, label=f"Nyström, {sampler} sampling", marker="o",
                                  markersize=3)
        tmask = timing["sampler"] == sampler
        axes[0][1].plot(timing["m"][tmask], 1e3 * timing["seconds_per_round"][tmask], marker="o",
                        markersize=3, label=f"Nyström, {sampler}")
    t_exact = timing["seconds_per_round"][timing["sampler"] == "exact"]
    axes[0][1].axhline(1e3 * t_exact[0], color="k", linewidth=1, label="exact")
    axes[0][0].axvline(np.sqrt(cfg.fixed_horizon), color="0.5", linestyle=":", label="m = √T")
    axes[0][1].axvline(np.sqrt(cfg.fixed_horizon), color="0.5", linestyle=":")
    for ax in axes[0]:
        ax.set_xscale("log", base=2)
        ax.set_xlabel("inducing arms m")
    axes[0][0].set_ylabel(f"regret R_T at T = {cfg.fixed_horizon}")
    axes[0][1].set_ylabel(f"ms per round ({len(cfg.seeds)} seeds vmapped)")
    axes[0][1].set_yscale("log")
    axes[0][0].legend(fontsize=7)
    axes[0][1].legend(fontsize=7)
    fig.suptitle(f"Nyström vs exact exponential weights, |X| = {n_arms}, {cfg.fixed_adversary} adversary",
                 y=1.03)
    plotting.save(fig, run.out)


def arms(run) -> None:
    """Experiment 4: regret at fixed T against the number of arms |X|."""
    cfg = run.cfg
    fixed = _input_with(run, "sampler")
    fig, axes = plotting.subplots(1, 1, width=4.2, height=3.2)
    ax = axes[0][0]
    grids = set(g ** cfg.dim for g in cfg.arms.grids)
    for algo in cfg.arms.algorithms:
        mask = (fixed["algo"] == algo) & np.isin(fixed["n_arms"], list(grids))
        if mask.any():
            xs, y = _by_seed(fixed, mask, "n_arms", "regret")
            line = plotting.line_with_ci(ax, xs, y, label=ALGO_LABELS[algo], marker="o", markersize=3)
            if algo == "exp3":
                ax.plot(xs, np.nanmean(y[:, -1]) * np.sqrt(xs / xs[-1]), "--", color=line.get_color(),
                        linewidth=1, label="∝ √|X|")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(sorted(grids), [str(g) for g in sorted(grids)])
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_xlabel("number of arms |X|")
    ax.set_ylabel(f"regret R_T at T = {cfg.fixed_horizon}")
    ax.legend()
    ax.set_title(f"Regret vs number of arms ({cfg.fixed_adversary} adversary, {KERNEL_LABELS[cfg.kernel]})")
    plotting.save(fig, run.out)


def info_gain(run) -> None:
    """Maximum information gain γ_T (greedy log-det) against T for each kernel."""
    cfg = run.cfg
    fig, axes = plotting.subplots(1, 1, width=4.2, height=3.2)
    ax = axes[0][0]
    for path in run.inputs:
        table = io.read_table(path)
        kernel = str(table["kernel"][0])
        ax.plot(table["t"], table["gamma"], label=KERNEL_LABELS[kernel])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("T (rounds)")
    ax.set_ylabel("γ_T (nats)")
    ax.legend()
    ax.set_title(f"Greedy information gain, |X| = {cfg.grid ** cfg.dim}, σ² = {cfg.gamma_noise}")
    plotting.save(fig, run.out)


FIGURES = {
    "regret_vs_t": regret_vs_t,
    "ratio_vs_t": ratio_vs_t,
    "nystrom": nystrom,
    "arms": arms,
    "info_gain": info_gain,
}
