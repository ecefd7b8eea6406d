"""Figures of the attn_recurrence experiments, in the paper's order; each reads tables only, and
its docstring is its caption."""

from __future__ import annotations

import numpy as np

from repro26.attn_recurrence import claims
from repro26.core import plotting, tables
from repro26.core.method import figure, figures_by_name

STYLE = {"diag": ("C0", "-", "diagonal recurrence (trained)"),
         "linattn": ("C1", "-", "linear attention (trained)"),
         "svd_sweep": ("C2", "--", "truncated-SVD construction"),
         "random": ("C7", ":", "random recurrence + LSQ readout"),
         "causal_mean": ("C5", ":", "running average (state 1)")}


def _band(ax, x, by_seed, **kw):
    by_seed = np.asarray(by_seed, float)
    plotting.line_with_ci(ax, x, by_seed, marker="o", ms=3, **kw)


@figure("tables/tightness.csv")
def tightness(run):
    """Experiment 1: operator-norm error ||P − M||₂ / ||P||₂ on held-out sequences vs the state
    N of value-linear recurrences distilled into three synthetic heads (retrieval: multi-query
    associative recall; smooth: local decaying attention; clustered), against the lower bound
    max_t σ_{N+1}(P[t:, :t]) / ||P||₂ (black). Baselines of the same state in the same job: the
    truncated-SVD construction at every split (an explicit N-state recurrence), a random
    diagonal recurrence with least-squares readout, the running average. Bands: 95% CI over
    seeds; dotted grey: the tolerance defining the required state."""
    table = tables.read(run.input("tightness.csv"))
    targets = tables.unique(table, "target")
    fig, axes = plotting.subplots(1, len(targets), width=3.6, height=3.1)
    kinds = [k for k in claims.TRAINED if k in tables.unique(table, "method")]
    for ax, target in zip(axes[0], targets):
        job = kinds[0]
        for method, (color, ls, label) in STYLE.items():
            rows = {"target": target, "method": method,
                    "job": method if method in kinds else job}
            if not tables.where(table, **rows).any():
                continue
            states, err = tables.pivot(table, "err_op", by="state", **rows)
            _, norm = tables.pivot(table, "norm_op", by="state", **rows)
            _band(ax, states, err / norm, color=color, ls=ls, label=label)
        states, bound = tables.pivot(table, "bound_op", by="state", target=target, method=job,
                                     job=job)
        _, norm = tables.pivot(table, "norm_op", by="state", target=target, method=job, job=job)
        _band(ax, states, bound / norm, color="k", ls="-", lw=2, label="lower bound")
        ax.axhline(run.cfg.state_tol, color="0.5", ls=":", lw=1)
        ax.set_xscale("log", base=2)
        ax.set_xticks(states)
        ax.set_xticklabels([str(int(s)) for s in states])
        ax.set_xlabel("state N")
        ax.set_ylabel("||P − M||₂ / ||P||₂")
        ax.set_ylim(bottom=0)
        ax.set_title(target)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=7,
               bbox_to_anchor=(0.5, -0.2))
    fig.suptitle("Trained surrogates vs the semiseparable lower bound", y=1.02)
    return fig


@figure("tables/scaling.csv")
def state_scaling(run):
    """Experiment 2: state required (smallest on the grid with ||P ⊗ I − M||₂ ≤ tol ||P ⊗ I||₂)
    vs the load K·d_v on multi-query associative recall with K key-value pairs and values of
    dimension d_v, for the trained selective diagonal recurrence (state shared by the value
    channels), the lower bound on P ⊗ I_{d_v} and a random recurrence with least-squares
    readout. Points: seeds (jittered); lines: median over seeds; dashed: state = K·d_v. A seed
    that never reaches the tolerance on the grid is drawn above the grid (triangle)."""
    table = tables.read(run.input("scaling.csv"))
    tol = run.cfg.state_tol
    cells = sorted({(int(k), int(d)) for k, d in zip(table["pairs"], table["value_dim"])})
    top = float(np.max(table["state"])) * 1.6
    fig, axes = plotting.subplots(1, 1, width=4.6, height=3.6)
    ax = axes[0, 0]
    for j, (method, color, label) in enumerate((("diag", "C0", "trained diagonal recurrence"),
                                                ("bound", "k", "lower bound"),
                                                ("random", "C7", "random recurrence"))):
        for d, marker in zip(sorted({d for _, d in cells}), "osD^"):
            ks = [k for k, dd in cells if dd == d]
            column, rows = ("bound_op", "diag") if method == "bound" else ("err_op", method)
            req = np.stack([claims.required_states(table, column, tol, pairs=k, value_dim=d,
                                                   method=rows) for k in ks], 1)
            loads = np.asarray(ks, float) * d
            shown = np.where(np.isfinite(req), req, top)
            jitter = 1 + 0.04 * (j - 1)
            x = np.broadcast_to(loads * jitter, req.shape)
            reached = np.isfinite(req)
            ax.scatter(x[reached], shown[reached], color=color, marker=marker, s=12, alpha=0.5)
            ax.scatter(x[~reached], shown[~reached], color=color, marker="^", s=14, alpha=0.5)
            ax.plot(loads * jitter, np.median(shown, 0), color=color, marker=marker, ms=4,
                    label=f"{label}, d_v={d}")
    loads = np.unique([k * d for k, d in cells])
    ax.plot(loads, loads, color="C3", ls="--", lw=0.8, label="state = K·d_v")
    ax.axhline(top, color="0.6", lw=0.6)
    ax.text(loads[0], top * 1.05, "not reached on the grid", fontsize=6, color="0.4")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("load K·d_v (pairs × value dimension)")
    ax.set_ylabel("required state")
    ax.legend(fontsize=6)
    ax.set_title(f"MQAR: required state (error ≤ {tol} ||P||₂)", fontsize=9)
    return fig


@figure("tables/survey.csv")
def head_survey(run):
    """Experiment 3: the rank obstruction of every attention head of the GPT-2-shaped
    transformers trained here (char LM on the King James Bible, MQAR), read back through the
    GPT-2 weight loader. Left: lower bound max_t σ_{N+1}(P[t:, :t]) / ||P||₂ (mean over held-out
    sequences) vs state N, one line per head (grey: the same heads at initialisation; black
    dashed: the exact retrieval head on the MQAR held-out windows, the control a retrieval head
    would look like). Right: distribution of that bound at the probe state (below the number of
    stored pairs); dotted: the 'small' threshold; dashed: the exact retrieval head. Values
    below 1e-4 are drawn at 1e-4."""
    table = tables.read(run.input("survey.csv"))
    cfg = run.cfg
    fig, axes = plotting.subplots(1, 2, width=3.9, height=3.2)
    ax = axes[0, 0]
    sources = tables.unique(table, "source")
    colors = {s: f"C{i}" for i, s in enumerate(sources)}
    floor = 1e-4
    for weights in ("init", "trained"):
        for source in sources:
            sel = tables.select(table, source=source, weights=weights)
            for key in sorted({(s, l, h) for s, l, h in zip(sel["seed"], sel["layer"], sel["head"])}):
                head = tables.select(sel, seed=key[0], layer=key[1], head=key[2])
                order = np.argsort(head["state"])
                ax.plot(head["state"][order], np.maximum(head["rel_bound_op"][order], floor),
                        color="0.75" if weights == "init" else colors[source],
                        lw=0.6 if weights == "init" else 0.9, alpha=0.8)
    exact = tables.select(table, weights="exact")
    for seed in sorted(set(exact["seed"].tolist())):
        head = tables.select(exact, seed=seed)
        order = np.argsort(head["state"])
        ax.plot(head["state"][order], np.maximum(head["rel_bound_op"][order], floor),
                color="k", ls="--", lw=1.2)
    for source in sources:
        ax.plot([], [], color=colors[source], label=f"{source} (trained)")
    ax.plot([], [], color="0.75", label="at initialisation")
    if exact["seed"].size:
        ax.plot([], [], color="k", ls="--", label="exact retrieval head (MQAR)")
    ax.axhline(cfg.survey_tol, color="k", ls=":", lw=1)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("state N")
    ax.set_ylabel("bound / ||P||₂")
    ax.set_title("every head", fontsize=9)
    ax.legend(fontsize=6)
    ax = axes[0, 1]
    bins = np.logspace(np.log10(floor), 0.2, 25)
    for source in sources:
        sel = tables.select(table, source=source, weights="trained", state=cfg.survey_probe_state)
        ax.hist(np.maximum(np.asarray(sel["rel_bound_op"], float), floor), bins=bins, alpha=0.6,
                color=colors[source], label=f"{source}: {len(sel['rel_bound_op'])} heads")
    sel = tables.select(table, weights="init", state=cfg.survey_probe_state)
    ax.hist(np.maximum(np.asarray(sel["rel_bound_op"], float), floor), bins=bins,
            histtype="step", color="0.4", label="at initialisation")
    ax.axvline(cfg.survey_tol, color="k", ls=":", lw=1)
    exact = tables.select(exact, state=cfg.survey_probe_state)
    for value in np.asarray(exact["rel_bound_op"], float):
        ax.axvline(max(value, floor), color="k", ls="--", lw=1.2)
    ax.set_xscale("log")
    ax.set_xlabel(f"bound / ||P||₂ at state {cfg.survey_probe_state}")
    ax.set_ylabel("heads")
    ax.set_title(f"at state {cfg.survey_probe_state} (T = {int(table['seq_len'][0])})", fontsize=9)
    ax.legend(fontsize=6)
    return fig


FIGURES = figures_by_name(tightness, state_scaling, head_survey)
