"""Figures of the four experiments (issue 19), from tables/filtering.csv, tables/steps.csv
and tables/training.csv. Error bars and bands: 95% CI over seeds."""

from __future__ import annotations

import numpy as np

from repro26.core import plotting, tables
from repro26.core.method import figure, figures_by_name
from repro26.core.stats import mean_ci

STYLE = {  # filter -> (label, colour, line style, marker): every series its own colour and marker
    "nbf": ("NBF (ours)", "C3", "-", "o"),
    "pf": ("bootstrap PF, N", "C0", "-", "s"),
    "pf_10n": ("bootstrap PF, 10N", "C9", "--", "D"),
    "gaussian": ("Gaussian (unimodal)", "C2", "-", "^"),
    "gmm": ("Gaussian mixture", "C4", "-", "v"),
    "prior_only": ("prior only (trivial)", "C7", ":", "x"),
    "last_seen": ("last seen (trivial)", "C5", "-.", "+"),
    "exact_n": ("N exact samples (floor)", "k", ":", "*"),
    "regen": ("GDE regenerating N exact samples", "C6", ":", "P"),
    "regen_ideal": ("ideal N-point regenerator", "C1", ":", "X"),
}


def _present(table, **cond):
    return [f for f in STYLE if f in tables.unique(table, "filter", **cond)]


POSITIVE = ("sinkhorn", "cpu_seconds_per_step")  # drawn on log axes: bands on the log scale


def _lines(ax, table, value, by, filters, **cond):
    for filt in filters:
        xs, ys = tables.pivot(table, value, by=by, filter=filt, **cond)
        label, colour, ls, marker = STYLE[filt]
        plotting.line_with_ci(ax, xs, ys, label=label, positive=value in POSITIVE, color=colour,
                              linestyle=ls, marker=marker, markersize=4)


@figure("tables/steps.csv")
def tracking_over_time(run):
    """Experiment 1 (held-in dynamics, one evader, d = 2, N = particles): Sinkhorn divergence
    of each filter's belief to the exact grid-filter belief over time (left) and the unique
    fraction of the particles each filter propagates (right: NBF regenerates, the PF's
    resampled particles repeat). Bands: 95% CI over seeds."""
    steps = tables.read(run.input("steps.csv"))
    cond = dict(evaders=1, dynamics=run.cfg.held_in, particles=run.cfg.particles)
    fig, axes = plotting.subplots(1, 2, width=4.2, height=3.2)
    ax1, ax2 = axes[0]
    _lines(ax1, steps, "sinkhorn", "t", _present(steps, **cond), **cond)
    ax1.set(xlabel="time step t", ylabel="Sinkhorn divergence to exact belief", yscale="log",
            title="tracking, d = 2")
    _lines(ax2, steps, "unique_fraction", "t", ["nbf", "pf", "gaussian", "gmm"], **cond)
    ax2.set(xlabel="time step t", ylabel="unique particles / N", ylim=(0, 1.05),
            title="particle diversity")
    # below both panels, as in the other figures: inside the left one it covered the curves
    fig.legend(*ax1.get_legend_handles_labels(), loc="upper center", ncol=3, fontsize=6,
               bbox_to_anchor=(0.5, -0.02))
    return fig


@figure("tables/filtering.csv")
def error_vs_dim(run):
    """Experiment 2 (held-in dynamics, N = particles): mean Sinkhorn divergence to the exact
    belief against the state dimension d = 2k (k independent evaders; the exact belief is the
    product of per-evader grid filters). Bars: 95% CI over seeds."""
    table = tables.read(run.input("filtering.csv"))
    cond = dict(dynamics=run.cfg.held_in, particles=run.cfg.particles)
    fig, axes = plotting.subplots(1, 2, width=3.8, height=3.0, gridspec_kw={"wspace": 0.35})
    _lines(axes[0][0], table, "sinkhorn", "dim", _present(table, **cond), **cond)
    axes[0][0].set(xlabel="state dimension d", ylabel="Sinkhorn divergence", yscale="log")
    _lines(axes[0][1], table, "mean_error", "dim", _present(table, **cond), **cond)
    axes[0][1].set(xlabel="state dimension d", ylabel="belief-mean error (cells)")
    for ax in axes[0]:
        ax.set_xticks([2 * k for k in run.cfg.evaders])
    # below both panels: inside the left one it hid the curves
    fig.legend(*axes[0][0].get_legend_handles_labels(), loc="upper center", ncol=3, fontsize=6,
               bbox_to_anchor=(0.5, -0.07))
    return fig


@figure("tables/filtering.csv")
def zero_shot(run):
    """Experiment 3 (one evader, N = particles): each filter's Sinkhorn divergence on the
    held-in dynamics (the GDE's training beliefs) and on held-out evader dynamics never seen
    in training. Bars: mean over seeds, whiskers 95% CI."""
    table = tables.read(run.input("filtering.csv"))
    dyns = [run.cfg.held_in, *run.cfg.held_out]
    cond = dict(evaders=1, particles=run.cfg.particles)
    filters = _present(table, dynamics=run.cfg.held_in, **cond)
    fig, axes = plotting.subplots(1, 1, width=6.0, height=3.0)
    ax = axes[0][0]
    width = 0.8 / len(dyns)
    for j, dyn in enumerate(dyns):
        means, halves = [], []
        for filt in filters:
            m, h = mean_ci(tables.per_seed(table, "sinkhorn", filter=filt, dynamics=dyn, **cond))
            means.append(m), halves.append(h)
        label = f"{dyn} ({'held-in' if dyn == run.cfg.held_in else 'held-out'})"
        ax.bar(np.arange(len(filters)) + (j - (len(dyns) - 1) / 2) * width, means, width,
               yerr=halves, label=label)
    ax.set_xticks(np.arange(len(filters)), [STYLE[f][0] for f in filters], rotation=30,
                  ha="right", fontsize=7)
    ax.set(ylabel="Sinkhorn divergence", yscale="log", title="zero-shot dynamics, d = 2")
    ax.legend(fontsize=7)
    return fig


@figure("tables/filtering.csv")
def error_vs_n(run):
    """Experiment 4 (held-in dynamics, one evader): Sinkhorn divergence against the number of
    particles N (left) and the process's CPU seconds per filter step and episode, measured on a
    compiled, batched call after a warm-up call (right; CPU time, so machine load does not move
    it). Bands: 95% CI over
    seeds (on the log scale)."""
    table = tables.read(run.input("filtering.csv"))
    cond = dict(evaders=1, dynamics=run.cfg.held_in)
    fig, axes = plotting.subplots(1, 2, width=3.8, height=3.0, gridspec_kw={"wspace": 0.35})
    _lines(axes[0][0], table, "sinkhorn", "particles", _present(table, **cond), **cond)
    axes[0][0].set(xlabel="particles N", ylabel="Sinkhorn divergence", xscale="log",
                   yscale="log")
    timed = [f for f in ("nbf", "pf", "pf_10n", "gaussian", "gmm") if f in
             _present(table, **cond)]
    _lines(axes[0][1], table, "cpu_seconds_per_step", "particles", timed, **cond)
    axes[0][1].set(xlabel="particles N", ylabel="CPU seconds per step", xscale="log",
                   yscale="log")
    for ax in axes[0]:
        ax.set_xticks(run.cfg.particle_grid)
        plotting.plain_log_ticks(ax.xaxis)
        ax.tick_params(axis="x", which="minor", labelbottom=False)
    # below both panels: inside the left one it hid the curves
    fig.legend(*axes[0][0].get_legend_handles_labels(), loc="upper center", ncol=3, fontsize=6,
               bbox_to_anchor=(0.5, -0.07))
    return fig


@figure("tables/training.csv")
def training_curves(run):
    """GDE training: negative log-likelihood of fresh samples of an exact belief given the
    embedding of a particle set of the same belief (nats, density on [0, 1]^d), per state
    dimension d. Bands: 95% CI over seeds."""
    table = tables.read(run.input("training.csv"))
    fig, axes = plotting.subplots(1, 1, width=4.0, height=3.0)
    for dim in tables.unique(table, "dim"):
        xs, ys = tables.pivot(table, "nll", by="step", dim=dim)
        plotting.line_with_ci(axes[0][0], xs, ys, label=f"d = {dim}")
    axes[0][0].set(xlabel="training step", ylabel="NLL per sample (nats)")
    axes[0][0].legend(fontsize=7)
    return fig


FIGURES = figures_by_name(tracking_over_time, error_vs_dim, zero_shot, error_vs_n,
                          training_curves)
