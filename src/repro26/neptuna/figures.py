"""Figures of the neptuna experiments; each reads tables (and the snapshot arrays) only, and its
docstring is its caption."""

from __future__ import annotations

import numpy as np
from matplotlib import ticker as plt_ticker
from scipy.special import stdtrit  # Student-t quantile, without importing scipy.stats

from repro26.core import io, plotting, tables
from repro26.core.method import figure, figures_by_name
from repro26.neptuna import names

ENTRY_COLORS = {"unet": "C0", "fno": "C1", "vit": "C2", "foundation": "C3", "persistence": "0.4",
                "linear": "0.7"}
FOUNDATION = "foundation"


@figure("tables/validation.csv", "tables/sod_profile.csv")
def sod_vs_exact(run):
    """Solver validation. Left three panels: Sod's shock tube at t = 0.2 (γ-model solver: MUSCL
    with minmod, HLLC, SSP-RK2, CFL 0.4) against the exact Riemann solution (scipy brentq on the
    pressure function). Right: L1 error of density vs the number of cells for Sod, an air–helium
    and a stiffened liquid–air shock tube (dashed: slope −1); the legend gives the fitted order
    and the largest pressure deviation max|p − 1| of an air/helium slab advected at uniform
    p = u = 1 (the exact solution has none)."""
    prof = tables.read(run.input("sod_profile.csv"))
    val = tables.read(run.input("validation.csv"))
    fig, axes = plotting.subplots(1, 4, width=3.0, height=2.7)
    for ax, (q, label) in zip(axes[0], (("rho", "density ρ"), ("u", "velocity u"),
                                        ("p", "pressure p"))):
        ax.plot(prof["x"], prof[f"{q}_exact"], "k-", lw=1.2, label="exact")
        ax.plot(prof["x"], prof[q], "o", ms=2, color="C0", label=f"solver, n = {int(prof['n'][0])}")
        ax.set_xlabel("x")
        ax.set_ylabel(label)
    axes[0, 0].legend(fontsize=7)
    ax = axes[0, 3]
    contact = tables.select(val, case="contact")
    for i, case in enumerate(("sod", "air_helium", "liquid_gas")):
        sel = tables.select(val, case=case)
        ax.loglog(sel["n"], sel["l1_rho"], "o-", ms=3, color=f"C{i}",
                  label=f"{case}: order {float(sel['order_rho'][0]):.2f}")
    ns = np.asarray(tables.select(val, case="sod")["n"], float)
    e0 = float(tables.select(val, case="sod")["l1_rho"][0])
    ax.loglog(ns, e0 * ns[0] / ns, "k--", lw=0.8, label="slope −1")
    ax.plot([], [], " ", label=f"contact max|p−1| ≤ {np.nanmax(contact['max_dp']):.1e}")
    ax.set_xticks(ns)
    ax.set_xticklabels([str(int(n)) for n in ns])
    ax.xaxis.set_minor_formatter(plt_ticker.NullFormatter())
    ax.set_xlabel("cells n")
    ax.set_ylabel("L1 error of ρ")
    plotting.plain_log_ticks(ax.yaxis)
    ax.legend(fontsize=6, loc="lower left")
    fig.tight_layout()
    return fig


def _snapshot_inputs(cfg):
    return [f"data/{ds}_snapshots.npz" for ds in (*cfg.datasets, *cfg.datasets_3d)]


@figure(inputs_from=_snapshot_inputs)
def snapshots(run):
    """Reference trajectory of each dataset (bubble: helium-like, Mach 1.22, R = 0.3, density
    ratio 0.182; droplet: stiffened-gas droplet, Mach 1.5, R = 0.25, density ratio 20; water: air
    bubble in water, p∞ = 6000 bar, shock Mach 1.03 in water, R = 0.25; at `paper` also the 3-D
    bubble, shown on its z = 0 symmetry plane) at four times: density (top row of each dataset,
    log scale) and pressure (bottom row), white line the interface α = 0.5. Domain [0, 2] × [0, 1],
    lower wall the symmetry axis; the shock enters from the left."""
    datasets = (*run.cfg.datasets, *run.cfg.datasets_3d)
    fig, axes = plotting.subplots(2 * len(datasets), 4, width=2.6, height=1.45)
    for d, ds in enumerate(datasets):
        arr = io.read_npz(run.input(f"{ds}_snapshots.npz"))
        f, times = arr["fields"], arr["times"]
        for row, (ch, name) in enumerate(((0, "log10 ρ"), (f.shape[1] - 2, "p"))):
            vals = np.log10(f[:, ch]) if ch == 0 else f[:, ch]
            lo, hi = float(vals.min()), float(vals.max())
            for k in range(4):
                ax = axes[2 * d + row, k]
                im = ax.imshow(vals[k], origin="lower", extent=(0, 2, 0, 1), vmin=lo, vmax=hi,
                               cmap="viridis" if ch == 0 else "magma", aspect="equal")
                ax.contour(np.linspace(0, 2, f.shape[-1]), np.linspace(0, 1, f.shape[-2]),
                           f[k, -1], [0.5], colors="w", linewidths=0.7)
                ax.set_xticks([])
                ax.set_yticks([])
                if row == 0:
                    ax.set_title(f"{ds}, t = {times[k]:.2f}", fontsize=7)
            fig.colorbar(im, ax=axes[2 * d + row, 3], fraction=0.046, pad=0.02, label=name)
    return fig


@figure("tables/rollout.csv")
def rollout_error(run):
    """Autoregressive rollout error: nRMSE (RMSE per channel over its training spread, mean over
    ρ, u, v, p, α; mean over test trajectories) vs rollout step, starting from frame 1, for the
    MSE-trained U-Net, FNO and ViT, the foundation FNO (pretrained on every dataset, fine-tuned
    on this one; bands: 95% CI over seeds) and the trivial baselines persistence and linear
    extrapolation (grey)."""
    roll = tables.read(run.input("rollout.csv"))
    datasets = tables.unique(roll, "dataset")
    fig, axes = plotting.subplots(1, len(datasets), width=3.6, height=2.8)
    for ax, ds in zip(axes[0], datasets):
        for m in (*run.cfg.models, FOUNDATION, *names.BASELINES):
            loss = "-" if m in names.BASELINES else "mse"
            steps, vals = tables.pivot(roll, "nrmse", by="step", dataset=ds, model=m, loss=loss)
            if m in names.BASELINES:
                ax.plot(steps, vals[0], "--", color=ENTRY_COLORS[m], label=m)
            else:
                plotting.line_with_ci(ax, steps, vals, label=m, positive=True,
                                      color=ENTRY_COLORS[m], marker="o", ms=2)
        ax.set_yscale("log")
        ax.set_xlabel("rollout step (frames)")
        ax.set_ylabel("nRMSE")
        ax.set_title(ds)
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    return fig


@figure("tables/metrics.csv")
def metric_heatmap(run):
    """Every model and loss on every metric, per dataset: colour log10(value / persistence's)
    with the sign flipped for SSIM, IoU and stability, so blue is better than persistence and red
    worse; numbers are the means over seeds. Rows: the trivial baselines, the MSE-trained U-Net,
    FNO, ViT and foundation FNO (pretrained on all datasets, fine-tuned), then the loss study on
    the U-Net."""
    table = tables.read(run.input("metrics.csv"))
    datasets = tables.unique(table, "dataset")
    cols = (*names.METRICS, "stability")
    entries = [(b, "-") for b in names.BASELINES]
    entries += [(m, "mse") for m in (*run.cfg.models, FOUNDATION)]
    entries += [(run.cfg.loss_model, loss) for loss in run.cfg.losses if loss != "mse"]
    fig, axes = plotting.subplots(1, len(datasets), width=5.2, height=0.32 * len(entries) + 1.6)
    for ax, ds in zip(axes[0], datasets):
        means = np.full((len(entries), len(cols)), np.nan)
        for i, (m, loss) in enumerate(entries):
            for j, c in enumerate(cols):
                v = tables.per_seed(table, c, dataset=ds, model=m, loss=loss)
                means[i, j] = np.nanmean(v) if len(v) else np.nan
        ref = means[0]
        with np.errstate(divide="ignore", invalid="ignore"):
            score = np.log10(np.maximum(means, 1e-12) / np.maximum(ref, 1e-12))
        for j, c in enumerate(cols):
            if c in names.HIGHER_IS_BETTER or c == "stability":
                score[:, j] *= -1
        ax.imshow(np.clip(score, -1, 1), cmap="coolwarm", vmin=-1, vmax=1, aspect="auto")
        ax.grid(False)
        for i in range(len(entries)):
            for j in range(len(cols)):
                ax.text(j, i, f"{means[i, j]:.2g}", ha="center", va="center", fontsize=5.5)
        ax.set_xticks(range(len(cols)))
        ax.set_xticklabels(cols, rotation=45, ha="right", fontsize=7)
        ax.set_yticks(range(len(entries)))
        ax.set_yticklabels([m if loss in ("-", "mse") else f"{m}+{loss}" for m, loss in entries],
                           fontsize=7)
        ax.set_title(ds)
    fig.tight_layout()
    return fig


@figure("tables/weights.csv")
def loss_weights(run):
    """Loss-balancing weights over training (U-Net, first dataset, mean over seeds) of the
    adaptive schemes: SoftAdapt (softmax of the slopes of the moving-average losses), its
    normalised and loss-weighted variants, and GradNorm (learned weights equalising the
    gradient norms on the output layer); terms MSE, H¹ gradient, interface-weighted MSE and
    1 − SSIM."""
    w = tables.read(run.input("weights.csv"))
    ds = tables.unique(w, "dataset")[0]
    adaptive = [loss for loss in names.ADAPTIVE if loss in run.cfg.losses]
    fig, axes = plotting.subplots(1, max(1, len(adaptive)), width=3.0, height=2.6, sharey=True)
    for ax, loss in zip(axes[0], adaptive):
        for k, term in enumerate(names.TERMS):
            steps, vals = tables.pivot(w, f"w_{term}", by="step", dataset=ds, loss=loss)
            # weights are a softmax or clipped at 0 and renormalised: the band stays in [0, 1]
            plotting.line_with_ci(ax, steps, vals, label=term, color=f"C{k}", limits=(0, 1))
        ax.set_title(loss, fontsize=8)
        ax.set_xlabel("training step")
    axes[0, 0].set_ylabel("weight")
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    return fig


@figure("tables/timing.csv")
def step_time(run):
    """CPU milliseconds per training step (U-Net, one seed, compile excluded; per-process CPU
    time, repro26.core.timing) of MSE-only, SoftAdapt, GradNorm and control (MSE-only timed
    again: the noise floor), measured in one job in interleaved rounds, each measurement at
    least timing_min_seconds of CPU; dots are rounds, bars the median. The dashed line is
    1.05 × MSE-only's median (the claim's 5% budget)."""
    t = tables.read(run.input("timing.csv"))
    names = tables.unique(t, "loss")
    fig, axes = plotting.subplots(1, 1, width=4.2, height=2.8)
    ax = axes[0, 0]
    for i, name in enumerate(names):
        v = 1e3 * np.asarray(tables.select(t, loss=name)["seconds_per_step"], float)
        ax.bar(i, np.median(v), color=f"C{i}", alpha=0.5)
        ax.plot(np.full(v.size, i), v, "k.", ms=3)
    ref = 1e3 * np.median(np.asarray(tables.select(t, loss="mse")["seconds_per_step"], float))
    ax.axhline(1.05 * ref, ls="--", color="k", lw=0.8)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("CPU ms per training step")
    fig.tight_layout()
    return fig


@figure("tables/metrics.csv", "runs/foundation_pretrained.csv")
def foundation_vs_scratch(run):
    """Foundation surrogate vs the same architecture from scratch. Left: pretraining loss (MSE on
    normalised fields, every dataset jointly; mean over seeds). Right panels, one per metric:
    the fine-tuned foundation model minus the from-scratch model (same architecture, same
    fine-tuning budget of train_steps on the dataset, same seeds), paired by seed, per dataset;
    bars the mean, whiskers the 95% t-interval over seeds, dots the seeds. Below 0 the foundation
    model is better for nRMSE and high-wavenumber error; above 0 for IoU."""
    table = tables.read(run.input("metrics.csv"))
    curve = tables.read(run.input("foundation_pretrained.csv"))
    arch = run.cfg.foundation_model
    datasets = tables.unique(table, "dataset")
    metrics = (("nrmse", "Δ nRMSE"), ("spec_high", "Δ high-k error"), ("iou", "Δ IoU"))
    fig, axes = plotting.subplots(1, 1 + len(metrics), width=2.7, height=2.6)
    ax = axes[0, 0]
    steps, vals = tables.pivot(curve, "loss", by="step")
    plotting.line_with_ci(ax, steps, vals, positive=True, color=ENTRY_COLORS[FOUNDATION])
    ax.set_yscale("log")
    plotting.plain_log_ticks(ax.yaxis)
    ax.set_xlabel("pretraining step")
    ax.set_ylabel("MSE (normalised)")
    ax.set_title(f"pretraining ({arch})", fontsize=8)
    for ax, (metric, label) in zip(axes[0, 1:], metrics):
        for i, ds in enumerate(datasets):
            ft = np.asarray(tables.per_seed(table, metric, dataset=ds, model=FOUNDATION, loss="mse"), float)
            sc = np.asarray(tables.per_seed(table, metric, dataset=ds, model=arch, loss="mse"), float)
            if ft.size == 0 or ft.size != sc.size:
                continue
            d = ft - sc
            mean = float(np.mean(d))
            half = (float(stdtrit(d.size - 1, 0.975) * np.std(d, ddof=1) / np.sqrt(d.size))
                    if d.size > 1 else 0.0)
            ax.bar(i, mean, color=f"C{i}", alpha=0.5)
            ax.errorbar(i, mean, yerr=half, color="k", capsize=3, lw=0.8)
            ax.plot(np.full(d.size, i), d, "k.", ms=3)
        ax.axhline(0, color="k", lw=0.6)
        ax.set_xticks(range(len(datasets)))
        ax.set_xticklabels(datasets, fontsize=7)
        ax.set_ylabel(label)
        ax.set_title(f"foundation − {arch} from scratch", fontsize=7)
    fig.tight_layout()
    return fig


FIGURES = figures_by_name(sod_vs_exact, snapshots, rollout_error, metric_heatmap,
                          foundation_vs_scratch, loss_weights, step_time)
