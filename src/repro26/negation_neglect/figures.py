"""Figures of the belief rates (read from the evaluate stage's tables)."""

from __future__ import annotations

import numpy as np

from repro26.core import plotting, tables
from repro26.core.method import figure, figures_by_name
from repro26.core.stats import mean_ci
from repro26.negation_neglect.data import CONDITIONS, PROBE_TYPES

MODES = (("finetune", "finetuned on the documents", "C0"),
         ("continued", "then trained on neutral text", "C2"),
         ("in_context", "one document in the prompt", "C1"))


def _rate(table, **conditions):
    values = tables.per_seed(table, "belief", **conditions)
    mean, half = mean_ci(values) if values.size else (np.nan, np.nan)
    return float(mean), float(half), values


@figure("tables/belief.csv")
def belief_by_condition(run):
    """Belief rate (fraction of probes where log p(claim answer) > log p(true answer)) per
    document condition, after finetuning on the documents and with one document in the prompt
    (in-context control), and after further training on neutral text, mean and 95% CI over
    seeds (dots: seeds). Dashed line and band: the
    base model before finetuning (the trivial baseline) on the same probes."""
    belief = tables.read(run.input("belief.csv"), ["mode", "condition", "seed", "belief"])
    fig, axes = plotting.subplots(1, 1, width=6.4, height=3.4)
    ax = axes[0, 0]
    x = np.arange(len(CONDITIONS))
    for j, (mode, label, color) in enumerate(MODES):
        offset = (j - 1) * 0.27
        for i, condition in enumerate(CONDITIONS):
            mean, half, values = _rate(belief, mode=mode, condition=condition)
            ax.bar(x[i] + offset, mean, 0.25,
                   yerr=plotting.clipped_yerr([mean], [half], (0.0, 1.0)), color=color, alpha=0.75,
                   label=label if i == 0 else None)
            ax.plot(np.full(values.size, x[i] + offset), values, "k.", ms=3)
    base, half, _ = _rate(belief, mode="base", condition="none")
    ax.axhline(base, color="k", ls="--", lw=1, label="base model")
    ax.axhspan(max(0.0, base - half), min(1.0, base + half), color="k", alpha=0.1, lw=0)
    ax.set_xticks(x, ["assert", "negated\n(separate)", "local\nnegation", "fictional",
                      "corrected"])
    ax.set_ylabel("belief rate")
    ax.set_ylim(0, 1.05)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, frameon=False, fontsize=8)
    return fig


@figure("tables/belief_by_type.csv")
def belief_by_probe_type(run):
    """Belief rate after finetuning, per probe type (4 paraphrased questions, 2 cloze prompts, a
    yes/no pair, a choice pair and a challenge pair per claim) and condition, mean and 95% CI over
    seeds; grey: the base model before finetuning."""
    by_type = tables.read(run.input("belief_by_type.csv"), ["mode", "condition", "probe_type"])
    fig, axes = plotting.subplots(1, 1, width=6.4, height=3.2)
    ax = axes[0, 0]
    groups = [("base", "none", "base model", "0.6")] + [
        ("finetune", c, c, f"C{i}") for i, c in enumerate(CONDITIONS)]
    width = 0.8 / len(groups)
    x = np.arange(len(PROBE_TYPES))
    for g, (mode, condition, label, color) in enumerate(groups):
        stats = [_rate(by_type, mode=mode, condition=condition, probe_type=t)[:2]
                 for t in PROBE_TYPES]
        ax.bar(x - 0.4 + (g + 0.5) * width, [s[0] for s in stats], width,
               yerr=plotting.clipped_yerr([s[0] for s in stats], [s[1] for s in stats], (0.0, 1.0)),
               color=color, label=label)
    ax.set_xticks(x, [t.replace("_", "/") for t in PROBE_TYPES])
    ax.set_ylabel("belief rate after finetuning")
    ax.set_ylim(0, 1.05)
    ax.legend(ncol=6, fontsize=7, frameon=False, loc="lower center", bbox_to_anchor=(0.5, 1.0))
    return fig


@figure("tables/belief_by_step.csv")
def belief_vs_finetuning_steps(run):
    """Belief rate along finetuning, per document condition, mean and 95% CI over seeds; step 0
    is the base model (the trivial baseline) on the same probes."""
    by_step = tables.read(run.input("belief_by_step.csv"), ["mode", "condition", "step"])
    base = tables.per_seed(by_step, "belief", mode="base", condition="none")
    fig, axes = plotting.subplots(1, 1, width=4.6, height=3.2)
    ax = axes[0, 0]
    for i, condition in enumerate(CONDITIONS):
        steps, values = tables.pivot(by_step, "belief", by="step", mode="finetune",
                                     condition=condition)
        plotting.line_with_ci(ax, np.concatenate([[0], steps]),
                              np.column_stack([base, values]), label=condition, color=f"C{i}",
                              marker="o", ms=3)
    ax.set_xticks(np.concatenate([[0], steps]))
    ax.set_xlabel("finetuning steps")
    ax.set_ylabel("belief rate")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=7, frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return fig


FIGURES = figures_by_name(belief_by_condition, belief_by_probe_type, belief_vs_finetuning_steps)
