"""Figures of the nemo experiments (tables only; each docstring is the caption)."""

from __future__ import annotations

import numpy as np

from repro26.core import plotting, tables
from repro26.core.method import figure, figures_by_name
from repro26.core.stats import mean_ci
from repro26.nemo.evaluate import SETTINGS, hypervolume_2d

METHOD_ORDER = ("nemo", "nemo_one_step", "fixed_linear", "emotion_only", "cognition_only",
                "rule_based", "random")
LABELS = {"nemo": "NeMo (need-aware, H-turn forward sim.)",
          "nemo_one_step": "NeMo, 1-turn credit (ablation)",
          "fixed_linear": "fixed linear (0.5, 0.5)", "emotion_only": "emotion only",
          "cognition_only": "cognition only", "rule_based": "rule-based schedule",
          "random": "random"}
COLORS = {"nemo": "C3", "nemo_one_step": "C1", "fixed_linear": "C0", "emotion_only": "C4",
          "cognition_only": "C2", "rule_based": "0.35", "random": "0.65"}
SETTING_LABELS = {"in_distribution": "in distribution", "shifted_personas": "shifted personas",
                  "alt_family": "other simulator family"}


def _present(table) -> list[str]:
    have = set(table["method"].tolist())
    return [m for m in METHOD_ORDER if m in have]


@figure("data/arousal_curves.csv")
def arousal_curves(run):
    """MindFlow's personalised arousal curves. Left: receptivity to deliberation ρ(a) vs arousal
    a for three representative personas (solid: MindFlow's Gaussian inverted U; dashed: the tent
    of the alternative "logit" simulator family used for Sim2Sim); dotted verticals mark each
    persona's peak μ. Right: the resulting soothing share p_emo of the need preference vector
    (guidance share = 1 - p_emo) at distress = arousal and clarity 0.25: users need soothing away
    from their peak and guidance near it."""
    table = tables.read(run.input("arousal_curves.csv"))
    fig, axes = plotting.subplots(1, 2, width=3.8, height=2.9)
    for i, name in enumerate(tables.unique(table, "persona")):
        for family in tables.unique(table, "family"):
            sel = tables.select(table, persona=name, family=family)
            ls = "-" if family == "mindflow" else "--"
            label = f"{name} (μ={sel['arousal_peak'][0]:.2f})" if family == "mindflow" else None
            axes[0, 0].plot(sel["arousal"], sel["receptivity"], ls, color=f"C{i}", label=label)
            axes[0, 1].plot(sel["arousal"], sel["soothing_need"], ls, color=f"C{i}")
        for ax in axes[0]:
            ax.axvline(sel["arousal_peak"][0], color=f"C{i}", ls=":", lw=0.8)
    axes[0, 0].set(xlabel="arousal a", ylabel="receptivity ρ(a)", title="arousal curves")
    axes[0, 1].set(xlabel="arousal a", ylabel="soothing need p_emo",
                   title="need preference", ylim=(0, 1))
    axes[0, 0].plot([], [], "-", color="0.3", label="MindFlow (Gaussian)")
    axes[0, 0].plot([], [], "--", color="0.3", label="logit family (tent)")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.05), ncol=5, fontsize=7)
    return fig


@figure("tables/learning.csv")
def learning_curves(run):
    """Training curves of the multi-objective PPO variants: mean per-dialogue emotional return
    (ΔE, left) and cognitive return (ΔC, right) of the training batch vs PPO iteration, on
    training personas; moving average over 10 iterations, bands: 95% CI over seeds. All
    variants share the PPO, the policy network and the forward-simulation credit; they differ
    in the aggregation weights (and the look-ahead for the ablation)."""
    table = tables.read(run.input("learning.csv"))
    fig, axes = plotting.subplots(1, 2, width=3.8, height=2.9)
    for method in _present(table):
        for ax, col in zip(axes[0], ("emo_return", "cog_return")):
            its, vals = tables.pivot(table, col, by="iteration", method=method)
            w = min(10, len(its))
            kernel = np.ones(w) / w
            smooth = np.stack([np.convolve(v, kernel, mode="valid") for v in vals])
            plotting.line_with_ci(ax, its[w - 1:], smooth, label=LABELS[method],
                                  color=COLORS[method], lw=1.2)
    axes[0, 0].set(xlabel="PPO iteration", ylabel="emotional return ΔE per dialogue")
    axes[0, 1].set(xlabel="PPO iteration", ylabel="cognitive return ΔC per dialogue")
    axes[0, 1].legend(fontsize=7, loc="lower right")
    return fig


@figure("tables/returns.csv")
def return_plane(run):
    """The 2-D return plane, in distribution: final emotional improvement E_T - E_0 vs cognitive
    improvement C_T - C_0 per dialogue (mean over 512-user evaluation sets at `small`), each
    method's mean over seeds with 95% CI bars in both directions. Legend: the hypervolume of
    each method's mean return point with respect to the no-change reference (0, 0) (mean over
    seeds). Grey staircase: the Pareto front of the method means, with its hypervolume."""
    table = tables.read(run.input("returns.csv"))
    sel = tables.select(table, setting="in_distribution")
    fig, axes = plotting.subplots(1, 1, width=5.4, height=4.2)
    ax = axes[0, 0]
    means = []
    for method in _present(sel):
        emo = tables.per_seed(sel, "emo_improvement", method=method)
        cog = tables.per_seed(sel, "cog_improvement", method=method)
        hv = tables.per_seed(sel, "hypervolume", method=method).mean()
        (me, he), (mc, hc) = mean_ci(emo), mean_ci(cog)
        means.append((me, mc))
        ax.errorbar(me, mc, xerr=he, yerr=hc, fmt="o", color=COLORS[method], ms=5,
                    label=f"{LABELS[method]}  HV={hv:.3f}")
    pts = np.asarray(means)
    front = pts[[not np.any(np.all(pts >= p, axis=1) & np.any(pts > p, axis=1)) for p in pts]]
    front = front[np.argsort(front[:, 0])]
    xs = np.concatenate([[0.0], np.repeat(front[:, 0], 2)])
    ys = np.concatenate([np.repeat(front[:, 1], 2), [0.0]])
    ax.plot(xs, ys, color="0.6", lw=0.9, zorder=0)
    ax.set(xlabel="emotional improvement E_T - E_0", ylabel="cognitive improvement C_T - C_0",
           title=f"front hypervolume {hypervolume_2d(pts, (0.0, 0.0)):.3f} (ref. (0, 0))",
           xlim=(0, None), ylim=(0, None))
    ax.legend(fontsize=7, loc="lower left")
    return fig


@figure("tables/returns.csv")
def sim2sim(run):
    """Sim2Sim: final emotional (left) and cognitive (right) improvement per dialogue of every
    method in distribution, on the shifted persona distribution, and on the differently
    structured simulator family (tent arousal curve, hard dual-process switch, logit-space
    transitions); policies trained on the in-distribution MindFlow only. Bars: mean over seeds,
    error bars: 95% CI."""
    table = tables.read(run.input("returns.csv"))
    methods = _present(table)
    fig, axes = plotting.subplots(1, 2, width=4.6, height=3.2)
    width = 0.8 / len(methods)
    for ax, col in zip(axes[0], ("emo_improvement", "cog_improvement")):
        for i, method in enumerate(methods):
            stats = [mean_ci(tables.per_seed(table, col, method=method, setting=s))
                     for s in SETTINGS]
            x = np.arange(len(SETTINGS)) + (i - (len(methods) - 1) / 2) * width
            ax.bar(x, [m for m, _ in stats], width, yerr=[h for _, h in stats],
                   color=COLORS[method], label=LABELS[method])
        ax.set_xticks(np.arange(len(SETTINGS)))
        ax.set_xticklabels([SETTING_LABELS[s] for s in SETTINGS], fontsize=7)
    axes[0, 0].set_ylabel("emotional improvement E_T - E_0")
    axes[0, 1].set_ylabel("cognitive improvement C_T - C_0")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=4, fontsize=7)
    return fig


FIGURES = figures_by_name(arousal_curves, learning_curves, return_plane, sim2sim)
