"""Figures (read the tables written by ``train``, ``evaluate`` and ``rodent``; never models),
in the paper's order; each docstring is the figure's caption."""

from __future__ import annotations

import numpy as np

from repro26.core import tables
from repro26.core.method import figure, figures_by_name
from repro26.core.plotting import line_with_ci, subplots
from repro26.core.stats import mean_ci, summary

#: approximate published rat ranges (see repro26.rat_ncap.evaluate): stride frequency (Hz)
#: and duty factor spanned from slow walk to gallop
RAT_STRIDE_HZ = (2.0, 5.0)
RAT_DUTY = (0.4, 0.7)


def eval_tables(run) -> dict[str, dict[str, np.ndarray]]:
    """``eval/<variant>.csv`` inputs keyed by variant (``baselines``: the trivial controllers)."""
    return {p.stem: tables.read(p) for p in run.inputs if p.parent.name == "eval"}


def baseline_reward(evals, condition: str) -> dict:
    """Summary over seeds of a trivial controller's eval reward (mean over speeds)."""
    _, rew = per_seed(evals["baselines"], "reward", condition)
    return summary(rew.mean(axis=1))


BASELINE_STYLE = {"do-nothing": ("k", "--"), "random-circuit": ("grey", ":")}


def _baseline_lines(ax, evals):
    for cond, (color, ls) in BASELINE_STYLE.items():
        ax.axhline(baseline_reward(evals, cond)["mean"], color=color, ls=ls, lw=1, label=cond)


def alternating_fraction(fictive, circuit: str, condition: str) -> float:
    """Fraction of a circuit's fictive runs (seeds x initial states x speeds) under one
    condition whose hind left-right lag alternates (``alternating`` column); NaN if none."""
    sel = tables.where(fictive, circuit=circuit, condition=condition)
    return float(np.mean(fictive["alternating"][sel].astype(bool))) if sel.any() else float("nan")


def histories(run) -> dict[str, list[dict[str, np.ndarray]]]:
    """``runs/<variant>/seed<s>.csv`` inputs grouped by variant (seed order)."""
    out: dict[str, list] = {}
    for p in sorted(run.inputs, key=lambda p: str(p)):
        if p.parent.parent.name == "runs" and p.suffix == ".csv":
            out.setdefault(p.parent.name, []).append(tables.read(p))
    return out


def per_seed(table, column, condition="intact"):
    """``(speeds, values[seed, speed])`` of ``column`` for one evaluation condition."""
    return tables.pivot(table, column, by="v_cmd", condition=condition)


def interface_variants(cfg) -> list[str]:
    """The NCAP variants trained with the refined ES, one per interface."""
    return [n for n in cfg.variants if n.startswith("ncap-") and n.endswith("-refined")]


def torque_variants(cfg) -> list[str]:
    """The torque-interface controllers trained with the refined ES."""
    return [n for n in cfg.variants if n.endswith("torque-refined")]


def _evals(names) -> list[str]:
    return [f"eval/{n}.csv" for n in names] + ["eval/baselines.csv"]


def _errorbar(ax, x, y_by_seed, **kw):
    y = np.asarray(y_by_seed, float)
    mean = np.nanmean(y, axis=0)
    half = np.array([mean_ci(col[np.isfinite(col)])[1] if np.isfinite(col).sum() > 1 else 0.0
                     for col in y.T])
    return ax.errorbar(x, mean, yerr=half, marker="o", **kw)


@figure(inputs_from=lambda cfg: [f"runs/{v}/seed{s}.csv" for v in cfg.variants for s in cfg.seeds])
def learning_curves(run):
    """Fitness of the ES mean per generation (reward per step, averaged over the commanded
    training speeds), mean and 95% CI over seeds. Left: the other controllers/interfaces run at
    this scale (Rat NCAP with the muscle and equilibrium-point interfaces, NCAP without sign
    constraints, the large MLP, the MLP with NCAP's parameter count). Right: Rat NCAP with the
    torque interface, for each ES algorithm run at this scale (refined ES; OpenAI-ES and
    diagonal CMA-ES where configured)."""
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
    return fig


@figure(inputs_from=lambda cfg: _evals([cfg.main_variant]))
def gait_vs_speed(run):
    """Main Rat NCAP variant evaluated at each commanded speed: achieved forward speed, stride
    frequency (from hip/shoulder swing onsets) and duty factor (paw contact fraction); mean and
    95% CI over seeds. Grey bands: the approximate published rat ranges from slow walk to
    gallop (stride frequency 2-5 Hz, duty factor 0.4-0.7; Clarke & Parker 1986; Gillis &
    Biewener 2001). Missing points: no stepping or a fall."""
    t = eval_tables(run)[run.cfg.main_variant]
    fig, axes = subplots(1, 3, width=3.4, layout="constrained")
    v, speed = per_seed(t, "speed")
    _errorbar(axes[0, 0], v, speed, label="achieved")
    axes[0, 0].plot(v, v, "k--", lw=1, label="commanded")
    axes[0, 0].set_ylabel("forward speed (m/s)")
    _, freq = per_seed(t, "stride_freq")
    _errorbar(axes[0, 1], v, freq, label=run.cfg.main_variant)
    axes[0, 1].axhspan(*RAT_STRIDE_HZ, color="grey", alpha=0.2, label="rat (approx.)")
    axes[0, 1].set_ylabel("stride frequency (Hz)")
    axes[0, 1].set_ylim(0.0, 1.4 * max(RAT_STRIDE_HZ[1], np.nanmax(freq, initial=0.0)))
    _, duty = per_seed(t, "duty")
    _errorbar(axes[0, 2], v, duty, label=run.cfg.main_variant)
    axes[0, 2].axhspan(*RAT_DUTY, color="grey", alpha=0.2, label="rat (approx.)")
    axes[0, 2].set_ylabel("duty factor")
    axes[0, 2].set_ylim(0.0, 1.05)
    pad = 0.1 * (np.ptp(v) or 0.1)
    for ax, values in zip(axes[0], (speed, freq, duty)):
        ax.set_xlabel("commanded speed (m/s)")
        ax.set_xlim(v.min() - pad, v.max() + pad)
        if not np.isfinite(values).any():
            ax.text(0.5, 0.5, "no stepping at any speed\n(every episode fell or had no rhythm)",
                    transform=ax.transAxes, ha="center", va="center", fontsize=7, color="C0")
        ax.legend(fontsize=6)
    fig.suptitle(f"{run.cfg.main_variant}: gait vs speed (mean, 95% CI over seeds; NaN = no stepping)",
                 fontsize=8)
    return fig


@figure(inputs_from=lambda cfg: _evals(interface_variants(cfg)))
def interfaces(run):
    """Trainability of the three neuromechanical interfaces (torque f-e, agonist-antagonist
    muscle with co-contraction stiffness, equilibrium-point targets): evaluation reward per step
    (bars: mean with 95% CI over seeds; dots: seeds; lines: the do-nothing controller and a
    random circuit on the same episodes) and success rate (no fall, speed within tolerance)
    over seeds and speeds."""
    evals = eval_tables(run)
    names = interface_variants(run.cfg)
    fig, axes = subplots(1, 2, width=3.4, layout="constrained")
    for i, name in enumerate(names):
        _, rew = per_seed(evals[name], "reward")
        _, succ = per_seed(evals[name], "success")
        r = rew.mean(axis=1)
        m, h = mean_ci(r)
        axes[0, 0].bar(i, m, yerr=h, color=f"C{i}")
        axes[0, 0].plot(np.full(r.size, i), r, "k.", ms=4)
        axes[0, 1].bar(i, succ.mean(), color=f"C{i}")
        axes[0, 1].text(i, succ.mean() + 0.02, f"{succ.mean():.2f}", ha="center", va="bottom", fontsize=7)
    _baseline_lines(axes[0, 0], evals)
    axes[0, 0].legend(fontsize=6)
    for ax, label in zip(axes[0], ("eval reward / step (mean over speeds)", "success rate (seeds x speeds)")):
        ax.set_xticks(range(len(names)), [n.split("-")[1] for n in names])
        ax.set_xlabel("neuromechanical interface")
        ax.set_ylabel(label)
    axes[0, 1].set_ylim(0, 1)
    return fig


@figure(inputs_from=lambda cfg: _evals([cfg.main_variant]) + ["fictive.csv"])
def ablations(run):
    """Population ablations of the main Rat NCAP variant: the hind left-right phase lag as its
    circular distance from 0 (0.5 = alternation, 0 = synchrony), intact and with V0 (V0d, V0v
    and the diagonal V0-type LPN), V3, V2a or the Ia pathways silenced. Left: fictive
    locomotion (circuit without body) of the untrained circuit; middle: of the trained
    circuits; right: the trained circuits on the body. Bars: mean with 95% CI over seeds x
    speeds with a rhythm (fictive: from each seed's evaluation-key initial state); dots: those
    runs; the claim uses the distance of their circular-mean lag. Below each bar: the mean
    hind left-right phase-locking strength (resultant length). Fictive panels, under each
    population's name: the fraction of runs that alternate (distance from 0 >= 0.25) over all seeds x
    random initial states x speeds, since the circuit is bistable (alternation or synchrony
    depending on its initial state)."""
    from repro26.rat_ncap.evaluate import CONDITIONS

    t = eval_tables(run)[run.cfg.main_variant]
    fictive = tables.read(run.input("fictive.csv"))
    panels = (("fictive, untrained circuit", fictive, {"circuit": "initial", "state": 0}),
              ("fictive, trained circuits", fictive, {"circuit": "trained", "state": 0}),
              ("on the body, trained circuits", t, {}))
    fig, axes = subplots(1, 3, width=3.4)
    for k, (title, table, select) in enumerate(panels):
        ax = axes[0, k]
        for i, cond in enumerate(CONDITIONS):
            _, lag = tables.pivot(table, "lr_hind", by="v_cmd", condition=cond, **select)
            _, plv = tables.pivot(table, "plv_lr_hind", by="v_cmd", condition=cond, **select)
            d = tables.circular_distance(lag, 0.0).ravel()
            d = d[np.isfinite(d)]
            if d.size:
                m, h = mean_ci(d) if d.size > 1 else (d.mean(), 0.0)
                ax.bar(i, m, yerr=h, color=f"C{i}")
                ax.plot(np.full(d.size, i), d, "k.", ms=3)
                ax.text(i, -0.06, f"{np.nanmean(plv):.2f}", ha="center", va="top", fontsize=6)
            else:
                ax.text(i, 0.25, "no rhythm", ha="center", va="center", rotation=90, fontsize=6)
        labels = list(CONDITIONS)
        if "circuit" in select:  # fraction of all (seed, initial state, speed) runs that alternate
            labels = [f"{c}\n{alternating_fraction(fictive, select['circuit'], c):.2f}" for c in CONDITIONS]
        ax.set_xticks(range(len(CONDITIONS)), labels, fontsize=7)
        ax.set_xlim(-0.6, len(CONDITIONS) - 0.4)
        ax.set_ylim(-0.1, 0.6)
        ax.axhline(0, color="k", lw=0.5)
        ax.set_title(title, fontsize=8)
        ax.set_xlabel("silenced population\n(fictive: 2nd line = fraction alternating)" if "circuit" in select
                      else "silenced population")
    axes[0, 0].set_ylabel("hind L-R lag: distance from 0\n(0.5 = alternation, 0 = synchrony)")
    fig.suptitle(f"{run.cfg.main_variant}: ablations (under bars: phase-locking strength; fictive tick "
                 "labels: fraction of runs over all initial states that alternate)",
                 fontsize=8, y=1.03)
    return fig


@figure(inputs_from=lambda cfg: [f"eval/{cfg.main_variant}_contacts.csv"])
def gait_diagram(run):
    """Gait diagram of the main Rat NCAP variant on the body: stance (bar: paw within 1.5 mm of
    the floor) and swing (gap) of each paw over 1.5 s after the 0.5 s transient, one panel per
    commanded speed, first seed. Hatched grey: after a fall."""
    t = tables.read(run.input(f"eval/{run.cfg.main_variant}_contacts.csv"))
    seed = int(np.min(t["seed"]))
    speeds = sorted(set(t["v_cmd"].tolist()))
    fig, axes = subplots(len(speeds), 1, width=6.0, height=1.5, sharex=True, layout="constrained")
    for k, v in enumerate(speeds):
        ax = axes[k, 0]
        for i, paw in enumerate(("LF", "RF", "LH", "RH")):
            sel = tables.where(t, seed=seed, v_cmd=v, paw=paw)
            time, contact, alive = t["t"][sel], t["contact"][sel].astype(bool), t["alive"][sel].astype(bool)
            dt = float(np.median(np.diff(time))) if time.size > 1 else 0.01
            stance = [(a, dt) for a, c, al in zip(time, contact, alive) if c and al]
            ax.broken_barh(stance, (i - 0.4, 0.8), color=f"C{i}")
            dead = [(a, dt) for a, al in zip(time, alive) if not al]
            if dead:
                ax.broken_barh(dead, (i - 0.4, 0.8), color="lightgrey", hatch="//")
        ax.set_yticks(range(4), ["LF", "RF", "LH", "RH"])
        ax.set_ylim(-0.6, 3.6)
        ax.set_title(f"commanded {v:g} m/s (seed {seed})", fontsize=8)
        ax.set_ylabel("paw")
    axes[-1, 0].set_xlabel("time (s)")
    return fig


@figure(inputs_from=lambda cfg: _evals(torque_variants(cfg)))
def params_vs_reward(run):
    """Evaluation reward against parameter count for the torque-interface controllers trained
    with the refined ES at this scale (Rat NCAP, the MLP with NCAP's parameter count, the
    large MLP; NCAP without sign constraints where configured); mean and 95% CI over seeds.
    Lines: the do-nothing controller and a random circuit on the same episodes."""
    evals = eval_tables(run)
    fig, axes = subplots(1, 1, width=4.0)
    ax = axes[0, 0]
    for i, name in enumerate(torque_variants(run.cfg)):
        t = evals[name]
        _, rew = per_seed(t, "reward")
        r = rew.mean(axis=1)
        m, h = mean_ci(r)
        n_params = int(t["num_params"][0])
        ax.errorbar([n_params], [m], yerr=[h], marker="o", color=f"C{i}", label=f"{name} ({n_params})")
    _baseline_lines(ax, evals)
    ax.set_xscale("log")
    ax.set_xlabel("number of parameters")
    ax.set_ylabel("eval reward / step (mean over speeds)")
    ax.legend(fontsize=6)
    return fig


@figure("rodent.csv")
def rodent_transfer(run):
    """The learned Rat NCAP circuits (trained on the Rat v2 analogue) driving dm_control's full
    rodent in CPU MuJoCo without retraining: forward distance travelled, fraction of the episode
    upright and stride frequency per commanded speed (mean, 95% CI over seeds); the dashed line
    is the rodent holding its standing posture with no circuit. The analogue's flexor/extensor
    outputs become position targets of the rodent's shoulder, elbow, hip and knee servos; all
    other actuators hold the standing posture."""
    t = tables.read(run.input("rodent.csv"))
    fig, axes = subplots(1, 3, width=3.6)
    hold = t["variant"] == "hold"
    columns = (("distance_m", "distance travelled (m)"), ("upright_frac", "fraction of time upright"),
               ("stride_freq", "stride frequency (Hz)"))
    for k, (column, label) in enumerate(columns):
        ax = axes[0, k]
        for i, name in enumerate(v for v in dict.fromkeys(t["variant"]) if v != "hold"):
            speeds, y = tables.pivot(t, column, by="v_cmd", variant=name)
            if np.isfinite(y).any():
                _errorbar(ax, speeds + 0.004 * i, y, color=f"C{i}", label=name)
            else:
                ax.text(0.5, 0.6 - 0.1 * i, f"{name}: no stepping", fontsize=7, ha="center",
                        color=f"C{i}", transform=ax.transAxes)
        if column != "stride_freq":
            ax.axhline(float(t[column][hold][0]), color="k", ls="--", lw=1, label="hold posture (no circuit)")
        else:  # a frequency: the axis starts at 0 even where a 3-seed t-interval reaches below it
            ax.set_ylim(bottom=0.0)
        ax.set_xlabel("commanded speed (m/s)")
        ax.set_ylabel(label)
        ax.set_xlim(min(run.cfg.eval_speeds) - 0.05, max(run.cfg.eval_speeds) + 0.05)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=6)
    axes[0, 1].set_ylim(0, 1.05)
    fig.suptitle(f"full dm_control rodent, NCAP transferred without retraining ({run.cfg.rodent_s:g} s episodes; "
                 "mean, 95% CI over seeds)", fontsize=8)
    return fig


FIGURES = figures_by_name(learning_curves, gait_vs_speed, interfaces, ablations, gait_diagram,
                          params_vs_reward, rodent_transfer)
