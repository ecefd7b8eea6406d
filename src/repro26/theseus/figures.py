"""Figures of the two conversions, from ``tables/final.csv`` and ``tables/stages.csv`` only;
each docstring is the caption."""

from __future__ import annotations

import numpy as np

from repro26.core import plotting, tables
from repro26.core.method import figure, figures_by_name
from repro26.core.stats import mean_ci

LABELS = {"guide": "guide", "linear": "linear (trivial)", "scratch": "scratch target",
          "kd": "logit distillation", "fmse": "feature-MSE distillation",
          "oneshot": "one-shot replacement", "not": "NoT", "not_mnn": "NoT (soft MNN)",
          "not_untrained": "NoT, untrained guide"}
COLORS = {"guide": "0.3", "linear": "0.75", "scratch": "C3", "kd": "C4", "fmse": "C5",
          "oneshot": "C1", "not": "C0", "not_mnn": "C9", "not_untrained": "C2"}
TASKS = {"images": ("CNN → MLP, cluttered digits", "accuracy", "test accuracy (%)", 100.0),
         "text": ("transformer → RNN, KJV characters", "perplexity",
                  "test perplexity per character", 1.0)}


def _models(table, task):
    return tables.unique(table, "model", task=task)


def _bars(ax, table, task, models):
    _, value, ylabel, scale = TASKS[task]
    means, halves = [], []
    for m in models:
        mean, half = mean_ci(scale * tables.per_seed(table, value, task=task, model=m))
        means.append(mean)
        halves.append(half)
    x = np.arange(len(models))
    ax.bar(x, means, yerr=halves, color=[COLORS[m] for m in models], capsize=3)
    for xi, mean in zip(x, means):
        ax.annotate(f"{mean:.3g}", (xi, mean), ha="center", va="bottom", fontsize=7,
                    xytext=(0, 3), textcoords="offset points")
    ax.set_xticks(x)
    ax.set_xticklabels([LABELS[m] for m in models], rotation=30, ha="right")
    ax.set_ylabel(ylabel)
    lo = min(np.asarray(means) - np.asarray(halves))
    hi = max(np.asarray(means) + np.asarray(halves))
    ax.set_ylim(max(0.0, lo - 0.15 * (hi - lo)) if task == "text" else 0.0, hi + 0.12 * (hi - lo))


@figure("tables/final.csv")
def conversion_gap(run):
    """Does the guide's inductive bias matter here? Test accuracy of the guide CNN, an MLP and a
    linear model trained from scratch on cluttered glyph digits (left), and test perplexity per
    character of the guide transformer, an RNN and a log-linear c-gram trained from scratch on
    KJV text (right; lower is better). Targets get the conversion's budget (steps per part ×
    parts). Bars: mean over seeds; error bars: 95% CI."""
    final = tables.read(run.input("final.csv"))
    fig, axes = plotting.subplots(1, 2, width=3.4, height=3.0)
    for ax, task in zip(axes[0], TASKS):
        _bars(ax, final, task, [m for m in ("guide", "scratch", "linear") if m in _models(final, task)])
        ax.set_title(TASKS[task][0])
    fig.tight_layout()
    return fig


@figure("tables/stages.csv")
def ship_curve(run):
    """The "ship" curve: test metric of the hybrid network after each conversion stage (stage k:
    parts 1..k are target modules, the rest still the guide's; stage 0 is the guide, the last
    stage the pure target architecture). Left: CNN → MLP accuracy; right: transformer → RNN
    perplexity. Horizontal lines: scratch target and linear model with the same budget (shaded:
    95% CI). Error bars: 95% CI over seeds."""
    st = tables.read(run.input("stages.csv"))
    fig, axes = plotting.subplots(1, 2, width=3.6, height=3.0)
    for ax, task in zip(axes[0], TASKS):
        title, value, ylabel, scale = TASKS[task]
        models = _models(st, task)
        last = 0
        for m in ("not", "not_mnn", "not_untrained"):
            if m not in models:
                continue
            xs, mean, half = tables.mean_ci_by(st, value, by="stage", task=task, model=m)
            ax.errorbar(xs, scale * mean, yerr=scale * half, marker="o", ms=4, capsize=3,
                        color=COLORS[m], label=LABELS[m])
            last = max(last, int(xs.max()))
        for m, ls in (("scratch", "--"), ("linear", ":")):
            if m in models:
                mean, half = mean_ci(scale * tables.per_seed(st, value, task=task, model=m))
                ax.axhline(mean, color=COLORS[m], ls=ls, label=LABELS[m])
                ax.axhspan(mean - half, mean + half, color=COLORS[m], alpha=0.12, lw=0)
        ax.set_xticks(range(last + 1))
        ax.set_xticklabels(["guide"] + [str(k) for k in range(1, last)] + ["target"]
                           if last else ["guide"])
        ax.set_xlabel("parts replaced (stage)")
        ax.set_ylabel(ylabel)
        if task == "text":
            ax.set_yscale("log")
            plotting.plain_log_ticks(ax.yaxis)
        ax.set_title(title)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


@figure("tables/final.csv")
def final_comparison(run):
    """Final target networks against the baselines: every model's test accuracy (CNN → MLP, left)
    and test perplexity per character (transformer → RNN, right). NoT = Network of Theseus
    (part-by-part replacement; a stage read by a guide part is matched to the guide's output, one
    read by a target part aligned by linear CKA, or the soft mutual-nearest-neighbour score for
    NoT (soft MNN)); one-shot = every part replaced at once, same alignment; distillation baselines train
    the target from scratch on the guide's logits or stage outputs. All targets have the same
    number of steps. Bars: mean over seeds; error bars: 95% CI."""
    final = tables.read(run.input("final.csv"))
    fig, axes = plotting.subplots(1, 2, width=4.4, height=3.4)
    for ax, task in zip(axes[0], TASKS):
        _bars(ax, final, task, _models(final, task))
        ax.set_title(TASKS[task][0])
    fig.tight_layout()
    return fig


@figure("tables/final.csv")
def cka_layers(run):
    """Linear CKA between the output of each stage of the final network and the guide's stage
    output on held-out inputs (images: one sample per image; text: one per token), per model;
    for the untrained-guide conversion against the untrained guide it was aligned to. 1 = same
    representation up to rotation and scale. Error bars: 95% CI over seeds."""
    final = tables.read(run.input("final.csv"))
    fig, axes = plotting.subplots(1, 2, width=3.6, height=3.0)
    for ax, task in zip(axes[0], TASKS):
        layers = sorted(c for c in final if c.startswith("cka_"))
        n_layers = 0
        for m in _models(final, task):
            if m in ("guide", "linear"):
                continue
            vals = np.stack([tables.per_seed(final, c, task=task, model=m) for c in layers], 1)
            vals = vals[:, np.all(np.isfinite(vals), axis=0)]
            n_layers = max(n_layers, vals.shape[1])
            mean, half = mean_ci(vals)
            ax.errorbar(np.arange(1, vals.shape[1] + 1), mean, yerr=half, marker="o", ms=4,
                        capsize=3, color=COLORS[m], label=LABELS[m])
        ax.set_xticks(range(1, n_layers + 1))
        ax.set_xlabel("stage (part)")
        ax.set_ylabel("CKA with guide")
        ax.set_ylim(0, 1.05)
        ax.set_title(TASKS[task][0])
        ax.legend(fontsize=6)
    fig.tight_layout()
    return fig


FIGURES = figures_by_name(conversion_gap, ship_curve, final_comparison, cka_layers)
