"""Figures (read the summary tables only): one function per figure, mean +- 95% CI over seeds."""

from __future__ import annotations

import textwrap

import numpy as np

from repro26.core import io, plotting
from repro26.core.stats import mean_ci
from repro26.neural_ctmc.model import METHODS
from repro26.neural_ctmc.solvers import SAMPLERS

LABELS = {"neural_ctmc": "Neural CTMC", "gidd": "GIDD (uniform)", "mdlm": "MDLM (masked)",
          "sedd": "SEDD (uniform)"}
COLORS = {"neural_ctmc": "C3", "gidd": "C0", "mdlm": "C2", "sedd": "C1"}


def metric_by_seed(table: dict, corpus: str, method: str, sampler: str, metric: str,
                   steps: list[int]) -> np.ndarray:
    """``(n_seeds, n_steps)`` values of ``metric`` for one method and sampler."""
    sel = ((table["corpus"] == corpus) & (table["method"] == method)
           & (table["sampler"] == sampler) & (table["metric"] == metric))
    seeds = sorted(set(table["seed"][sel].tolist()))
    out = np.full((len(seeds), len(steps)), np.nan)
    for i, s in enumerate(seeds):
        for j, n in enumerate(steps):
            hit = sel & (table["seed"] == s) & (table["steps"] == n)
            if hit.any():
                out[i, j] = float(table["value"][hit][0])
    return out


def reference(table: dict, corpus: str, quantity: str) -> float | None:
    hit = (table["corpus"] == corpus) & (table["quantity"] == quantity)
    return float(table["value"][hit][0]) if hit.any() else None


def _steps(table: dict) -> list[int]:
    return sorted(int(s) for s in set(table["steps"].tolist()) if int(s) > 0)


def _sampler_lines(ax, table, corpus, metric, steps):
    for method in METHODS:
        for k, sampler in enumerate(SAMPLERS[method]):
            y = metric_by_seed(table, corpus, method, sampler, metric, steps)
            if y.size == 0 or np.isnan(y).all():
                continue
            label = LABELS[method] + ("" if k == 0 else f" [{sampler}]")
            plotting.line_with_ci(ax, steps, y, label=label, color=COLORS[method],
                                  linestyle="-" if k == 0 else "--", marker="o", markersize=3)
    ax.set_xscale("log", base=2)
    ax.set_xticks(steps, [str(s) for s in steps])
    ax.set_xlabel("sampling steps")


def _metric_panel(ax, table, corpus: str, metric: str, steps, ref_value, ref_label: str,
                  ylabel: str, title: str) -> None:
    """One metric vs sampling steps for every method, with the data's value as a dotted line."""
    _sampler_lines(ax, table, corpus, metric, steps)
    if ref_value is not None:
        ax.axhline(ref_value, color="k", linestyle=":", label=ref_label)
    ax.set_ylabel(ylabel)
    ax.set_title(title)


def fig_gen_ppl(run) -> None:
    """Generative perplexity (AR scorer) and sample unigram entropy vs sampling steps (text)."""
    table = io.read_table(run.input("eval.csv"))
    ref = io.read_table(run.input("reference.csv"))
    steps = _steps(table)
    fig, axes = plotting.subplots(1, 2, width=3.8, height=3.0)
    _metric_panel(axes[0, 0], table, "text", "gen_ppl", steps, reference(ref, "text", "scorer_val_ppl"),
                  "held-out text", "generative perplexity (AR scorer)", "text: generative perplexity")
    axes[0, 0].set_yscale("log")
    _metric_panel(axes[0, 1], table, "text", "entropy", steps,
                  reference(ref, "text", "data_unigram_entropy"), "held-out text",
                  "unigram entropy per sample (nats)", "text: sample entropy")
    axes[0, 0].legend(fontsize=6)
    plotting.save(fig, run.out)


def fig_synthetic_nll(run) -> None:
    """Exact NLL of samples under the true HMM vs steps, and each method's validation bound."""
    table = io.read_table(run.input("eval.csv"))
    ref = io.read_table(run.input("reference.csv"))
    steps = _steps(table)
    fig, axes = plotting.subplots(1, 2, width=3.8, height=3.0)
    h = reference(ref, "hmm", "true_entropy_per_token")
    ax = axes[0, 0]
    _metric_panel(ax, table, "hmm", "exact_nll", steps, h, "true entropy",
                  "exact sample NLL (nats/token)", "synthetic HMM: sample NLL")
    ax.legend(fontsize=6)
    ax = axes[0, 1]
    for i, method in enumerate(METHODS):
        sel = (table["corpus"] == "hmm") & (table["method"] == method) & (table["metric"] == "elbo_nll")
        vals = table["value"][sel].astype(float)
        if vals.size:
            m, half = mean_ci(vals)
            ax.bar(i, m, yerr=half, color=COLORS[method])
            ax.plot(np.full(vals.size, i), vals, "k.", markersize=3)
    if h is not None:
        ax.axhline(h, color="k", linestyle=":", label="true entropy")
        ax.legend(fontsize=6)
    ax.set_xticks(range(len(METHODS)), [LABELS[m].split(" ")[0] for m in METHODS])
    ax.set_ylabel("validation NLL bound (nats/token)")
    ax.set_title("synthetic HMM: ELBO bound")
    plotting.save(fig, run.out)


def fig_training_curves(run) -> None:
    """Training bound (nats/token, moving average) against training tokens, per corpus."""
    curves = io.read_table(run.input("curves.csv"))
    ref = io.read_table(run.input("reference.csv"))
    fig, axes = plotting.subplots(1, 2, width=3.8, height=3.0)
    for ax, corpus in zip(axes[0], ("hmm", "text")):
        for method in METHODS:
            sel = (curves["corpus"] == corpus) & (curves["method"] == method)
            if not sel.any():
                continue
            seeds = sorted(set(curves["seed"][sel].tolist()))
            tokens = curves["tokens"][sel & (curves["seed"] == seeds[0])]
            y = np.stack([curves["bound"][sel & (curves["seed"] == s)] for s in seeds])
            plotting.line_with_ci(ax, tokens, y, label=LABELS[method], color=COLORS[method])
        h = reference(ref, corpus, "true_entropy_per_token")
        if h is not None:
            ax.axhline(h, color="k", linestyle=":", label="true entropy")
        sel = curves["corpus"] == corpus
        if sel.any():
            lo = float(np.min(curves["bound"][sel]))
            hi = float(np.percentile(curves["bound"][sel], 90))
            ax.set_ylim(min(lo, h if h is not None else lo) - 0.2, hi + 0.3)
        ax.ticklabel_format(axis="x", style="sci", scilimits=(0, 0))
        ax.set_xlabel("training tokens")
        ax.set_ylabel("training NLL bound (nats/token)")
        ax.set_title(f"{corpus}: training curves (equal tokens)")
        ax.legend(fontsize=6)
    plotting.save(fig, run.out)


def fig_samples(run) -> None:
    """Text samples of every method (first seed, the largest step count, its own sampler)."""
    rows, seed = [], None
    for method in METHODS:
        path = next((p for p in run.inputs if p.parent.name == method), None)
        if path is None:
            continue
        data = io.read_json(path)
        seed = data["seed"]
        keys = [k for k in data["samples"] if k.startswith(SAMPLERS[method][0] + "/")]
        key = max(keys, key=lambda k: int(k.split("/")[1]))
        for s in data["samples"][key][:2]:
            rows.append((f"{LABELS[method]}\n{key.replace('/', ', ')} steps", s))
    fig, axes = plotting.subplots(1, 1, width=7.5, height=0.55 * len(rows) + 0.4)
    ax = axes[0, 0]
    ax.axis("off")
    for i, (label, text) in enumerate(rows):
        y = 1.0 - (i + 0.5) / len(rows)
        ax.text(0.0, y, label, fontsize=7, va="center", ha="left", weight="bold",
                transform=ax.transAxes)
        ax.text(0.25, y, "\n".join(textwrap.wrap(repr(text)[1:-1], 70)), fontsize=7,
                va="center", ha="left", family="monospace", transform=ax.transAxes)
    ax.set_title(f"text samples (character level, seed {seed})")
    plotting.save(fig, run.out)
