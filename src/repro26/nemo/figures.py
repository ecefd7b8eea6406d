"""Figures of the nemo experiments (tables only; each docstring is the caption)."""

from __future__ import annotations

import numpy as np

from repro26.core import plotting, tables
from repro26.core.method import figure, figures_by_name
from repro26.core.stats import mean_ci
from repro26.nemo.names import SETTINGS

METHOD_ORDER = ("nemo", "nemo_one_step", "nemo_plain", "emotion_only", "fixed_75", "fixed_50",
                "fixed_25", "cognition_only", "rule_based", "random", "planner_emo",
                "planner_cog", "planner_need")
FRONT = ("emotion_only", "fixed_75", "fixed_50", "fixed_25", "cognition_only")
PLANNERS = ("planner_emo", "planner_cog", "planner_need")
LABELS = {"nemo": "NeMo (need-aware, H-turn forward sim.)",
          "nemo_one_step": "NeMo, 1-turn credit (ablation)",
          "nemo_plain": "need-aware PPO, plain returns",
          "emotion_only": "emotion only (w=1)", "fixed_75": "fixed w=0.75",
          "fixed_50": "fixed w=0.5", "fixed_25": "fixed w=0.25",
          "cognition_only": "cognition only (w=0)", "rule_based": "rule-based schedule",
          "random": "random", "planner_emo": "planner optimum, E",
          "planner_cog": "planner optimum, C", "planner_need": "planner optimum, N"}
COLORS = {"nemo": "C3", "nemo_one_step": "C1", "nemo_plain": "C5", "emotion_only": "C4",
          "fixed_75": "#5e81b5", "fixed_50": "C0", "fixed_25": "#2a9d8f",
          "cognition_only": "C2", "rule_based": "0.35", "random": "0.65",
          "planner_emo": "C6", "planner_cog": "C8", "planner_need": "k"}
METRIC_LABELS = {"emo_improvement": "emotional improvement E_T - E_0",
                 "cog_improvement": "cognitive improvement C_T - C_0",
                 "need_weighted": "need-weighted satisfaction Σ p·r"}
SETTING_LABELS = {"in_distribution": "in distribution", "shifted_personas": "shifted\npersonas",
                  "alt_family": "other simulator\nfamily"}


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
    (ΔE, left), cognitive return (ΔC, middle) and need-weighted satisfaction (Σ p·r, right) of
    the training batch vs PPO iteration, on training personas; moving average over 10
    iterations, bands: 95% CI over seeds. All variants share the PPO and the policy network;
    they differ in the aggregation weights and the credit (H-turn forward simulation, 1 turn
    for the ablation, plain returns-to-go for the plain learner)."""
    table = tables.read(run.input("learning.csv"))
    fig, axes = plotting.subplots(1, 3, width=3.6, height=2.9)
    for method in _present(table):
        for ax, col in zip(axes[0], ("emo_return", "cog_return", "need_return")):
            its, vals = tables.pivot(table, col, by="iteration", method=method)
            w = max(1, min(10, len(its) // 3))  # a window that leaves a curve at smoke too
            kernel = np.ones(w) / w
            smooth = np.stack([np.convolve(v, kernel, mode="valid") for v in vals])
            plotting.line_with_ci(ax, its[w - 1:], smooth, label=LABELS[method],
                                  color=COLORS[method], lw=1.2)
    axes[0, 0].set(xlabel="PPO iteration", ylabel="emotional return ΔE per dialogue")
    axes[0, 1].set(xlabel="PPO iteration", ylabel="cognitive return ΔC per dialogue")
    axes[0, 2].set(xlabel="PPO iteration", ylabel="need-weighted satisfaction per dialogue")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.07), ncol=4, fontsize=7)
    return fig


@figure("tables/returns.csv")
def return_plane(run):
    """The 2-D return plane, in distribution: final emotional improvement E_T - E_0 vs cognitive
    improvement C_T - C_0 per dialogue (mean over the evaluation users), each method's mean over
    seeds with 95% CI bars in both directions; legend: the need-weighted satisfaction N of each
    method (mean over seeds). Blue line: the front of fixed scalarisations (PPO on
    w E + (1 - w) C, w = 1 ... 0). Stars: the ideal rows, the planner optimum for E, C and N on
    the noise-free simulator (knowing the user)."""
    table = tables.read(run.input("returns.csv"))
    sel = tables.select(table, setting="in_distribution")
    fig, axes = plotting.subplots(1, 1, width=6.0, height=4.4)
    ax = axes[0, 0]
    means = {}
    for method in _present(sel):
        emo = tables.per_seed(sel, "emo_improvement", method=method)
        cog = tables.per_seed(sel, "cog_improvement", method=method)
        need = tables.per_seed(sel, "need_weighted", method=method).mean()
        (me, he), (mc, hc) = mean_ci(emo), mean_ci(cog)
        means[method] = (me, mc)
        ax.errorbar(me, mc, xerr=he, yerr=hc, fmt="*" if method in PLANNERS else "o",
                    color=COLORS[method], ms=9 if method in PLANNERS else 5,
                    label=f"{LABELS[method]}  N={need:.3f}")
    front = np.asarray([means[m] for m in FRONT if m in means])
    if len(front):
        ax.plot(front[:, 0], front[:, 1], color="C0", lw=0.9, zorder=0)
    ax.set(xlabel="emotional improvement E_T - E_0", ylabel="cognitive improvement C_T - C_0",
           xlim=(0, None), ylim=(0, None))
    ax.legend(fontsize=6.5, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    return fig


@figure("tables/returns.csv")
def sim2sim(run):
    """Sim2Sim: final emotional improvement (left), cognitive improvement (middle) and
    need-weighted satisfaction (right) per dialogue of every method in distribution, on the
    shifted persona distribution, and on the differently structured simulator family (tent
    arousal curve, hard dual-process switch, logit-space transitions); policies trained on the
    in-distribution MindFlow only, planners plan on each setting's noise-free simulator. Bars:
    mean over seeds, error bars: 95% CI."""
    table = tables.read(run.input("returns.csv"))
    methods = _present(table)
    fig, axes = plotting.subplots(1, 3, width=4.4, height=3.2)
    width = 0.8 / len(methods)
    for ax, col in zip(axes[0], ("emo_improvement", "cog_improvement", "need_weighted")):
        for i, method in enumerate(methods):
            stats = [mean_ci(tables.per_seed(table, col, method=method, setting=s))
                     for s in SETTINGS]
            x = np.arange(len(SETTINGS)) + (i - (len(methods) - 1) / 2) * width
            ax.bar(x, [m for m, _ in stats], width, yerr=[h for _, h in stats],
                   color=COLORS[method], label=LABELS[method])
        ax.set_xticks(np.arange(len(SETTINGS)))
        ax.set_xticklabels([SETTING_LABELS[s] for s in SETTINGS], fontsize=7)
        ax.set_ylabel(METRIC_LABELS[col])
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=4, fontsize=7)
    return fig


FIGURES = figures_by_name(arousal_curves, learning_curves, return_plane, sim2sim)
