"""Figures of the poll experiments; each reads tables only, and its docstring is its caption."""

from __future__ import annotations

import numpy as np

from repro26.core import plotting, tables
from repro26.core.method import figure, figures_by_name
from repro26.core.stats import mean_ci

COLORS = {"poll": "C0", "cg": "C1", "best_response": "C2", "exact_dense": "C3",
          "mean_field": "C5", "degree": "C6", "no_price": "0.5"}
LABELS = {"poll": "Poll", "cg": "conjugate gradients", "best_response": "best-response dynamics",
          "exact_dense": "exact (dense Cholesky)",
          "mean_field": "uniform price (mean field)", "degree": "degree heuristic",
          "no_price": "no price"}


def _synthetic(summary) -> list[str]:
    """Families with more than one n (the synthetic ones), in table order."""
    fams = tables.unique(summary, "family")
    return [f for f in fams if len(tables.unique(summary, "n", family=f)) > 1]


def _log_n_axis(ax, ns):
    ax.set_xscale("log")
    ax.set_xticks(list(ns))
    ax.set_xticklabels([f"{int(n):,}" for n in ns], fontsize=7)
    ax.minorticks_off()
    ax.set_xlabel("agents n")


def _mean_band(ax, x, values, log=False, **kw):
    """Mean over seeds (rows) with its 95% CI band; ``log``: geometric mean and the CI of
    the mean log (for quantities plotted on a log axis)."""
    values = np.asarray(values, float)
    keep = np.all(np.isfinite(values) & ((values > 0) if log else True), axis=0)
    if not keep.any():
        return
    vals = np.log(values[:, keep]) if log else values[:, keep]
    mean, half = mean_ci(vals, axis=0)
    lo, hi = mean - half, mean + half
    if log:
        mean, lo, hi = np.exp(mean), np.exp(lo), np.exp(hi)
    line, = ax.plot(np.asarray(x)[keep], mean, marker="o", ms=3, **kw)
    ax.fill_between(np.asarray(x)[keep], lo, hi, color=line.get_color(), alpha=0.2, linewidth=0)


def _kappa_axis(ax, kappas, label):
    """Log κ axis, ticks thinned to at least 0.15 apart in log κ (readable labels)."""
    kept = []
    for k in sorted(kappas):
        if not kept or np.log(k) - np.log(kept[-1]) >= 0.15:
            kept.append(k)
    kappas = kept
    ax.set_xscale("log")
    ax.set_xticks(list(kappas))
    ax.set_xticklabels([f"{k:.3g}" for k in kappas], fontsize=7)
    ax.minorticks_off()
    ax.set_xlabel(label)


@figure("tables/trajectories.csv", "tables/summary.csv")
def convergence(run):
    """Poll converges to the welfare-maximising price. Top: relative price error ‖p_t − p*‖/‖p*‖
    vs rounds t; bottom: welfare gap (W(p*) − W(p_t))/(W(p*) − W(0)); one column per graph family
    at the largest n (heterogeneity h = default) and one for networkx's real networks; mean over
    seeds with 95% CI bands. Dashed: the trivial baselines on the same games (uniform price from
    population-average technology and mean degree; degree-centrality heuristic); dotted: ε."""
    cfg = run.cfg
    traj = tables.read(run.input("trajectories.csv"))
    summary = tables.read(run.input("summary.csv"))
    fams = _synthetic(summary)
    reals = [f for f in tables.unique(summary, "family") if f not in fams]
    cols = fams + (["real networks"] if reals else [])
    fig, axes = plotting.subplots(2, len(cols), width=3.0, height=2.6)
    for j, col in enumerate(cols):
        top, bottom = axes[0, j], axes[1, j]
        if col in fams:
            n = max(tables.unique(summary, "n", family=col))
            lines = [(col, n, "C0", "Poll")]
            top.set_title(f"{col}, n = {int(n):,}")
            for method, style in (("mean_field", "--"), ("degree", "-.")):
                sel = dict(family=col, n=n, het=cfg.heterogeneity, method=method)
                for ax, col_name in ((top, "price_error"), (bottom, "welfare_gap")):
                    ax.axhline(np.mean(tables.select(summary, **sel)[col_name]),
                               color=COLORS[method], ls=style, lw=1, label=LABELS[method])
        else:
            lines = [(r, tables.unique(summary, "n", family=r)[0], f"C{k}", r)
                     for k, r in enumerate(reals)]
            top.set_title("real networks (networkx)")
        for fam, n, color, label in lines:
            sel = dict(family=fam, n=n, het=cfg.heterogeneity)
            for ax, col_name in ((top, "price_error"), (bottom, "welfare_gap")):
                rounds, vals = tables.pivot(traj, col_name, by="round", **sel)
                _mean_band(ax, rounds, vals, log=True, color=color, label=label)
        top.axhline(cfg.eps, color="k", ls=":", lw=1, label=f"ε = {cfg.eps}")
        for ax in (top, bottom):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("rounds t (agents polled)")
        top.set_ylabel("price error ‖p − p*‖/‖p*‖")
        bottom.set_ylabel("welfare gap (share of optimal gain)")
        top.legend(fontsize=6, loc="lower left")
    fig.tight_layout()
    return fig


@figure("tables/ops.csv")
def operations_vs_n(run):
    """Operations to reach price error ε vs n: Poll's multiply-adds counted in its scan per
    round, times the CLT's rounds to a root-mean-square price error of ε, against conjugate
    gradients and best-response dynamics (multiply-adds counted in their loops, stopped at the
    same ε) and the dense Cholesky solve (n³m³/3, run up to dense_max_n); bottom: CPU seconds
    of the process (compile excluded; Poll: the same share of its run). Mean over seeds with 95%
    CI; one column per family."""
    ops = tables.read(run.input("ops.csv"))
    fams = [f for f in tables.unique(ops, "family") if len(tables.unique(ops, "n", family=f)) > 1]
    fig, axes = plotting.subplots(2, len(fams), width=3.0, height=2.6)
    for j, fam in enumerate(fams):
        for method in ("poll", "cg", "best_response", "exact_dense"):
            if not np.any(tables.where(ops, family=fam, method=method)):
                continue
            for row, col in ((0, "ops_to_eps"), (1, "time_s")):
                ns, vals = tables.pivot(ops, col, family=fam, method=method)
                _mean_band(axes[row, j], ns, vals, log=True, color=COLORS[method],
                           label=LABELS[method])
        ns = tables.unique(ops, "n", family=fam)
        for row, label in ((0, "multiply-adds to ε"), (1, "CPU seconds to ε")):
            _log_n_axis(axes[row, j], sorted(ns))
            axes[row, j].set_yscale("log")
            axes[row, j].set_ylabel(label)
        axes[0, j].set_title(fam)
    axes[0, 0].legend(fontsize=6)
    fig.tight_layout()
    return fig


@figure("tables/summary.csv")
def queries(run):
    """Queries (polled agents plus agents visited by the walks) to price error ε as the CLT
    predicts them (queries_to_eps_clt: the mean over all rounds of the squared linearised price
    deviation over ε², times the measured queries per round; the low-variance statistic the
    claim is judged on). Left: vs n
    per graph family (default heterogeneity h) — flat if the query complexity does not grow
    with the population. Right: vs preference heterogeneity h at n = sweep_n, with each
    family's degree coefficient of variation in the legend (topology heterogeneity). Mean over
    seeds with 95% CI."""
    cfg = run.cfg
    summary = tables.read(run.input("summary.csv"))
    fams = _synthetic(summary)
    fig, axes = plotting.subplots(1, 2, width=3.6, height=2.9)
    ax = axes[0, 0]
    for k, fam in enumerate(fams):
        ns, vals = tables.pivot(summary, "queries_to_eps_clt", family=fam, method="poll",
                                het=cfg.heterogeneity)
        _mean_band(ax, ns, vals, log=True, color=f"C{k}", label=fam)
    _log_n_axis(ax, sorted(tables.unique(summary, "n", family=fams[0])))
    ax.set_yscale("log")
    ax.set_ylabel(f"queries to ε = {cfg.eps}")
    ax.set_title("vs population size")
    ax.legend(fontsize=7)
    ax = axes[0, 1]
    for k, fam in enumerate(fams):
        sel = tables.where(summary, family=fam, method="poll", n=cfg.sweep_n)
        if len(np.unique(summary["het"][sel])) < 2:
            continue
        sub = {c: v[sel] for c, v in summary.items()}
        hets, vals = tables.pivot(sub, "queries_to_eps_clt", by="het")
        cv = float(np.mean(sub["degree_cv"]))
        _mean_band(ax, hets, vals, log=True, color=f"C{fams.index(fam)}",
                   label=f"{fam} (degree CV {cv:.2f})")
    ax.set_yscale("log")
    ax.set_xlabel("preference heterogeneity h")
    ax.set_ylabel(f"queries to ε = {cfg.eps}")
    ax.set_title(f"vs heterogeneity (n = {cfg.sweep_n:,})")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


@figure("tables/detection.csv", "tables/incentives.csv")
def adversarial(run):
    """Incentives and adversaries. Left: share of misreports R = κΣ_i flagged by the
    first-order-condition test (level α), its analytic power (non-central χ², dashed: the ideal
    row) and the false-positive rate on truthful reports, vs κ.
    Middle: final price error with adversaries (share adversary_fraction) when flagged reports
    are kept or dropped (κ = 1: no adversary). Right: a polled agent's net gain from reporting
    κΣ_i, relative to its equilibrium utility, under a plain report and under the probe-scored
    report, against the truthful run of the longest horizon (median and 10–90% range over
    sampled agents and seeds; positive = profitable)."""
    cfg = run.cfg
    det = tables.read(run.input("detection.csv"))
    inc = tables.read(run.input("incentives.csv"))
    inc = tables.select(inc, rounds=max(tables.unique(inc, "rounds")))
    fig, axes = plotting.subplots(1, 3, width=3.2, height=2.8)
    attacks = sorted(a for a in tables.unique(det, "attack") if a != 1.0)
    ax = axes[0, 0]
    for col, label, color in (("detection_rate", "detected (adversaries)", "C3"),
                              ("false_positive_rate", "flagged (truthful)", "C0")):
        xs = attacks if col == "detection_rate" else tables.unique(det, "attack")
        xs = sorted(xs)
        vals = np.stack([tables.select(det, attack=a)[col] for a in xs], axis=1)
        _mean_band(ax, xs, vals, color=color, label=label)
    power = [float(np.mean(tables.select(det, attack=a)["analytic_detection_rate"]))
             for a in attacks]
    ax.plot(attacks, power, color="k", ls="--", lw=1, label="analytic power")
    ax.axhline(cfg.alpha, color="k", ls=":", lw=1, label=f"α = {cfg.alpha}")
    _kappa_axis(ax, sorted(tables.unique(det, "attack")), "adversaries report R = κΣ_i")
    ax.set_ylabel("share of reports flagged")
    ax.legend(fontsize=6)
    ax = axes[0, 1]
    xs = sorted(tables.unique(det, "attack"))
    for col, label, color in (("price_error_undefended", "flagged kept", "C3"),
                              ("price_error_defended", "flagged dropped", "C2")):
        vals = np.stack([tables.select(det, attack=a)[col] for a in xs], axis=1)
        _mean_band(ax, xs, vals, log=True, color=color, label=label)
    _kappa_axis(ax, xs, "adversaries report R = κΣ_i")
    ax.set_yscale("log")
    ax.set_ylabel("final price error")
    ax.legend(fontsize=6)
    ax = axes[0, 2]
    for rule, color in (("plain", "C3"), ("probe", "C0")):
        cols = [c for c in inc if c.startswith(f"gain_{rule}_k")]
        kappas = np.asarray([float(c.split("_k")[1]) for c in cols])
        vals = np.stack([np.asarray(inc[c], float) for c in cols], axis=1)
        med = np.median(vals, 0)
        lo, hi = np.percentile(vals, [10, 90], axis=0)
        ax.plot(kappas, med, marker="o", ms=3, color=color, label=f"{rule} report")
        ax.fill_between(kappas, lo, hi, color=color, alpha=0.2, linewidth=0)
    ax.axhline(0, color="k", lw=0.8)
    _kappa_axis(ax, kappas[::2], "polled agent reports R = κΣ_i")
    ax.set_yscale("symlog", linthresh=1e-7)
    ax.set_ylabel("net gain / own utility")
    ax.legend(fontsize=6)
    fig.tight_layout()
    return fig


FIGURES = figures_by_name(convergence, operations_vs_n, queries, adversarial)
