"""Figures of the success rates (read from the evaluate stage's tables)."""

from __future__ import annotations

import numpy as np

from repro26.core import plotting, tables
from repro26.core.method import figure, figures_by_name
from repro26.core.stats import mean_ci
from repro26.nestedvla.names import SUITES

LABELS = {"base": "frozen base", "nearest": "nearest task's adapter",
          "task_arithmetic": "task arithmetic", "ties": "TIES", "dare": "DARE",
          "joint": "multi-task joint", "nestedvla": "NestedVLA",
          "finetune": "per-task fine-tuning"}
COLORS = {"base": "0.55", "nearest": "0.75", "task_arithmetic": "C0", "ties": "C9",
          "dare": "C4", "joint": "C2", "nestedvla": "C3", "finetune": "C1"}
GROUPS = (*SUITES, "all")


def _bars(ax, table, methods):
    width = 0.85 / len(methods)
    x = np.arange(len(GROUPS))
    for j, method in enumerate(methods):
        for i, suite in enumerate(GROUPS):
            values = tables.per_seed(table, "success", method=method, suite=suite)
            if not values.size:
                continue
            mean, half = mean_ci(values)
            pos = x[i] - 0.425 + (j + 0.5) * width
            ax.bar(pos, mean, width, yerr=half, color=COLORS[method], capsize=1.5,
                   label=LABELS[method] if i == 0 else None)
            ax.plot(np.full(values.size, pos), values, "k.", ms=2)
    ax.set_xticks(x, ["point mass", "2-link arm", "3-link arm", "mean of suites"])
    ax.set_ylabel("success rate")
    ax.set_ylim(0, 1.05)
    ax.legend(ncol=4, fontsize=7, frameon=False, loc="lower center", bbox_to_anchor=(0.5, 1.0))


@figure("tables/success_by_suite.csv")
def success_by_suite(run):
    """Success rate on the skill (training) tasks per suite and method, mean and 95% CI over
    seeds (dots: seeds). Merging baselines merge one suite's per-task adapters into one delta,
    lambda picked per suite and seed on separate selection episodes; frozen base and the nearest
    other task's adapter are the trivial baselines; per-task fine-tuning is the upper bound."""
    table = tables.read(run.input("success_by_suite.csv"), ["method", "suite", "seed", "success"])
    fig, axes = plotting.subplots(1, 1, width=7.2, height=3.4)
    _bars(axes[0, 0], table, [m for m in LABELS if m in set(table["method"].tolist())])
    return fig


@figure("tables/heldout_by_suite.csv")
def heldout_success(run):
    """Success rate on held-out tasks (task tokens never trained on) per suite and method, mean
    and 95% CI over seeds (dots: seeds). NestedVLA generates the adapter from the unseen token;
    the nearest-task row applies the adapter of the nearest training task as is."""
    table = tables.read(run.input("heldout_by_suite.csv"), ["method", "suite", "seed", "success"])
    fig, axes = plotting.subplots(1, 1, width=7.2, height=3.4)
    _bars(axes[0, 0], table, [m for m in LABELS if m in set(table["method"].tolist())])
    return fig


@figure("tables/generated_adapters.csv")
def generated_adapters(run):
    """Why generation fails or holds on a task: left, the norm of the adapter NestedVLA generates
    (relative to the mean norm of the trained per-task adapters of that seed) against the
    distance of the task token to the nearest training token (in units of the median
    nearest-neighbour distance among training tokens); right, NestedVLA's success minus the
    frozen base's on that task against the same norm. One dot per task and seed; training tasks
    (grey) and held-out tasks (red)."""
    table = tables.read(run.input("generated_adapters.csv"),
                        ["split", "token_distance", "delta_norm_ratio", "nestedvla", "base"])
    fig, axes = plotting.subplots(1, 2, width=3.8, height=3.0)
    fig.subplots_adjust(wspace=0.45)
    for split, color in (("train", "0.6"), ("heldout", "C3")):
        rows = table["split"] == split
        label = "training tasks" if split == "train" else "held-out tasks"
        axes[0, 0].plot(table["token_distance"][rows], table["delta_norm_ratio"][rows], ".",
                        color=color, ms=4, label=label)
        axes[0, 1].plot(table["delta_norm_ratio"][rows],
                        table["nestedvla"][rows] - table["base"][rows], ".", color=color, ms=4,
                        label=label)
    axes[0, 0].set_xlabel("token distance to nearest training\ntoken (1 = median among training)")
    axes[0, 0].set_ylabel("generated adapter norm\n/ mean trained adapter norm")
    axes[0, 1].set_xlabel("generated adapter norm\n/ mean trained adapter norm")
    axes[0, 1].set_ylabel("success rate difference:\nNestedVLA - frozen base")
    axes[0, 1].axhline(0, color="k", lw=0.5)
    axes[0, 0].legend(frameon=False, fontsize=7)
    return fig


FIGURES = figures_by_name(success_by_suite, heldout_success, generated_adapters)
