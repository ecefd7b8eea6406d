"""Figures (read the summary tables only), in the paper's order: one function per figure,
mean +- 95% CI over seeds; each docstring is the figure's caption."""

from __future__ import annotations

import textwrap

import numpy as np

from repro26.core import io, plotting, tables
from repro26.core.method import figure, figures_by_name
from repro26.core.stats import mean_ci
from repro26.neural_ctmc.model import METHODS
from repro26.neural_ctmc.solvers import SAMPLERS

LABELS = {"neural_ctmc": "Neural CTMC", "gidd": "GIDD (uniform)", "mdlm": "MDLM (masked)",
          "sedd": "SEDD (uniform)"}
COLORS = {"neural_ctmc": "C3", "gidd": "C0", "mdlm": "C2", "sedd": "C1"}


def metric_by_seed(table: dict, corpus: str, method: str, sampler: str,
                   metric: str) -> tuple[np.ndarray, np.ndarray]:
    """``(steps, values[seed, step])`` of ``metric`` for one method and sampler."""
    return tables.pivot(table, "value", by="steps", corpus=corpus, method=method,
                        sampler=sampler, metric=metric)


def reference(table: dict, corpus: str, quantity: str) -> float | None:
    hit = tables.where(table, corpus=corpus, quantity=quantity)
    return float(table["value"][hit][0]) if hit.any() else None


def _steps(table: dict) -> list[int]:
    return sorted(int(s) for s in set(table["steps"].tolist()) if int(s) > 0)


def _sampler_lines(ax, table, corpus, metric):
    steps = _steps(table)
    for method in METHODS:
        for k, sampler in enumerate(SAMPLERS[method]):
            xs, y = metric_by_seed(table, corpus, method, sampler, metric)
            if y.size == 0 or np.isnan(y).all():
                continue
            label = LABELS[method] + ("" if k == 0 else f" [{sampler}]")
            plotting.line_with_ci(ax, xs, y, label=label, color=COLORS[method],
                                  linestyle="-" if k == 0 else "--", marker="o", markersize=3)
    ax.set_xscale("log", base=2)
    ax.set_xticks(steps, [str(s) for s in steps])
    ax.set_xlabel("sampling steps")


def _metric_panel(ax, table, corpus: str, metric: str, ref_value, ref_label: str,
                  ylabel: str, title: str) -> None:
    """One metric vs sampling steps for every method, with the data's value as a dotted line."""
    _sampler_lines(ax, table, corpus, metric)
    if ref_value is not None:
        ax.axhline(ref_value, color="k", linestyle=":", label=ref_label)
    ax.set_ylabel(ylabel)
    ax.set_title(title)


@figure("tables/eval.csv", "tables/reference.csv")
def gen_ppl_vs_steps(run):
    """Neural CTMC vs GIDD, MDLM and SEDD on the real-text stand-in (King James Bible, character
    level). Left: generative perplexity of samples (lower is better) under an autoregressive
    transformer trained on the same corpus (the scaled stand-in for Gemma2-9B), against the
    number of sampling steps; solid lines use each method's own sampler (Neural CTMC and SEDD:
    tau-leaping; GIDD, MDLM: ancestral), dashed lines the alternatives (Neural CTMC Euler, GIDD
    tau-leaping). Right: mean unigram entropy of a sample (generative perplexity rewards
    repetitive text; report both). Dotted: held-out text. Mean and 95% CI over seeds."""
    table = tables.read(run.input("eval.csv"))
    ref = tables.read(run.input("reference.csv"))
    fig, axes = plotting.subplots(1, 2, width=3.8, height=3.0)
    _metric_panel(axes[0, 0], table, "text", "gen_ppl", reference(ref, "text", "scorer_val_ppl"),
                  "held-out text", "generative perplexity (AR scorer)", "text: generative perplexity")
    axes[0, 0].set_yscale("log")
    _metric_panel(axes[0, 1], table, "text", "entropy",
                  reference(ref, "text", "data_unigram_entropy"), "held-out text",
                  "unigram entropy per sample (nats)", "text: sample entropy")
    axes[0, 0].legend(fontsize=6)
    return fig


@figure("tables/eval.csv", "tables/reference.csv")
def synthetic_nll_vs_steps(run):
    """Synthetic language (random HMM with exact likelihood). Left: exact per-token NLL of
    generated samples under the true HMM against sampling steps; the dotted line is the data's
    true entropy per token (a sampler that reproduces the data distribution lands on it). Right:
    each method's validation ELBO bound (nats/token; dots are seeds), which must lie above the
    true entropy. Mean and 95% CI over seeds."""
    table = tables.read(run.input("eval.csv"))
    ref = tables.read(run.input("reference.csv"))
    fig, axes = plotting.subplots(1, 2, width=3.8, height=3.0)
    h = reference(ref, "hmm", "true_entropy_per_token")
    ax = axes[0, 0]
    _metric_panel(ax, table, "hmm", "exact_nll", h, "true entropy",
                  "exact sample NLL (nats/token)", "synthetic HMM: sample NLL")
    ax.legend(fontsize=6)
    ax = axes[0, 1]
    for i, method in enumerate(METHODS):
        vals = tables.per_seed(table, "value", corpus="hmm", method=method, metric="elbo_nll")
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
    return fig


@figure("tables/curves.csv", "tables/reference.csv")
def training_curves(run):
    """Training NLL bound (nats/token, moving average) against training tokens for the four
    methods on the synthetic HMM language (left, dotted: its true entropy per token) and on the
    text corpus (right). All four objectives are the same path-space ELBO under different
    parameterisations, so the curves are directly comparable. Mean and 95% CI over seeds."""
    curves = tables.read(run.input("curves.csv"))
    ref = tables.read(run.input("reference.csv"))
    fig, axes = plotting.subplots(1, 2, width=3.8, height=3.0)
    for ax, corpus in zip(axes[0], ("hmm", "text")):
        for method in METHODS:
            if not tables.where(curves, corpus=corpus, method=method).any():
                continue
            tokens, y = tables.pivot(curves, "bound", by="tokens", corpus=corpus, method=method)
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
    return fig


@figure(inputs_from=lambda cfg: [f"eval/text/{m}/seed{cfg.seeds[0]}.samples.json"
                                 for m in METHODS])
def samples(run):
    """Text samples (first seed) of each method at the largest number of sampling steps, with
    each method's own sampler. Character-level model on the King James Bible. Samplers of a seed
    share their random numbers (same initial noise and uniforms), so two similar uniform-noise
    models (here Neural CTMC and SEDD, both tau-leaping) can produce near-identical strings."""
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
    return fig


FIGURES = figures_by_name(gen_ppl_vs_steps, training_curves, samples, synthetic_nll_vs_steps)
