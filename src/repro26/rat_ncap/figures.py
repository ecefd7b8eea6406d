"""Figures (read the tables written by ``train`` and ``evaluate``; never models)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from repro26.core.io import read_table
from repro26.core.plotting import line_with_ci, save, subplots
from repro26.core.stats import mean_ci

#: approximate published rat ranges (see repro26.rat_ncap.evaluate): stride frequency (Hz)
#: and duty factor spanned from slow walk to gallop
RAT_STRIDE_HZ = (2.0, 5.0)
RAT_DUTY = (0.4, 0.7)


def eval_tables(run) -> dict[str, dict[str, np.ndarray]]:
    """``eval/<variant>.csv`` inputs keyed by variant."""
    return {p.stem: read_table(p) for p in run.inputs if p.parent.name == "eval"}


def histories(run) -> dict[str, list[dict[str, np.ndarray]]]:
    """``runs/<variant>/seed<s>.csv`` inputs grouped by variant (seed order)."""
    out: dict[str, list] = {}
    for p in sorted(run.inputs, key=lambda p: str(p)):
        if p.parent.parent.name == "runs" and p.suffix == ".csv":
            out.setdefault(p.parent.name, []).append(read_table(p))
    return out


def _float(value) -> float:
    """A table cell as float; empty cells (NaN written by write_table) read as NaN."""
    if isinstance(value, (str, np.str_)):
        text = str(value)
        return {"": np.nan, "True": 1.0, "False": 0.0}.get(text) if text in ("", "True", "False") \
            else float(text)
    return float(value)


def _select(table, **cond):
    keep = np.ones(len(next(iter(table.values()))), bool)
    for k, v in cond.items():
        keep &= table[k] == v
    return keep


def per_seed(table, column, condition="intact"):
    """(seeds, speeds) array of ``column`` for one condition, and the speeds."""
    sel = _select(table, condition=condition)
    seeds, speeds = np.unique(table["seed"][sel]), np.unique(table["v_cmd"][sel])
    out = np.full((len(seeds), len(speeds)), np.nan)
    for i, s in enumerate(seeds):
        for j, v in enumerate(speeds):
            m = sel & (table["seed"] == s) & (table["v_cmd"] == v)
            out[i, j] = _float(table[column][m][0])
    return out, speeds


def _errorbar(ax, x, y_by_seed, **kw):
    y = np.asarray(y_by_seed, float)
    mean = np.nanmean(y, axis=0)
    half = np.array([mean_ci(col[np.isfinite(col)])[1] if np.isfinite(col).sum() > 1 else 0.0
                     for col in y.T])
    return ax.errorbar(x, mean, yerr=half, marker="o", **kw)


def learning_curves(run) -> None:
    hist = histories(run)
    fig, axes = subplots(1, 2, width=4.6)
    for name, runs in sorted(hist.items()):
        ax = axes[0, 1] if name.startswith("ncap-torque-") else axes[0, 0]
        y = np.stack([r["center_fitness"] for r in runs])
        line_with_ci(ax, runs[0]["generation"], y, label=f"{name} (n={len(runs)})")
    axes[0, 0].set_title("controllers and interfaces")
    axes[0, 1].set_title("NCAP, torque: ES algorithms run at this scale")
    for ax in axes[0]:
        ax.set_xlabel("generation")
        ax.set_ylabel("ES-mean fitness (reward/step)")
        ax.legend(fontsize=6)
    save(fig, Path(run.out))


def gait_vs_speed(run) -> None:
    tables = eval_tables(run)
    t = tables[run.cfg.main_variant]
    fig, axes = subplots(1, 3, width=3.4)
    speed, v = per_seed(t, "speed")
    _errorbar(axes[0, 0], v, speed, label="achieved")
    axes[0, 0].plot(v, v, "k--", lw=1, label="commanded")
    axes[0, 0].set_ylabel("forward speed (m/s)")
    freq, _ = per_seed(t, "stride_freq")
    _errorbar(axes[0, 1], v, freq, label=run.cfg.main_variant)
    axes[0, 1].axhspan(*RAT_STRIDE_HZ, color="grey", alpha=0.2, label="rat (approx.)")
    axes[0, 1].set_ylabel("stride frequency (Hz)")
    duty, _ = per_seed(t, "duty")
    _errorbar(axes[0, 2], v, duty, label=run.cfg.main_variant)
    axes[0, 2].axhspan(*RAT_DUTY, color="grey", alpha=0.2, label="rat (approx.)")
    axes[0, 2].set_ylabel("duty factor")
    for ax in axes[0]:
        ax.set_xlabel("commanded speed (m/s)")
        ax.legend(fontsize=6)
    fig.suptitle(f"{run.cfg.main_variant}: gait vs speed (mean, 95% CI over seeds; NaN = no stepping)",
                 fontsize=8)
    save(fig, Path(run.out))


def interfaces(run) -> None:
    tables = eval_tables(run)
    names = [n for n in run.cfg.variants if n.startswith("ncap-") and n.endswith("-refined")]
    fig, axes = subplots(1, 2, width=3.2)
    for i, name in enumerate(names):
        rew, _ = per_seed(tables[name], "reward")
        succ, _ = per_seed(tables[name], "success")
        r = rew.mean(axis=1)
        m, h = mean_ci(r)
        axes[0, 0].bar(i, m, yerr=h, color=f"C{i}")
        axes[0, 0].plot(np.full(r.size, i), r, "k.", ms=4)
        axes[0, 1].bar(i, succ.mean(), color=f"C{i}")
    for ax, label in zip(axes[0], ("eval reward / step (mean over speeds)", "success rate (seeds x speeds)")):
        ax.set_xticks(range(len(names)), [n.split("-")[1] for n in names])
        ax.set_xlabel("neuromechanical interface")
        ax.set_ylabel(label)
    axes[0, 1].set_ylim(0, 1)
    save(fig, Path(run.out))


def ablations(run) -> None:
    from repro26.rat_ncap.evaluate import CONDITIONS, circ_dist0

    t = eval_tables(run)[run.cfg.main_variant]
    fig, axes = subplots(1, 2, width=3.6)
    for k, (column, label) in enumerate((("lr_hind", "left-right hind"), ("diagonal", "diagonal LH-RF"))):
        for i, cond in enumerate(CONDITIONS):
            lag, _ = per_seed(t, column, cond)
            d = np.vectorize(lambda p: circ_dist0(p) if np.isfinite(p) else np.nan)(lag).ravel()
            d = d[np.isfinite(d)]
            if d.size:
                m, h = mean_ci(d) if d.size > 1 else (d.mean(), 0.0)
                axes[0, k].bar(i, m, yerr=h, color=f"C{i}")
                axes[0, k].plot(np.full(d.size, i), d, "k.", ms=4)
            else:
                axes[0, k].text(i, 0.02, "no\nstepping", ha="center", fontsize=6)
        axes[0, k].set_xticks(range(len(CONDITIONS)), CONDITIONS)
        axes[0, k].set_ylim(0, 0.5)
        axes[0, k].set_title(f"{label} phase lag")
        axes[0, k].set_ylabel("distance from 0 (0.5 = alternation)")
        axes[0, k].set_xlabel("silenced population")
    fig.suptitle(f"{run.cfg.main_variant}: ablations (dots: seeds x speeds with stepping;\nbars: "
                 "mean of their distances; the claim uses the distance of their circular-mean lag)",
                 fontsize=8, y=1.08)
    save(fig, Path(run.out))


def params_vs_reward(run) -> None:
    tables = eval_tables(run)
    fig, axes = subplots(1, 1, width=4.0)
    ax = axes[0, 0]
    for i, name in enumerate(n for n in run.cfg.variants if n.endswith("torque-refined")):
        t = tables[name]
        rew, _ = per_seed(t, "reward")
        r = rew.mean(axis=1)
        m, h = mean_ci(r)
        n_params = int(t["num_params"][0])
        ax.errorbar([n_params], [m], yerr=[h], marker="o", color=f"C{i}", label=f"{name} ({n_params})")
    ax.set_xscale("log")
    ax.set_xlabel("number of parameters")
    ax.set_ylabel("eval reward / step (mean over speeds)")
    ax.legend(fontsize=6)
    save(fig, Path(run.out))


def rodent_transfer(run) -> None:
    """The full dm_control rodent driven by the transferred circuits (see rat_ncap.rodent)."""
    t = read_table(run.inputs[0])
    fig, axes = subplots(1, 3, width=3.6)
    if not np.all(t["status"] == "ok"):
        for ax in axes[0]:
            ax.set_axis_off()
        axes[0, 1].text(0.5, 0.5, str(t["status"][0]), ha="center", va="center", fontsize=8)
        save(fig, Path(run.out))
        return
    hold = t["variant"] == "hold"
    columns = (("distance_m", "distance travelled (m)"), ("upright_frac", "fraction of time upright"),
               ("stride_freq", "stride frequency (Hz)"))
    for k, (column, label) in enumerate(columns):
        ax = axes[0, k]
        for i, name in enumerate(v for v in dict.fromkeys(t["variant"]) if v != "hold"):
            sel = t["variant"] == name
            speeds = np.unique(t["v_cmd"][sel])
            seeds = np.unique(t["seed"][sel])
            y = np.array([[_float(t[column][sel & (t["seed"] == s) & (t["v_cmd"] == v)][0]) for v in speeds]
                          for s in seeds])
            if np.isfinite(y).any():
                _errorbar(ax, speeds + 0.004 * i, y, color=f"C{i}", label=name)
            else:
                ax.text(0.5, 0.6 - 0.1 * i, f"{name}: no stepping", fontsize=7, ha="center",
                        color=f"C{i}", transform=ax.transAxes)
        if column != "stride_freq":
            ax.axhline(_float(t[column][hold][0]), color="k", ls="--", lw=1, label="hold posture (no circuit)")
        ax.set_xlabel("commanded speed (m/s)")
        ax.set_ylabel(label)
        ax.set_xlim(min(run.cfg.eval_speeds) - 0.05, max(run.cfg.eval_speeds) + 0.05)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=6)
    axes[0, 1].set_ylim(0, 1.05)
    fig.suptitle(f"full dm_control rodent, NCAP transferred without retraining ({run.cfg.rodent_s:g} s episodes; "
                 "mean, 95% CI over seeds)", fontsize=8)
    save(fig, Path(run.out))
