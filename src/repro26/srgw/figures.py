"""Figures of the srgw experiments, in the paper's order; each reads tables (and the real-network
arrays) only, and its docstring is its caption."""

from __future__ import annotations

import numpy as np

from matplotlib import ticker as plt_ticker

from repro26.core import io, plotting, tables
from repro26.core.method import figure, figures_by_name
from repro26.srgw import evaluate

COLORS = {"srgw": "C0", "usvt": "C1", "sas": "C2", "nh": "C3", "sc": "C4", "pot": "C5",
          "density": "0.55",
          "srgw_ktheory": "C0"}


def _fits(run) -> dict[str, np.ndarray]:
    return tables.read(run.input("fits.csv"))


def _families(table) -> list[str]:
    return list(dict.fromkeys(table["family"].tolist()))


def _n_axis(ax, ns) -> None:
    """Log n axis labelled at the grid's values."""
    ax.set_xscale("log")
    ax.set_xticks(list(ns))
    ax.set_xticklabels([f"{int(n):,}" for n in ns], rotation=30, fontsize=7)
    ax.xaxis.set_minor_locator(plt_ticker.NullLocator())
    ax.set_xlabel("nodes n")


def _ci_line(ax, ns, vals, label, color, **kw):
    vals = vals[np.all(np.isfinite(vals), axis=1)]
    if len(vals):
        plotting.line_with_ci(ax, ns, vals, label=label, color=color, marker="o", ms=3, **kw)


@figure("tables/fits.csv")
def error_vs_n(run):
    """Experiment 1 (srgw): mean squared error of the estimated edge-probability matrix P̂ against
    the true P (off-diagonal mean) vs the number of nodes n, log-log, for each SBM and smooth
    graphon; srGW block model vs USVT, sorting-and-smoothing, network histogram and spectral
    clustering + block means. Bands: 95% CI over seeds. SBMs use their true K; smooth graphons
    the K of the configured k_rule (validation: the K among 0.5, 1, 2 × ⌈n^{1/3}⌉ with the
    smallest held-out squared error on 10% hidden node pairs, per graph; the K chosen per
    (family, n) is in tables/k_chosen.csv), shared by every K-block estimator; dotted: srGW at
    the rate-theory K ⌈n^{1/3}⌉. Dashed: the minimax/oracle rate K²/n² + log K/n (+ K⁻² for
    graphons, rate-theory K) scaled to srGW's first point. The network histogram refines its
    spectral-order bins by greedy likelihood-increasing label switching. Last row: adjusted
    Rand index of the recovered SBM blocks."""
    table = _fits(run)
    fams = _families(table)
    sbms = [f for f in fams if table["kind"][table["family"] == f][0] == "sbm"]
    ncols = max(3, len(sbms))
    nrows = -(-len(fams) // ncols) + (1 if sbms else 0)
    first_graphon = next((f for f in fams if f not in sbms), None)
    fig, axes = plotting.subplots(nrows, ncols, width=3.6, height=3.0)
    for ax in axes.ravel():
        ax.set_visible(False)
    for i, fam in enumerate(fams):
        ax = axes.ravel()[i]
        ax.set_visible(True)
        for est in evaluate.ESTIMATORS:
            ns, vals = tables.pivot(table, "mse", family=fam, estimator=est)
            _ci_line(ax, ns, vals, evaluate.ESTIMATOR_LABELS[est], COLORS[est], positive=True)
        kind = table["kind"][table["family"] == fam][0]
        validated = kind != "sbm" and run.cfg.k_rule == "validation"
        if validated:
            ns, alt = tables.pivot(table, "mse", family=fam, estimator="srgw_ktheory")
            _ci_line(ax, ns, alt, evaluate.ESTIMATOR_LABELS["srgw_ktheory"], COLORS["srgw"],
                     positive=True, ls=":")
        ns, K = tables.pivot(table, "K_theory", family=fam, estimator="srgw")
        rate = evaluate.theory_rate(kind, ns, K[0])
        _, ours = tables.pivot(table, "mse", family=fam, estimator="srgw")
        anchor = np.nanmean(ours[:, 0]) / rate[0]
        ax.plot(ns, anchor * rate, "k--", lw=1, label="minimax rate (scaled)")
        _n_axis(ax, ns)
        ax.set_yscale("log")
        rule = "true" if kind == "sbm" else ("validation" if validated else "ceil(c n^b)")
        ax.set_title(f"{fam} (K: {rule})", fontsize=9)
        ax.set_ylabel("MSE of P̂")
        if i == 0 or (validated and fam == first_graphon):
            ax.legend(fontsize=6)
    if sbms:
        base = (nrows - 1) * ncols
        for j, fam in enumerate(sbms):
            ax = axes.ravel()[base + j]
            ax.set_visible(True)
            for est in ("srgw", "sas", "nh", "sc"):
                ns, vals = tables.pivot(table, "ari", family=fam, estimator=est)
                _ci_line(ax, ns, vals, evaluate.ESTIMATOR_LABELS[est], COLORS[est])
            _n_axis(ax, ns)
            ax.set_ylim(-0.05, 1.05)
            ax.set_title(f"{fam}: block recovery", fontsize=9)
            ax.set_ylabel("ARI")
    fig.subplots_adjust(hspace=0.6, wspace=0.35)
    fig.suptitle("Estimation error vs n (mean, 95% CI over seeds)")
    return fig


@figure("tables/fits.csv")
def gap_vs_n(run):
    """Experiment 2 (srgw): optimality gap F(rounded) − F(relaxed) between the relaxed srGW
    solution and its deterministic rounding vs n (crosses: gap exactly 0), with the bound max
    C̄²/n (dashed, slope −1) on what the relaxation can gain; right: fraction of rows of the
    coupling T that are not one-hot."""
    table = _fits(run)
    fams = _families(table)
    fig, axes = plotting.subplots(1, 2, width=4.4, height=3.3)
    ax = axes[0, 0]
    bounds = {f: tables.pivot(table, "gap_bound", family=f, estimator="srgw") for f in fams}
    floor = min(np.nanmin(b) for _, b in bounds.values()) / 100
    for i, fam in enumerate(fams):
        ns, gap = tables.pivot(table, "gap", family=fam, estimator="srgw")
        color = f"C{i % 10}"
        ax.plot(ns, np.nanmean(bounds[fam][1], 0), color=color, ls="--", lw=1)
        grid = np.broadcast_to(ns, gap.shape)
        pos = gap > 0
        ax.scatter(grid[pos], gap[pos], color=color, s=14, label=f"{fam}: gap > 0")
        ax.scatter(grid[~pos], np.full((~pos).sum(), floor), color=color, marker="x", s=14,
                   label=f"{fam}: gap ≤ 0 ({(~pos).sum()}/{gap.size})")
    _n_axis(ax, ns)
    ax.set_yscale("log")
    ax.set_ylabel("F(rounded) − F(relaxed)")
    ax.set_title("each graph (x at bottom: gap ≤ 0)\ndashed: bound max C̄²/n", fontsize=8)
    ax.legend(fontsize=5, ncol=2)
    ax = axes[0, 1]
    for i, fam in enumerate(fams):
        ns, frac = tables.pivot(table, "fractional_rows", family=fam, estimator="srgw")
        _ci_line(ax, ns, frac, fam, f"C{i % 10}")
    ax.legend(fontsize=6)
    _n_axis(ax, ns)
    ax.set_ylabel("fraction of rows")
    ax.set_title("rows of relaxed T not one-hot", fontsize=8)
    fig.suptitle("Relaxed vs deterministic (rounded) srGW objective", y=1.04)
    return fig


@figure("tables/fits.csv", "tables/pot.csv")
def time_vs_n(run):
    """Experiment 3 (srgw): wall time to tolerance vs n. Left: our JAX block-coordinate
    conditional gradient (all initial couplings in one vmapped call, compile excluded) vs the
    same estimator with POT's semirelaxed_gromov_wasserstein as the T-step from the same
    initial couplings. Right: all estimators (median over families) at the K in use; the held-
    out validation that picks K for smooth graphons (column k_select_s of fits.csv) is not
    included. Timings on a shared 2-core CPU machine."""
    table = _fits(run)
    pot = tables.read(run.input("pot.csv"))
    fig, axes = plotting.subplots(1, 2, width=4.4, height=3.3)
    ax = axes[0, 0]
    if len(pot.get("n", [])):
        for j, fam in enumerate(_families(pot)):
            ns, ours = tables.pivot(pot, "ours_time_s", family=fam)
            _, ref = tables.pivot(pot, "pot_time_s", family=fam)
            ls = "-" if j == 0 else ":"
            # few POT seeds: mean line and every instance as a dot (a t-CI over 2 seeds is
            # uninformative)
            for vals, who, color in ((ours, "ours", COLORS["srgw"]), (ref, "POT", COLORS["pot"])):
                ax.plot(ns, np.nanmean(vals, 0), color=color, ls=ls, marker="o", ms=3,
                        label=f"{who} ({fam}), mean of {len(vals)} seeds")
                ax.scatter(np.broadcast_to(ns, vals.shape), vals, color=color, s=6, alpha=0.6)
        _n_axis(ax, np.unique(pot["n"]))
    ax.set_yscale("log")
    ax.set_ylabel("wall time to tolerance (s)")
    ax.set_title("srGW: ours (JAX) vs POT, same inits", fontsize=8)
    ax.legend(fontsize=6)
    ax = axes[0, 1]
    for est in evaluate.ESTIMATORS:
        # median over families of the per-seed times
        rows = table["estimator"] == est
        ns = np.unique(table["n"][rows])
        seeds = np.unique(table["seed"][rows])
        vals = np.array([[np.median(np.asarray(table["time_s"][rows & (table["n"] == n)
                                                                & (table["seed"] == s)], float))
                          for n in ns] for s in seeds])
        _ci_line(ax, ns, vals, evaluate.ESTIMATOR_LABELS[est], COLORS[est], positive=True)
    _n_axis(ax, np.unique(table["n"]))
    ax.set_yscale("log")
    ax.set_ylabel("wall time (s), median over families")
    ax.set_title("all estimators (compile excluded)", fontsize=8)
    ax.legend(fontsize=6)
    return fig


@figure("real/real.csv", "real/real.npz")
def real_networks(run):
    """Experiment 4 (srgw): srGW block models of the networks networkx ships (karate club, les
    misérables, florentine families, Davis southern women). Top: adjacency with nodes sorted by
    fitted block (red lines: block boundaries; ARI against the club split / women-vs-events
    where known). Bottom: the fitted step-function graphon Ŵ(u, v) = C̄[z(u), z(v)]."""
    table = tables.read(run.input("real.csv"))
    arrays = io.read_npz(run.input("real.npz"))
    names = table["network"].tolist()
    fig, axes = plotting.subplots(2, len(names), width=2.9, height=2.8)
    for j, name in enumerate(names):
        A, z, C = arrays[f"{name}_A"], arrays[f"{name}_z"], arrays[f"{name}_C"]
        order = np.argsort(z, kind="stable")
        ax = axes[0, j]
        ax.imshow(A[np.ix_(order, order)], cmap="Greys", interpolation="nearest")
        for b in np.cumsum(np.bincount(z, minlength=C.shape[0]))[:-1]:
            ax.axhline(b - 0.5, color="C3", lw=0.6)
            ax.axvline(b - 0.5, color="C3", lw=0.6)
        ari = table["ari_srgw"][j]
        extra = f", ARI {float(ari):.2f}" if str(ari) not in ("", "nan") else ""
        ax.set_title(f"{name} (n={table['n'][j]}, K={table['K'][j]}{extra})", fontsize=7)
        ax.set_xlabel("node (sorted by block)")
        if j == 0:
            ax.set_ylabel("node (sorted by block)")
        ax.grid(False)
        ax = axes[1, j]
        zs = z[order]
        image = ax.imshow(C[np.ix_(zs, zs)], cmap="viridis", vmin=0, vmax=1, origin="upper",
                          extent=(0, 1, 1, 0), interpolation="nearest")
        ax.set_xlabel("u")
        if j == 0:
            ax.set_ylabel("v")
        ax.set_title("Ŵ(u, v) = C̄[z(u), z(v)]", fontsize=7)
        ax.grid(False)
    fig.colorbar(image, ax=axes[1, :].tolist(), shrink=0.8, label="edge probability")
    fig.suptitle("srGW block models of networkx graphs")
    return fig


FIGURES = figures_by_name(error_vs_n, gap_vs_n, time_vs_n, real_networks)
