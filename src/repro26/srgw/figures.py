"""Figures of the srgw experiments, in the paper's order; each reads tables (and the real-network
arrays) only, and its docstring is its caption."""

from __future__ import annotations

import numpy as np

from matplotlib import ticker as plt_ticker

from repro26.core import io, plotting, tables
from repro26.core.method import figure, figures_by_name
from repro26.srgw import rates

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
        for est in rates.ESTIMATORS:
            ns, vals = tables.pivot(table, "mse", family=fam, estimator=est)
            _ci_line(ax, ns, vals, rates.ESTIMATOR_LABELS[est], COLORS[est], positive=True)
        kind = table["kind"][table["family"] == fam][0]
        validated = kind != "sbm" and run.cfg.k_rule == "validation"
        if validated:
            ns, alt = tables.pivot(table, "mse", family=fam, estimator="srgw_ktheory")
            _ci_line(ax, ns, alt, rates.ESTIMATOR_LABELS["srgw_ktheory"], COLORS["srgw"],
                     positive=True, ls=":")
        ns, K = tables.pivot(table, "K_theory", family=fam, estimator="srgw")
        rate = rates.theory_rate(kind, ns, K[0])
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
                _ci_line(ax, ns, vals, rates.ESTIMATOR_LABELS[est], COLORS[est])
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
        _ci_line(ax, ns, frac, fam, f"C{i % 10}", limits=(0.0, 1.0))
    ax.set_ylim(bottom=0.0)
    ax.legend(fontsize=6)
    _n_axis(ax, ns)
    ax.set_ylabel("fraction of rows")
    ax.set_title("rows of relaxed T not one-hot", fontsize=8)
    fig.suptitle("Relaxed vs deterministic (rounded) srGW objective", y=1.04)
    return fig


@figure("tables/fits.csv", "tables/pot.csv")
def time_vs_n(run):
    """Experiment 3 (srgw): time to tolerance vs n. Left (process CPU seconds): our JAX block-coordinate
    conditional gradient (all initial couplings in one vmapped call, compile excluded) vs the
    same estimator with POT's semirelaxed_gromov_wasserstein as the T-step from the same
    initial couplings. Right: all estimators (median over families) at the K in use; the held-
    out validation that picks K for smooth graphons (column k_select_s of fits.csv) is not
    included. Right-panel times are single calls of CPU time, not interleaved (a finding only)."""
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
    ax.set_ylabel("CPU time to tolerance (s)")
    ax.set_title("srGW: ours (JAX) vs POT, same inits", fontsize=8)
    ax.legend(fontsize=6)
    ax = axes[0, 1]
    for est in rates.ESTIMATORS:
        # median over families of the per-seed times
        rows = table["estimator"] == est
        ns = np.unique(table["n"][rows])
        seeds = np.unique(table["seed"][rows])
        vals = np.array([[np.median(np.asarray(table["time_s"][rows & (table["n"] == n)
                                                                & (table["seed"] == s)], float))
                          for n in ns] for s in seeds])
        _ci_line(ax, ns, vals, rates.ESTIMATOR_LABELS[est], COLORS[est], positive=True)
    _n_axis(ax, np.unique(table["n"]))
    ax.set_yscale("log")
    ax.set_ylabel("CPU time (s), median over families")
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


def _slope_line(ax, ns, vals, color, label, extend_to=None, **kw):
    """Points, the least-squares log-log line through them (dashed beyond the data up to
    ``extend_to``) and its slope in the label."""
    ns, vals = np.asarray(ns, float), np.asarray(vals, float)
    ok = np.isfinite(vals) & (vals > 0)
    ns, vals = ns[ok], vals[ok]
    if len(ns) < 2:
        ax.plot(ns, vals, "o", color=color, ms=4, label=label)
        return
    slope, icpt = np.polyfit(np.log(ns), np.log(vals), 1)
    kw.setdefault("ls", "-")
    ax.plot(ns, vals, marker="o", color=color, ms=4, label=f"{label}: slope {slope:.2f}", **kw)
    if extend_to is not None and extend_to > ns[-1]:
        grid = np.geomspace(ns[-1], extend_to, 20)
        ax.plot(grid, np.exp(icpt) * grid**slope, ":", color=color, lw=1)


@figure("tables/scaling.csv")
def scaling(run):
    """Sparse scaling (srgw, issue 18): balanced SBMs with mean degree 25 and K = 4 blocks
    (p_in = 5 p_out), sampled in O(edges) and solved end to end on a sparse BCOO matrix
    (spectral init by subspace iteration, solve to tolerance, rounding), vs POT's srGW on the
    same graphs as dense float64 matrices. Left: CPU time vs n (ours: init + solve + rounding,
    and one iteration, each in its own job; the claim's CPU seconds per iteration, every n in one
    job, solid thin; POT: to tolerance from our spectral labels), log-log with fitted slopes;
    dotted: POT's fit extrapolated. Middle: memory vs n (ours: peak RSS above the process's RSS
    before sampling; POT: tracemalloc peak of its solve incl. the dense matrix; grey: POT's
    3 × 8n² bytes); the vertical line is POT's memory wall, the n at which 3 × 8n² bytes reach
    this machine's RAM. Right: ARI of the recovered blocks vs the planted labels at every n
    (1 = exact). Timings on a shared 2-core CPU machine, compile excluded."""
    table = tables.read(run.input("scaling.csv"))
    fig, axes = plotting.subplots(1, 3, width=4.2, height=3.4)
    setting = {}
    if len(table.get("n", [])):  # the first mean degree and K of the config (paper has more)
        setting = {"degree": float(np.min(np.asarray(table["degree"], float))),
                   "K": int(np.min(np.asarray(table["K"], int)))}
    ours = tables.select(table, solver="ours_sparse", **setting) if setting else {}
    pot = tables.select(table, solver="pot_dense", **setting) if setting else {}
    cpu = tables.select(table, solver="ours_sparse_cpu") if setting else {}
    ram_gb = float(np.nanmax(np.asarray(table["mem_total_gb"], float))) if len(table.get(
        "n", [])) else float("nan")
    wall_n = np.sqrt(ram_gb * 2**30 / 24.0)
    n_max = max([*np.asarray(ours.get("n", []), float), wall_n if np.isfinite(wall_n) else 0])

    def by_n(t, col):
        ns = np.unique(np.asarray(t["n"], float))
        return ns, np.array([np.nanmedian(np.asarray(t[col], float)[np.asarray(t["n"], float) == n])
                             for n in ns])

    ax = axes[0, 0]
    if len(ours.get("n", [])):
        _slope_line(ax, *by_n(ours, "time_s"), COLORS["srgw"], "ours sparse, to tolerance")
        _slope_line(ax, *by_n(ours, "iteration_s"), COLORS["srgw"], "ours sparse, 1 iteration",
                    ls="--")
        _slope_line(ax, *by_n(ours, "matmul_s"), "0.4", "one sparse A @ T", ls=":")
    if len(cpu.get("n", [])):
        _slope_line(ax, *by_n(cpu, "cpu_iteration_s"), "k", "ours, 1 iteration, CPU (one job)")
    if len(pot.get("n", [])):
        _slope_line(ax, *by_n(pot, "time_s"), COLORS["pot"], "POT dense, to tolerance",
                    extend_to=wall_n)
    ax.set_ylabel("CPU time (s)")
    ax.set_title("time vs n", fontsize=9)
    ax = axes[0, 1]
    if len(ours.get("n", [])):
        _slope_line(ax, *by_n(ours, "memory_mb"), COLORS["srgw"], "ours sparse, peak RSS above base")
    if len(pot.get("n", [])):
        _slope_line(ax, *by_n(pot, "memory_mb"), COLORS["pot"], "POT dense, tracemalloc peak",
                    extend_to=wall_n)
    grid = np.geomspace(100, n_max, 50)
    ax.plot(grid, 24.0 * grid**2 / 2**20, color="0.6", lw=1, label="POT model 3 × 8n² bytes")
    if np.isfinite(ram_gb):
        ax.axhline(ram_gb * 1024, color="k", lw=0.8, ls="-.", label=f"RAM {ram_gb:.0f} GiB")
    ax.set_ylabel("memory (MB)")
    ax.set_title("memory vs n", fontsize=9)
    for ax in axes[0, :2]:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("nodes n")
        if np.isfinite(wall_n):
            ax.axvline(wall_n, color="C3", lw=1, ls="--", label=f"POT memory wall n ≈ {wall_n:,.0f}")
        ax.legend(fontsize=6)
    ax = axes[0, 2]
    for t, who, color in ((ours, "ours sparse", COLORS["srgw"]), (pot, "POT dense", COLORS["pot"])):
        if len(t.get("n", [])):
            ax.plot(np.asarray(t["n"], float), np.asarray(t["ari"], float), "o", color=color,
                    ms=4, label=who)
    ax.set_xscale("log")
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel("nodes n")
    ax.set_ylabel("ARI vs planted blocks")
    ax.set_title("block recovery", fontsize=9)
    ax.legend(fontsize=6)
    fig.suptitle(f"srGW on sparse graphs: mean degree {setting.get('degree', float('nan')):g}, "
                 f"K = {setting.get('K', '?')}")
    return fig


FIGURES = figures_by_name(error_vs_n, gap_vs_n, time_vs_n, real_networks, scaling)
