"""Figures (read the summary tables only), in the paper's order: one function per figure,
mean +- 95% CI over seeds; each docstring is the figure's caption."""

from __future__ import annotations

import textwrap

import numpy as np

from repro26.core import io, plotting, tables
from repro26.core.method import figure, figures_by_name
from repro26.core.stats import mean_ci
from repro26.neural_ctmc.names import METHODS
from repro26.neural_ctmc.names import SAMPLERS

LABELS = {"neural_ctmc": "Neural CTMC", "gidd": "GIDD (uniform)", "mdlm": "MDLM (masked)",
          "sedd": "SEDD (uniform)"}
COLORS = {"neural_ctmc": "C3", "gidd": "C0", "mdlm": "C2", "sedd": "C1"}
#: the abstract's range of sampling steps ("across 16--128 sampling steps")
CLAIM_STEPS = (16, 128)
#: each method's own sampler (the first of ``SAMPLERS``) and its noise
OWN = {m: SAMPLERS[m][0] for m in METHODS}
NOISE = {m: "mask" if m == "mdlm" else "uniform" for m in METHODS}


def metric_by_seed(table: dict, corpus: str | None, method: str, sampler: str,
                   metric: str) -> tuple[np.ndarray, np.ndarray]:
    """``(steps, values[seed, step])`` of ``metric`` for one method and sampler (``corpus``
    None: the synthetic table, which has no corpus column)."""
    where = {} if corpus is None else {"corpus": corpus}
    return tables.pivot(table, "value", by="steps", method=method, sampler=sampler,
                        metric=metric, **where)


def floor(table: dict, noise: str, sampler: str, metric: str = "kl_qp") -> np.ndarray:
    """``metric`` of the exact-rate sampler per step (one value per N)."""
    return metric_by_seed(table, None, f"exact_{noise}", sampler, metric)[1][0]


def excess(table: dict, method: str, sampler: str) -> tuple[list[int], np.ndarray]:
    """``(steps, KL[seed, N] - floor[N])``: what the parameterisation loses above the exact-rate
    floor of the sampler it is read with."""
    xs, kl = metric_by_seed(table, None, method, sampler, "kl_qp")
    return [int(n) for n in xs], kl - floor(table, NOISE[method], sampler)[None, :]


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
    repetitive text; report both). Dotted: held-out text; grey dashed: the trivial sampler
    (i.i.d. tokens from the unigram frequencies). Mean and 95% CI over seeds."""
    table = tables.read(run.input("eval.csv"))
    ref = tables.read(run.input("reference.csv"))
    fig, axes = plotting.subplots(1, 2, width=3.8, height=3.0)
    _metric_panel(axes[0, 0], table, "text", "gen_ppl", reference(ref, "text", "scorer_val_ppl"),
                  "held-out text", "generative perplexity (AR scorer)", "text: generative perplexity")
    axes[0, 0].set_yscale("log")
    axes[0, 0].axhline(reference(ref, "text", "unigram_gen_ppl"), color="0.5", linestyle="--",
                       label="i.i.d. unigram (trivial)")
    _metric_panel(axes[0, 1], table, "text", "entropy",
                  reference(ref, "text", "data_unigram_entropy"), "held-out text",
                  "unigram entropy per sample (nats)", "text: sample entropy")
    axes[0, 0].legend(fontsize=6)
    return fig


def _synthetic_value(table: dict, method: str, metric: str) -> float:
    return float(table["value"][tables.where(table, method=method, metric=metric)][0])


def _log_mean_band(ax, xs, y, **style):
    """Geometric mean over seeds and the t-interval of ``log y`` (for positive ``y``)."""
    m, half = mean_ci(np.log(np.maximum(y, 1e-12)))
    ax.plot(xs, np.exp(m), marker="o", markersize=3, **style)
    ax.fill_between(xs, np.exp(m - half), np.exp(m + half), color=style.get("color"),
                    alpha=0.12, linewidth=0)


@figure("tables/synthetic.csv")
def synthetic_kl_vs_steps(run):
    """Synthetic study (random HMM, V = 4, L = 6: all 4,096 sequences enumerated, so the
    output law q_N of every sampler is exact, no sampling noise); each method with its own
    sampler (Neural CTMC, SEDD: tau-leaping; GIDD: ancestral plug-in posterior; MDLM: ancestral
    unmasking). Left: KL(q_N || p) in nats per sequence against the number of sampling steps N
    (solid; geometric mean and t-interval of log KL over seeds) and the exact-rate floor of the
    same sampler (dashed: the sampler run on the true reverse rates / posteriors of p; grey
    dashed: the floor of the sequence-level first-jump sampler, one jump per step); grey
    dash-dotted: the trivial independent-positions law. Middle: the claims' quantity, what each
    parameterisation loses above its own sampler's floor (KL - floor, mean and 95% CI over
    seeds), on the abstract's range 16-128 steps (shaded) and fewer; dotted: GIDD and SEDD read
    with tau-leaping (like samplers, against the tau-leaping floor); dashed with crosses: the
    same run after half its training steps (the plateau check: a model still falling between
    the two decides nothing). Right: entropy H(q_N)
    with the data's H(p) dotted (a collapsed sampler has low KL(q||p) but low entropy)."""
    table = tables.read(run.input("synthetic.csv"))
    fig, axes = plotting.subplots(1, 3, width=3.6, height=3.2, layout="constrained")
    for method in METHODS:
        sampler, color = OWN[method], COLORS[method]
        label = f"{LABELS[method].split(' ')[0]} [{sampler}]"
        xs, kl = metric_by_seed(table, None, method, sampler, "kl_qp")
        _log_mean_band(axes[0, 0], xs, kl, color=color, label=label)
        axes[0, 0].plot(xs, floor(table, NOISE[method], sampler), color=color, linestyle="--",
                        linewidth=0.9, label=f"floor [{NOISE[method]}, {sampler}]")
        xs, ex = excess(table, method, sampler)
        plotting.line_with_ci(axes[0, 1], xs, ex, label=label, color=color, marker="o",
                              markersize=3)
        xs_h, kl_h = metric_by_seed(table, None, method, sampler, "kl_qp_halfway")
        if len(xs_h):  # the plateau check: the same run after half its training steps
            fl = dict(zip((int(n) for n in metric_by_seed(
                table, None, f"exact_{NOISE[method]}", sampler, "kl_qp")[0]),
                floor(table, NOISE[method], sampler)))
            plotting.line_with_ci(axes[0, 1], xs_h, kl_h - np.array([fl[int(n)] for n in xs_h]),
                                  label=f"{label.split(' ')[0]}, half the steps", color=color,
                                  linestyle="--", linewidth=0.8, marker="x", markersize=3)
        if method in ("gidd", "sedd") and sampler != "tau":
            xs, ex = excess(table, method, "tau")
            plotting.line_with_ci(axes[0, 1], xs, ex, label=f"{label.split(' ')[0]} [tau]",
                                  color=color, linestyle=":", marker="s", markersize=2)
        xs, ent = metric_by_seed(table, None, method, sampler, "entropy")
        plotting.line_with_ci(axes[0, 2], xs, ent, label=label, color=color, marker="o",
                              markersize=3)
    xs_f = metric_by_seed(table, None, "exact_uniform", "jump", "kl_qp")[0]
    axes[0, 0].plot(xs_f, floor(table, "uniform", "jump"), color="0.5", linestyle="--",
                    linewidth=0.9, label="floor [uniform, jump]")
    axes[0, 0].axhline(_synthetic_value(table, "independent", "kl_qp"), color="0.4",
                       linestyle="-.", label="independent positions")
    axes[0, 0].set_yscale("log")
    axes[0, 0].set_ylabel("KL(q_N || p)  (nats / seq.)")
    axes[0, 0].set_title("exact output law vs data", fontsize=9)
    axes[0, 1].axhline(0.0, color="k", linewidth=0.6)
    axes[0, 1].axvspan(*CLAIM_STEPS, color="0.9", zorder=0, label="claims' range")
    axes[0, 1].set_ylabel("KL - own floor  (nats / seq.)")
    axes[0, 1].set_title("loss above the sampler's floor", fontsize=9)
    axes[0, 2].axhline(_synthetic_value(table, "data", "entropy"), color="k", linestyle=":",
                       label="H(p)")
    axes[0, 2].set_ylabel("H(q_N)  (nats / seq.)")
    axes[0, 2].set_title("entropy of the output law", fontsize=9)
    steps = sorted(set(int(n) for n in xs))
    for ax in axes[0]:
        ax.set_xscale("log", base=2)
        ax.set_xticks(steps, [str(n) for n in steps])
        ax.set_xlabel("sampling steps N")
        ax.legend(fontsize=5)
    return fig


@figure("tables/synthetic.csv", "tables/variance.csv")
def synthetic_bounds_and_variance(run):
    """Synthetic study. Left: Monte Carlo estimate of each method's NLL bound E_p[bound(x)]
    (nats per sequence; bars: mean over seeds; dots: seeds, each with the 95% interval of its
    estimate from ``bound_sequences`` sequences drawn from p x ``bound_draws`` stratified
    (t, x_t) draws) after training and at initialisation, against the data's entropy H(p)
    (dotted; every bound lies above it, each estimate within its interval) and L log V (dashed:
    the bound of the uniform law, where every method starts, Neural CTMC's exit-rate head
    included). Right:
    per-draw standard deviation of the bound estimator (nats per sequence, within a sequence)
    with 1 and with K stratified (t, x_t) draws per sequence, per method (log scale)."""
    table = tables.read(run.input("synthetic.csv"))
    var = tables.read(run.input("variance.csv"))
    fig, axes = plotting.subplots(1, 2, width=4.2, height=3.2)
    ax = axes[0, 0]
    for i, method in enumerate(METHODS):
        for k, (metric, hatch) in enumerate((("nll_bound", ""), ("init_bound", "//"))):
            vals = tables.per_seed(table, "value", method=method, metric=metric)
            halves = tables.per_seed(table, "value", method=method, metric=f"{metric}_half")
            x = i + 0.4 * k - 0.2
            ax.bar(x, vals.mean(), width=0.38, color=COLORS[method], hatch=hatch,
                   alpha=1.0 if k == 0 else 0.5, label=None if i else
                   ("trained" if k == 0 else "at initialisation"))
            ax.errorbar(x + np.linspace(-0.1, 0.1, vals.size), vals, yerr=halves, fmt="k.",
                        markersize=3, elinewidth=0.8)
    ax.axhline(_synthetic_value(table, "data", "entropy"), color="k", linestyle=":", label="H(p)")
    ax.axhline(_synthetic_value(table, "data", "log_states"), color="k", linestyle="--",
               label="L log V")
    ax.set_xticks(range(len(METHODS)), [LABELS[m].split(" ")[0] for m in METHODS], fontsize=7)
    ax.set_ylim(_synthetic_value(table, "data", "entropy") - 0.5,
                _synthetic_value(table, "data", "log_states") + 0.5)
    ax.set_ylabel("NLL bound estimate (nats / sequence)")
    ax.set_title("exact-data NLL bound")
    ax.legend(fontsize=6)
    ax = axes[0, 1]
    draws = sorted(set(int(d) for d in var["time_draws"]))
    for i, method in enumerate(METHODS):
        for k, d in enumerate(draws):
            vals = tables.per_seed(var, "sd_nats_per_sequence", method=method, time_draws=d)
            ax.bar(i + 0.4 * k - 0.2, vals.mean(), width=0.38, color=COLORS[method],
                   alpha=1.0 if k == 0 else 0.5, hatch="" if k == 0 else "//",
                   label=None if i else f"{d} draw{'s' if d > 1 else ''} per sequence")
            ax.plot(np.full(vals.size, i + 0.4 * k - 0.2), vals, "k.", markersize=3)
    ax.set_yscale("log")
    plotting.plain_log_ticks(ax.yaxis)
    ax.set_xticks(range(len(METHODS)), [LABELS[m].split(" ")[0] for m in METHODS], fontsize=7)
    ax.set_ylabel("estimator sd (nats / sequence)")
    ax.set_title("estimator spread")
    ax.legend(fontsize=6)
    return fig


@figure("tables/synthetic_training.csv", "tables/curves.csv", "tables/synthetic.csv")
def training_curves(run):
    """Training NLL bound (moving average) against training tokens for the four methods on the
    synthetic language (left, nats per sequence; dotted: its entropy H(p)) and on the text
    corpus (right, nats per token). All four objectives are the same path-space ELBO under
    different parameterisations, so the curves are directly comparable; every method starts at
    the uniform law's bound (L log V). Mean and 95% CI over seeds."""
    curves = tables.concat([tables.read(run.input("synthetic_training.csv")),
                            tables.read(run.input("curves.csv"))])
    synth = tables.read(run.input("synthetic.csv"))
    fig, axes = plotting.subplots(1, 2, width=3.8, height=3.0)
    for ax, corpus in zip(axes[0], ("synthetic", "text")):
        for method in METHODS:
            if not tables.where(curves, corpus=corpus, method=method).any():
                continue
            tokens, y = tables.pivot(curves, "bound", by="tokens", corpus=corpus, method=method)
            plotting.line_with_ci(ax, tokens, y, label=LABELS[method], color=COLORS[method])
        h = _synthetic_value(synth, "data", "entropy") if corpus == "synthetic" else None
        if h is not None:
            ax.axhline(h, color="k", linestyle=":", label="H(p)")
        sel = curves["corpus"] == corpus
        if sel.any():
            lo = float(np.min(curves["bound"][sel]))
            hi = float(np.percentile(curves["bound"][sel], 90))
            ax.set_ylim(min(lo, h if h is not None else lo) - 0.2, hi + 0.3)
        ax.ticklabel_format(axis="x", style="sci", scilimits=(0, 0))
        ax.set_xlabel("training tokens")
        ax.set_ylabel("training NLL bound (nats / " + ("sequence)" if h is not None else "token)"))
        ax.set_title(f"{corpus}: training (equal tokens)", fontsize=9)
        ax.legend(fontsize=6)
    return fig


@figure(inputs_from=lambda cfg: [f"eval/text/{m}.samples.json" for m in METHODS])
def samples(run):
    """Text samples (first seed) of each method at the largest number of sampling steps, with
    each method's own sampler. Character-level model on the King James Bible. Samplers of a seed
    share their random numbers (same initial noise and uniforms), so two similar uniform-noise
    models (here Neural CTMC and SEDD, both tau-leaping) can produce near-identical strings."""
    rows, seed = [], None
    for method in METHODS:
        path = next((p for p in run.inputs if p.name == f"{method}.samples.json"), None)
        if path is None:
            continue
        by_seed = io.read_json(path)["samples"]
        seed = min(by_seed, key=int)
        shown = by_seed[seed]
        keys = [k for k in shown if k.startswith(SAMPLERS[method][0] + "/")]
        key = max(keys, key=lambda k: int(k.split("/")[1]))
        for s in shown[key][:2]:
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


FIGURES = figures_by_name(synthetic_kl_vs_steps, synthetic_bounds_and_variance, gen_ppl_vs_steps,
                          training_curves, samples)
