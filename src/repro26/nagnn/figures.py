"""Figures of the nagnn experiments; each reads tables only, its docstring is its caption."""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import NullFormatter

from repro26.core import plotting, tables
from repro26.core.method import figure, figures_by_name
from repro26.core.stats import mean_ci

ORDER = ("nagnn", "tgn", "jodie", "gcn_gru", "edgebank", "common_neighbours", "pref_attachment",
         "ideal")
LABELS = {"ideal": "true law", "nagnn": "NAGNN", "tgn": "TGN-style", "jodie": "JODIE-style", "gcn_gru": "GCN-GRU",
          "edgebank": "EdgeBank", "common_neighbours": "common nbrs", "pref_attachment": "pref. att."}
COLORS = {m: f"C{i}" for i, m in enumerate(ORDER)}
HEURISTIC = ("edgebank", "common_neighbours", "pref_attachment", "ideal")


def _models(table, **cond):
    present = tables.unique(table, "model", **cond)
    return [m for m in ORDER if m in present]


def _bars(ax, table, value, ylabel, **cond):
    models = _models(table, **cond)
    for i, m in enumerate(models):
        vals = tables.per_seed(table, value, model=m, **cond)
        mean, half = mean_ci(vals)
        ax.bar(i, mean, yerr=half, color=COLORS[m], hatch="//" if m in HEURISTIC else None,
               edgecolor="white")
    ax.set_xticks(range(len(models)))
    ax.set_xticklabels([LABELS[m] for m in models], rotation=40, ha="right", fontsize=7)
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 1.05)  # every metric here lies in [0, 1]; a t-CI over few seeds may not


@figure("tables/metrics.csv")
def ap_by_model(run):
    """Average precision on the test snapshots per model (mean, 95% CI over seeds), by dataset
    (rows) and negative sampling (columns: random destination, historical edge seen before,
    inductive edge of the test period unseen in training). Hatched: heuristics and the true
    law (ideal row; trivial rows: EdgeBank, common neighbours). Snapshot models (NAGNN, GCN-GRU) and heuristics see all
    snapshots before the one predicted; event models also see its earlier events."""
    metrics = tables.read(run.input("metrics.csv"))
    datasets = tables.unique(metrics, "dataset")
    kinds = ("random", "historical", "inductive")
    fig, axes = plotting.subplots(len(datasets), 3, width=3.0, height=2.7, sharey="row")
    for r, ds in enumerate(datasets):
        for c, kind in enumerate(kinds):
            ax = axes[r, c]
            _bars(ax, metrics, "ap", "AP" if c == 0 else "", dataset=ds, negatives=kind)
            ax.axhline(0.5, color="k", lw=0.6, ls=":")
            ax.set_title(f"{ds}: {kind} negatives", fontsize=8)
    fig.suptitle("Link prediction AP (dotted: chance with 1:1 negatives)")
    fig.tight_layout()
    return fig


@figure("tables/metrics.csv")
def auroc_mrr(run):
    """AUROC (random negatives) and MRR (rank of the true destination among it and K random
    destinations) per model, mean and 95% CI over seeds, by dataset. Hatched: heuristics and the true law."""
    metrics = tables.read(run.input("metrics.csv"))
    datasets = tables.unique(metrics, "dataset")
    fig, axes = plotting.subplots(len(datasets), 2, width=3.4, height=2.7)
    for r, ds in enumerate(datasets):
        _bars(axes[r, 0], metrics, "auroc", "AUROC", dataset=ds, negatives="random")
        axes[r, 0].set_title(f"{ds}: AUROC", fontsize=8)
        _bars(axes[r, 1], metrics, "mrr", "MRR", dataset=ds, negatives="random")
        axes[r, 1].set_title(f"{ds}: MRR", fontsize=8)
    fig.tight_layout()
    return fig


@figure("tables/metrics.csv", "tables/speed.csv")
def speed_vs_accuracy(run):
    """AP (random negatives; mean and 95% CI over seeds) against throughput in events per CPU
    second, log scale, for training (left: one epoch over the training snapshots, forward and
    backward) and inference (right: the whole stream, each event and one negative scored).
    Throughput is per-process CPU time, median and interquartile range over interleaved rounds
    in one job (repro26.core.timing), compile excluded."""
    metrics = tables.read(run.input("metrics.csv"))
    speed = tables.read(run.input("speed.csv"))
    datasets = tables.unique(speed, "dataset")
    fig, axes = plotting.subplots(len(datasets), 2, width=3.6, height=2.9)
    for r, ds in enumerate(datasets):
        for c, (kind, what) in enumerate((("train", "training"), ("infer", "inference"))):
            ax = axes[r, c]
            for m in _models(speed, dataset=ds):
                ap = 100 * tables.per_seed(metrics, "ap", dataset=ds, model=m, negatives="random")
                row = tables.select(speed, dataset=ds, model=m, kind=kind)
                rate = float(row["events_per_cpu_s"][0])
                events = rate * float(row["cpu_s"][0])
                lo, hi = events / float(row["cpu_s_q75"][0]), events / float(row["cpu_s_q25"][0])
                ap_m, ap_h = mean_ci(ap)
                ax.errorbar(rate, ap_m, yerr=ap_h, xerr=[[rate - lo], [hi - rate]], fmt="o",
                            color=COLORS[m], label=LABELS[m])
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(NullFormatter())  # minor labels overlap on a short span
            ax.set_xlabel(f"{what} throughput (events / CPU s)")
            ax.set_ylabel("AP (points)")
            ax.set_title(f"{ds}: {what}", fontsize=8)
            if r == 0 and c == 0:
                ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


@figure("tables/loss.csv", "tables/training.csv")
def training_loss(run):
    """Training loss (binary cross-entropy of each training event against one random
    destination) per optimiser step (= epoch over the training snapshots), mean and 95% CI over
    seeds, by dataset; every model gets the same steps and schedule (linear warm-up, cosine
    decay, clipped gradients; the rate is the grey line, right axis). Legend: how many seeds
    reached the plateau rule (last tenth of the steps changed the mean loss by less than
    plateau_tol of the total drop, against the tenth before; shaded: the two windows)."""
    hist = tables.read(run.input("loss.csv"))
    fit = tables.read(run.input("training.csv"))
    datasets = tables.unique(hist, "dataset")
    fig, axes = plotting.subplots(1, len(datasets), width=3.6, height=2.8)
    for c, ds in enumerate(datasets):
        ax = axes[0, c]
        for m in _models(hist, dataset=ds):
            steps, loss = tables.pivot(hist, "loss", by="step", dataset=ds, model=m)
            flags = tables.per_seed(fit, "plateaued", dataset=ds, model=m)
            label = f"{LABELS[m]} (plateau {int(np.sum(flags))}/{len(flags)})"
            plotting.line_with_ci(ax, steps, loss, label=label, color=COLORS[m])
        n_steps = int(tables.per_seed(fit, "steps", dataset=ds)[0])
        w = int(tables.per_seed(fit, "window", dataset=ds)[0])
        ax.axvspan(n_steps - 2 * w, n_steps, color="0.9", zorder=0)
        ax.axvline(n_steps - w, color="0.6", lw=0.6)
        steps, lr = tables.pivot(hist, "lr", by="step", dataset=ds,
                                 model=_models(hist, dataset=ds)[0])
        rate_ax = ax.twinx()
        rate_ax.plot(steps, lr[0], color="0.5", lw=0.8)
        rate_ax.set_ylabel("learning rate", fontsize=7, color="0.5")
        rate_ax.tick_params(labelsize=6, colors="0.5")
        ax.set_xlabel("optimiser step (epoch)")
        ax.set_ylabel("BCE loss")
        ax.set_title(ds, fontsize=9)
        ax.legend(fontsize=6)
    fig.tight_layout()
    return fig


FIGURES = figures_by_name(ap_by_model, auroc_mrr, speed_vs_accuracy, training_loss)
