"""Figures of the nesyproact experiments; each reads ``summary.csv`` only, and its docstring
is its caption."""

from __future__ import annotations

import numpy as np

from repro26.core import plotting, tables
from repro26.core.method import figure, figures_by_name
from repro26.core.stats import mean_ci

AGENT_STYLE = {"random": ("random", "0.6"), "react": ("ReAct", "C0"), "asi": ("ASI", "C1"),
               "nesyproact": ("NesyProAct", "C3")}


def _summary(run):
    return tables.read(run.input("summary.csv"))


def _agents(summary) -> list[str]:
    return [a for a in AGENT_STYLE if a in set(summary["agent"].tolist())]


@figure("tables/summary.csv")
def success_by_domain(run):
    """Success rate per domain and agent at the nominal fault rates, for the strong and the
    weak policy (bars: mean over seeds of the per-seed success rate; whiskers: 95% CI over
    seeds). The random-valid-action agent is the trivial baseline."""
    s = _summary(run)
    scale = float(run.cfg.claim_fault_scale)
    policies = list(run.cfg.claim_policies)
    domains = [d for d in tables.unique(s, "domain") if d != "all"] + ["all"]
    agents = _agents(s)
    fig, axes = plotting.subplots(len(policies), 1, width=7.5, height=2.6)
    width = 0.8 / len(agents)
    for ax, policy in zip(axes[:, 0], policies):
        for k, agent in enumerate(agents):
            means, halves = [], []
            for d in domains:
                x = tables.per_seed(s, "success", agent=agent, domain=d, policy=policy,
                                    fault_scale=scale)
                mean, half = mean_ci(x) if x.size else (np.nan, np.nan)
                means.append(float(mean))
                halves.append(float(half))
            name, color = AGENT_STYLE[agent]
            ax.bar(np.arange(len(domains)) + (k - (len(agents) - 1) / 2) * width, means, width,
                   yerr=halves, color=color, label=name)
        ax.set_xticks(np.arange(len(domains)))
        ax.set_xticklabels(domains)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("success rate")
        ax.set_title(f"{policy} policy, fault scale {scale:g}")
    axes[0, 0].legend(ncol=len(agents), loc="lower center", bbox_to_anchor=(0.5, 1.12))
    fig.tight_layout()
    return fig


@figure("tables/summary.csv")
def gain_vs_fault_rate(run):
    """Success of each agent vs the fault scale (0 = no injected faults, 1 = the nominal rates)
    with the strong, the weak and the error-free (ideal) policy, and the paired gains over ASI
    with the strong policy that the claims judge on the whole sweep: NesyProAct(strong),
    NesyProAct(weak) and NesyProAct(ideal) (95% CI over seeds)."""
    s = _summary(run)
    strong, weak = run.cfg.claim_policies
    policies = [strong, weak, run.cfg.ideal_policy]
    fig, axes = plotting.subplots(1, len(policies) + 1, width=3.0, height=2.8)
    for ax, policy in zip(axes[0], policies):
        for agent in _agents(s):
            xs, y = tables.pivot(s, "success", by="fault_scale", agent=agent, domain="all",
                                 policy=policy)
            name, color = AGENT_STYLE[agent]
            plotting.line_with_ci(ax, xs, y, label=name, color=color, marker="o", ms=3)
        ax.set_xlabel("fault scale (x nominal rates)")
        ax.set_ylabel("success rate")
        ax.set_ylim(0, 1.05)
        ax.set_title(f"{policy} policy")
    axes[0, 0].legend(fontsize=7)
    ax = axes[0, -1]
    _, asi = tables.pivot(s, "success", by="fault_scale", agent="asi", domain="all",
                          policy=strong)
    for policy, style in zip(policies, ("-", "--", ":")):
        xs, a = tables.pivot(s, "success", by="fault_scale", agent="nesyproact", domain="all",
                             policy=policy)
        plotting.line_with_ci(ax, xs, a - asi, label=f"NesyProAct({policy})", color="C3",
                              linestyle=style, marker="o", ms=3)
    ax.axhline(0, color="0.3", lw=0.8)
    ax.set_xlabel("fault scale (x nominal rates)")
    ax.set_ylabel(f"success gain over ASI({strong})")
    ax.set_title("gain (paired by seed)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


@figure("tables/summary.csv")
def premise_and_error_depth(run):
    """Acting on invalidated premises: the fraction of acting steps taken while the agent's
    belief (its plan position, the page, fresh ids, no dialog) was false, and the
    error-propagation depth (mean length of runs of such consecutive steps), vs the fault
    scale; solid: strong policy, dashed: weak (95% CI over seeds). The random agent has no plan
    and is not shown."""
    s = _summary(run)
    policies = list(run.cfg.claim_policies)
    fig, axes = plotting.subplots(1, 2, width=3.4, height=2.8)
    for ax, value, label in zip(axes[0], ("premise_invalid", "error_depth"),
                                ("fraction of steps on a false premise",
                                 "error-propagation depth (steps)")):
        for agent in _agents(s):
            if agent == "random":
                continue
            name, color = AGENT_STYLE[agent]
            for policy, style in zip(policies, ("-", "--")):
                xs, y = tables.pivot(s, value, by="fault_scale", agent=agent, domain="all",
                                     policy=policy)
                plotting.line_with_ci(ax, xs, y, label=f"{name} ({policy})", color=color,
                                      linestyle=style, marker="o", ms=3)
        ax.set_xlabel("fault scale (x nominal rates)")
        ax.set_ylabel(label)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.tight_layout()
    fig.legend(handles, labels, ncol=3, loc="upper center", bbox_to_anchor=(0.5, 0.0),
               fontsize=7)
    return fig


FIGURES = figures_by_name(success_by_domain, gain_vs_fault_rate, premise_and_error_depth)
