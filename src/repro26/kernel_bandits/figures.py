"""Figures of the kernel_bandits experiments, in the paper's order; each reads tidy tables only
and returns the matplotlib figure; its docstring is the caption.

Means over seeds with 95% confidence bands (Student t over seeds) everywhere.
"""

from __future__ import annotations

import matplotlib.ticker
import numpy as np

from repro26.core import plotting, tables
from repro26.core.method import figure, figures_by_name
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


@figure("scaling.csv")
def regret_vs_t(run):
    """Experiment 1, regret vs horizon: expected regret R_T = max_x Σ_t f_t(x) − Σ_t ⟨p_t, f_t⟩
    against the horizon T (log-log) for each algorithm and adversary, main kernel (kernel in the
    config). Each T is a separate game (η, γ and λ = 1/T depend on T). Lines: mean over seeds;
    bands: 95% CI. Dashed: √(T γ_T) (greedy γ_T) scaled to exponential weights at the smallest T.
    In the bump panel the dotted line is the order of the lower bound, Tε = σ√(T M^d). Slopes
    below 1 mean sublinear regret. Dash-dotted: the analysis's bound 2 log|X|/η = 2√(3 T g* log|X|)
    at the rates exponential weights ran with (the regret_rate claim compares with it)."""
    cfg = run.cfg
    table = tables.read(run.input("scaling.csv"))
    main = tables.select(table, kernel=cfg.kernel)
    adversaries = [a for a in cfg.adversaries if tables.where(main, adversary=a).any()]
    fig, axes = plotting.subplots(1, len(adversaries), width=3.3, height=3.0)
    for ax, adversary in zip(axes[0], adversaries):
        here = tables.select(main, adversary=adversary)
        for algo in cfg.algorithms:
            if tables.where(here, algo=algo).any():
                xs, y = tables.pivot(here, "regret", by="horizon", algo=algo)
                plotting.line_with_ci(ax, xs, y, label=ALGO_LABELS[algo], marker="o", markersize=3)
        if tables.where(here, algo="exp_weights").any():
            xs, ref = tables.pivot(here, "sqrt_T_gamma", by="horizon", algo="exp_weights")
            xs, ours = tables.pivot(here, "regret", by="horizon", algo="exp_weights")
            c = np.nanmean(ours[:, 0]) / ref[0, 0]
            ax.plot(xs, c * ref[0], "k--", linewidth=1, label="∝ √(T γ_T)")
            if "theory_bound" in here:
                _, bound = tables.pivot(here, "theory_bound", by="horizon", algo="exp_weights")
                ax.plot(xs, bound.mean(axis=0), "C0-.", linewidth=1,
                        label="analysis bound 2 log|X|/η (theory η)")
            if adversary == "bump":
                _, lower = tables.pivot(here, "bump_lower", by="horizon", algo="exp_weights")
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
    return fig


@figure("scaling.csv")
def ratio_vs_t(run):
    """Experiment 2, regret normalised by √(T γ_T): R_T/√(T γ_T) of exponential weights (theory
    η, γ) against T for the Matérn 3/2, Matérn 5/2 and squared-exponential kernels on the
    oblivious and adaptive adversaries; a ratio that stops growing over the shaded last decade of T
    is the Õ(√(T γ_T)) rate (reported with the regret_rate claim). Mean over seeds with 95% CI
    bands."""
    cfg = run.cfg
    table = tables.read(run.input("scaling.csv"))
    ours = tables.select(table, algo="exp_weights")
    adversaries = [a for a in cfg.adversaries if a != "bump" and tables.where(ours, adversary=a).any()]
    fig, axes = plotting.subplots(1, len(adversaries), width=3.3, height=2.9)
    for ax, adversary in zip(axes[0], adversaries):
        for kernel in cfg.kernels:
            if tables.where(ours, adversary=adversary, kernel=kernel).any():
                xs, y = tables.pivot(ours, "ratio", by="horizon", adversary=adversary, kernel=kernel)
                plotting.line_with_ci(ax, xs, y, label=KERNEL_LABELS[kernel], marker="o", markersize=3)
        ax.axvspan(max(cfg.horizons) / 10, max(cfg.horizons), color="0.9", zorder=0)
        ax.set_xscale("log")
        ax.set_xticks(cfg.horizons, [f"{h:g}" for h in cfg.horizons], rotation=30)
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())  # no crowded 2×10¹ labels
        ax.set_xlabel("horizon T (rounds)")
        ax.set_title(ADVERSARY_LABELS[adversary])
        ax.set_ylim(bottom=0)
    axes[0][0].set_ylabel("R_T / √(T γ_T)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=len(labels), title="kernel (shaded: last decade of T)",
               bbox_to_anchor=(0.5, -0.08), frameon=False)
    fig.suptitle("Exponential weights: regret normalised by √(T γ_T)", y=1.03)
    return fig


@figure("fixed.csv", "timing.csv")
def nystrom(run):
    """Experiment 3, Nyström: left, regret at the fixed horizon of the Nyström exponential-weights
    learner against the number of inducing arms m (uniform and ridge-leverage-score sampling),
    with the exact learner (black line, 95% CI band) and ±10% of it (hatched); dotted: m = √T.
    Right: CPU time per round relative to the exact learner (median over interleaved rounds of
    compiled runs, all seeds vmapped in one call; bars: the 95% interval of the median per-round
    ratio widened by the noise floor of the control, the exact learner timed against itself,
    grey band) against m; the exact learner costs O(|X|³) per round, Nyström O(|X| m² + m³)."""
    cfg = run.cfg
    fixed = tables.read(run.input("fixed.csv"))
    timing = tables.read(run.input("timing.csv"))
    n_arms = cfg.nystrom.grid ** cfg.dim
    fixed = tables.select(fixed, n_arms=n_arms)
    fig, axes = plotting.subplots(1, 2, width=3.6, height=3.0, gridspec_kw={"wspace": 0.35})
    mean, half = mean_ci(tables.per_seed(fixed, "regret", sampler="exact"))
    for ax in axes[0][:1]:
        ax.axhline(mean, color="k", linewidth=1, label=f"exact (m = |X| = {n_arms})")
        ax.axhspan(mean - half, mean + half, color="k", alpha=0.1, linewidth=0)
        ax.axhspan(0.9 * mean, 1.1 * mean, fill=False, hatch="//", edgecolor="0.6", linewidth=0,
                   label="exact ± 10%")
    for sampler in cfg.nystrom.samplers:
        if tables.where(fixed, sampler=sampler).any():
            xs, y = tables.pivot(fixed, "regret", by="m", sampler=sampler)
            plotting.line_with_ci(axes[0][0], xs, y, label=f"Nyström, {sampler} sampling", marker="o",
                                  markersize=3)
        tmask = tables.where(timing, sampler=sampler)
        mid = timing["ratio_to_exact"][tmask]
        spread = [mid - timing["ratio_lo"][tmask], timing["ratio_hi"][tmask] - mid]
        axes[0][1].errorbar(timing["m"][tmask], mid, yerr=spread, marker="o", markersize=3,
                            capsize=2, label=f"Nyström, {sampler}")
    floor = float(timing["noise_floor"][0])
    axes[0][1].axhline(1.0, color="k", linewidth=1, label="exact")
    axes[0][1].axhspan(np.exp(-floor), np.exp(floor), color="k", alpha=0.1, linewidth=0,
                       label="control noise floor")
    axes[0][0].axvline(np.sqrt(cfg.fixed_horizon), color="0.5", linestyle=":", label="m = √T")
    axes[0][1].axvline(np.sqrt(cfg.fixed_horizon), color="0.5", linestyle=":")
    for ax in axes[0]:
        ax.set_xscale("log", base=2)
        ax.set_xlabel("inducing arms m")
    axes[0][0].set_ylabel(f"regret R_T at T = {cfg.fixed_horizon}")
    axes[0][1].set_ylabel("CPU time per round / exact")
    axes[0][1].set_yscale("log")
    plotting.plain_log_ticks(axes[0][1].yaxis)
    axes[0][0].legend(fontsize=7)
    axes[0][1].legend(fontsize=7, loc="center right")
    fig.suptitle(f"Nyström vs exact exponential weights, |X| = {n_arms}, {cfg.fixed_adversary} adversary",
                 y=1.03)
    return fig


@figure("fixed.csv")
def arms(run):
    """Experiment 4, number of arms: regret at the fixed horizon against |X| (grid refinement of
    the same domain) for exponential weights with the kernel estimate and Exp3, which ignores the
    kernel; dashed: √|X| through Exp3's last point. Mean over seeds with 95% CI bands."""
    cfg = run.cfg
    fixed = tables.read(run.input("fixed.csv"))
    fig, axes = plotting.subplots(1, 1, width=4.2, height=3.2)
    ax = axes[0][0]
    grids = sorted(set(g ** cfg.dim for g in cfg.arms.grids))
    for algo in cfg.arms.algorithms:
        if tables.where(fixed, algo=algo).any():
            xs, y = tables.pivot(fixed, "regret", by="n_arms", algo=algo)
            on_grid = np.isin(xs, grids)  # exp_weights also ran at the Nyström grid
            xs, y = xs[on_grid], y[:, on_grid]
            line = plotting.line_with_ci(ax, xs, y, label=ALGO_LABELS[algo], marker="o", markersize=3)
            if algo == "exp3":
                ax.plot(xs, np.nanmean(y[:, -1]) * np.sqrt(xs / xs[-1]), "--", color=line.get_color(),
                        linewidth=1, label="∝ √|X|")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(grids, [str(g) for g in grids])
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_xlabel("number of arms |X|")
    ax.set_ylabel(f"regret R_T at T = {cfg.fixed_horizon}")
    ax.legend()
    ax.set_title(f"Regret vs number of arms ({cfg.fixed_adversary} adversary, {KERNEL_LABELS[cfg.kernel]})")
    return fig


@figure(inputs_from=lambda cfg: [f"data/{k}_n{cfg.grid}.gamma.csv" for k in cfg.gamma_kernels])
def info_gain(run):
    """Maximum information gain: γ_T = max ½ log det(I + K_A/σ²) over multisets A of T arms,
    computed by greedy log-det (at least (1 − 1/e) of the maximum), for each kernel on the main
    arm grid. Deterministic: no seeds. Smoother kernels (larger ν, SE) gain information more
    slowly."""
    cfg = run.cfg
    fig, axes = plotting.subplots(1, 1, width=4.2, height=3.2)
    ax = axes[0][0]
    for kernel in cfg.gamma_kernels:
        table = tables.read(run.input(f"{kernel}_n{cfg.grid}.gamma.csv"), ("t", "gamma"))
        ax.plot(table["t"], table["gamma"], label=KERNEL_LABELS[kernel])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("T (rounds)")
    ax.set_ylabel("γ_T (nats)")
    ax.legend()
    ax.set_title(f"Greedy information gain, |X| = {cfg.grid ** cfg.dim}, σ² = {cfg.gamma_noise}")
    return fig


FIGURES = figures_by_name(regret_vs_t, ratio_vs_t, nystrom, arms, info_gain)
