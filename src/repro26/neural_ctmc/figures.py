"""Figures (read the summary tables only), in the paper's order: one function per figure,
mean +- 95% CI over seeds; each docstring is the figure's caption."""

from __future__ import annotations

import textwrap

import numpy as np

from repro26.core import io, plotting, tables
from repro26.core.method import figure, figures_by_name
from repro26.core.stats import mean_ci
from repro26.neural_ctmc.solvers import ALL_SAMPLERS
from repro26.neural_ctmc.model import METHODS
from repro26.neural_ctmc.solvers import SAMPLERS

LABELS = {"neural_ctmc": "Neural CTMC", "gidd": "GIDD (uniform)", "mdlm": "MDLM (masked)",
          "sedd": "SEDD (uniform)"}
COLORS = {"neural_ctmc": "C3", "gidd": "C0", "mdlm": "C2", "sedd": "C1"}


def metric_by_seed(table: dict, corpus: str | None, method: str, sampler: str,
                   metric: str) -> tuple[np.ndarray, np.ndarray]:
    """``(steps, values[seed, step])`` of ``metric`` for one method and sampler (``corpus``
    None: the synthetic table, which has no corpus column)."""
    where = {} if corpus is None else {"corpus": corpus}
    return tables.pivot(table, "value", by="steps", method=method, sampler=sampler,
                        metric=metric, **where)


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


SAMPLER_STYLE = {"ancestral": ("-", "o"), "tau": ("-.", "s"), "euler": (":", "^")}
FLOOR_COLORS = {"uniform/tau": "0.55", "uniform/euler": "0.35", "uniform/ancestral": "0.15",
                "mask/ancestral": "0.0"}


def _synthetic_value(table: dict, method: str, metric: str) -> float:
    return float(table["value"][tables.where(table, method=method, metric=metric)][0])


@figure("tables/synthetic.csv")
def synthetic_kl_vs_steps(run):
    """Synthetic study (random HMM, V = 4, L = 6: all 4,096 sequences enumerated, so the
    output law q_N of every sampler is exact, no sampling noise). Left: KL(q_N || p) in nats per
    sequence against the number of sampling steps N, one line per method (colour) x sampler
    (line style: ancestral solid, tau-leaping dash-dot, Euler dotted), mean and 95% CI over
    seeds; grey dashed: each sampler's exact-rate floor (the sampler run on the true reverse
    rates / posteriors of p); grey dash-dotted: the trivial independent-positions law. KL is shown as
    the geometric mean over seeds with the t-interval of log KL. Right: entropy H(q_N) with the
    data's H(p) dotted (a collapsed sampler has low KL(q||p) but low entropy)."""
    table = tables.read(run.input("synthetic.csv"))
    fig, axes = plotting.subplots(1, 2, width=4.0, height=3.6)
    for col, metric in enumerate(("kl_qp", "entropy")):
        ax = axes[0, col]
        for method in METHODS:
            for sampler in ALL_SAMPLERS[method]:
                xs, y = metric_by_seed(table, None, method, sampler, metric)
                ls, marker = SAMPLER_STYLE[sampler]
                label = f"{LABELS[method].split(' ')[0]} [{sampler}]"
                if metric == "kl_qp":  # geometric mean, t-interval of log KL (KL > 0)
                    m, half = mean_ci(np.log(np.maximum(y, 1e-12)))
                    ax.plot(xs, np.exp(m), color=COLORS[method], linestyle=ls, marker=marker,
                            markersize=3, label=label)
                    ax.fill_between(xs, np.exp(m - half), np.exp(m + half), color=COLORS[method],
                                    alpha=0.12, linewidth=0)
                else:
                    plotting.line_with_ci(ax, xs, y, label=label, color=COLORS[method],
                                          linestyle=ls, marker=marker, markersize=3)
        for name, color in FLOOR_COLORS.items():
            noise, sampler = name.split("/")
            xs, y = metric_by_seed(table, None, f"exact_{noise}", sampler, metric)
            ax.plot(xs, y[0], color=color, linestyle="--", marker=SAMPLER_STYLE[sampler][1],
                    markersize=3, markerfacecolor="none", label=f"floor: {noise} [{sampler}]")
        if metric == "kl_qp":
            ax.axhline(_synthetic_value(table, "independent", "kl_qp"), color="0.4",
                       linestyle="-.", label="independent positions")
            ax.set_yscale("log")
            ax.set_ylabel("KL(q_N || p)  (nats / sequence)")
            ax.set_title("exact output law vs data")
        else:
            ax.axhline(_synthetic_value(table, "data", "entropy"), color="k", linestyle=":",
                       label="H(p)")
            ax.set_ylabel("H(q_N)  (nats / sequence)")
            ax.set_title("entropy of the output law")
        ax.set_xscale("log", base=2)
        steps = sorted(set(int(n) for n in xs))
        ax.set_xticks(steps, [str(n) for n in steps])
        ax.set_xlabel("sampling steps N")
    handles = {}
    for ax in axes[0]:
        handles.update(zip(*reversed(ax.get_legend_handles_labels())))
    axes[0, 1].legend(handles.values(), handles.keys(), fontsize=6, loc="upper left",
                      bbox_to_anchor=(1.02, 1.0))
    return fig


@figure("tables/synthetic.csv", "tables/variance.csv")
def synthetic_bounds_and_variance(run):
    """Synthetic study. Left: each method's NLL bound E_p[bound(x)] (nats per sequence; bars:
    mean and 95% CI over seeds, dots: seeds) after training and at initialisation, against the
    data's entropy H(p) (dotted; every bound must lie above it) and L log V (dashed: the bound of
    the uniform law, where every method starts, Neural CTMC's exit-rate head included); the
    bound is estimated with ``bound_draws`` stratified (t, x_t) draws per sequence, and at
    `small` most of its seed-to-seed spread is that estimator's noise. Right:
    per-draw standard deviation of the bound estimator (nats per sequence, within a sequence)
    with 1 and with K stratified (t, x_t) draws per sequence, per method (log scale)."""
    table = tables.read(run.input("synthetic.csv"))
    var = tables.read(run.input("variance.csv"))
    fig, axes = plotting.subplots(1, 2, width=4.2, height=3.2)
    ax = axes[0, 0]
    for i, method in enumerate(METHODS):
        for k, (metric, hatch) in enumerate((("nll_bound", ""), ("init_bound", "//"))):
            vals = tables.per_seed(table, "value", method=method, metric=metric)
            m, half = mean_ci(vals)
            ax.bar(i + 0.4 * k - 0.2, m, width=0.38, yerr=half, color=COLORS[method], hatch=hatch,
                   alpha=1.0 if k == 0 else 0.5, label=None if i else
                   ("trained" if k == 0 else "at initialisation"))
            ax.plot(np.full(vals.size, i + 0.4 * k - 0.2), vals, "k.", markersize=3)
    ax.axhline(_synthetic_value(table, "data", "entropy"), color="k", linestyle=":", label="H(p)")
    ax.axhline(_synthetic_value(table, "data", "log_states"), color="k", linestyle="--",
               label="L log V")
    ax.set_xticks(range(len(METHODS)), [LABELS[m].split(" ")[0] for m in METHODS], fontsize=7)
    ax.set_ylabel("NLL bound (nats / sequence)")
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


FIGURES = figures_by_name(synthetic_kl_vs_steps, synthetic_bounds_and_variance, gen_ppl_vs_steps,
                          training_curves, samples)
