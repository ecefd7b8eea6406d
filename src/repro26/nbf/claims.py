"""The abstract's three claims as predicates over tables/filtering.csv and tables/training.csv.

Every comparison is a paired per-seed difference (same episodes for every filter), judged on
its 95% CI over seeds. A claim compares NBF against a set of rows at once (the equal-N
particle filter, the strongest trivial belief); it is

* held when every compared difference has its CI on the claimed side,
* not held when any has its CI on the other side,
* inconclusive otherwise (some CI contains 0), with the largest CI half-width as the minimum
  detectable effect, or when the GDE has not learned its belief family (the regeneration
  gate below).

Rows, evaluated with the same predicate (``Claim.check``):

* ideal — the exact filter, drawn as N points like every other belief (``exact_n``), in place
  of NBF's numbers;
* trivial — the strongest trivial belief (prior-only particles or the last-seen point mass,
  whichever is better in the setting), in place of NBF's numbers: it cannot beat itself, so a
  predicate that includes "NBF beats the strongest trivial belief" fails on it.

Regeneration gate (issue 45): NBF's premise is that the generator has learned the belief
family. ``regen`` (embed N exact samples, regenerate N from g(. | z)) is scored against the same
references as ``exact_n`` (N fresh exact samples); a claim is judged only where the ratio of
their mean divergences is at most ``REGEN_TOLERANCE``. The GDE's NLL against the exact
entropy of its training beliefs (the NLL of the true density) is reported beside it.
The gate's own ideal row is ``regen_ideal``, the best any generator conditioned on N points
can do (the posterior predictive over the training family given the N samples). Where even it
is above ``REGEN_TOLERANCE`` x exact_n, the gate as stated cannot be passed by construction
(DESIGN rule 5), and the learned ``regen`` is held to ``REGEN_TOLERANCE`` x regen_ideal
instead; which floor applies is decided from the ideal's numbers alone (``gate_floor``).

The particle filter's own degeneration (failing to beat the trivial belief) is reported as a
finding, not used as a gate: avoiding it is what the abstract claims for NBF.
"""

from __future__ import annotations

import numpy as np

from repro26.core import tables
from repro26.core.claims import Claim
from repro26.core.method import claim_set
from repro26.core.stats import mean_ci, summary

METRIC = "sinkhorn"
TRIVIAL = ("prior_only", "last_seen")
IDEAL = "exact_n"
REGEN_IDEAL = "regen_ideal"  # the best generator conditioned on N points (posterior predictive)
REGEN_TOLERANCE = 1.5  # regen / exact_n divergence at which the GDE counts as trained (issue 45)
ZERO_SHOT_TOLERANCE = 1.2  # ours: held-out normalised error at most 20% above held-in


def _per_seed(table, filt, metric=METRIC, **cond) -> np.ndarray:
    return tables.per_seed(table, metric, filter=filt, **cond)


def _ci(values) -> tuple[float, float, float]:
    mean, half = mean_ci(np.asarray(values, float))
    return float(mean), float(mean - half), float(mean + half)


def _best_trivial(table, **cond) -> tuple[str, np.ndarray]:
    """The trivial belief with the lowest mean error in this setting, per seed."""
    name = min(TRIVIAL, key=lambda f: np.mean(_per_seed(table, f, **cond)))
    return name, _per_seed(table, name, **cond)


def _rows(table, **cond) -> dict:
    """Per-seed errors of NBF, the PF, the strongest trivial belief and the ideal (exact_n)."""
    trivial_name, trivial = _best_trivial(table, **cond)
    return {"nbf": _per_seed(table, "nbf", **cond).tolist(),
            "pf": _per_seed(table, "pf", **cond).tolist(),
            "trivial": trivial.tolist(), "trivial_name": trivial_name,
            "exact_n": _per_seed(table, IDEAL, **cond).tolist()}


def _margins(differences: dict[str, np.ndarray]) -> dict:
    """CI of each per-seed difference (claimed side: > 0) and the three-way decision."""
    out = {}
    for name, diff in differences.items():
        mean, lo, hi = _ci(diff)
        out[name] = {"mean": mean, "ci95": [lo, hi],
                     "side": "above" if lo > 0 else "below" if hi < 0 else "straddles"}
    return out


def _decision(margins: dict) -> str:
    sides = [v["side"] for v in margins.values()]
    return "held" if all(s == "above" for s in sides) else (
        "not held" if "below" in sides else "open")


def _beats_margins(m: dict, settings) -> dict:
    """Per setting, NBF's margin over the PF and over the strongest trivial belief."""
    diffs = {}
    for s in settings:
        row = m["by_setting"][s]
        nbf = np.asarray(m["nbf"][s], float)
        diffs[f"{s}: pf - nbf"] = np.asarray(row["pf"], float) - nbf
        diffs[f"{s}: trivial - nbf"] = np.asarray(row["trivial"], float) - nbf
    return _margins(diffs)


def _half_width(margins: dict) -> float:
    return max((v["ci95"][1] - v["ci95"][0]) / 2 for v in margins.values())


def regeneration(table, filtering_cond: dict, training) -> dict:
    """The GDE learned-ness record of one setting: regen / exact_n divergence per seed, and the
    final training NLL against the exact entropy of the training beliefs."""
    regen = _per_seed(table, "regen", **filtering_cond)
    floor = _per_seed(table, IDEAL, **filtering_cond)
    ideal = _per_seed(table, REGEN_IDEAL, **filtering_cond)
    ideal_ratio = float(np.mean(ideal) / np.mean(floor))
    gate_floor = IDEAL if ideal_ratio <= REGEN_TOLERANCE else REGEN_IDEAL
    out = {"regen": summary(regen), "exact_n": summary(floor), "regen_ideal": summary(ideal),
           "ratio": float(np.mean(regen) / np.mean(floor)),
           "ratio_per_seed": (regen / floor).tolist(),
           "ideal_ratio (regen_ideal / exact_n)": ideal_ratio,
           "ratio_to_ideal (regen / regen_ideal)": float(np.mean(regen) / np.mean(ideal)),
           "gate_floor": gate_floor,
           "gate_ratio": float(np.mean(regen) / np.mean(floor if gate_floor == IDEAL else ideal))}
    if training is not None:
        dim = 2 * int(filtering_cond["evaders"])
        rows = tables.where(training, dim=dim)
        seeds = np.unique(training["seed"][rows])
        final = [training["nll_final"][rows & (training["seed"] == s)][0] for s in seeds]
        entropy = float(training["entropy"][rows][0])
        out.update({"nll_final": summary(final), "entropy": entropy,
                    "nll_gap": float(np.mean(final) - entropy)})
    return out


def _gate(records: dict) -> str | None:
    bad = {k: v for k, v in records.items() if v["gate_ratio"] > REGEN_TOLERANCE}
    if not bad:
        return None
    floor = {IDEAL: "N-exact-sample floor", REGEN_IDEAL: "ideal N-point regenerator"}
    return ("the GDE has not learned its belief family: regeneration / "
            + ", ".join(f"{floor[v['gate_floor']]} {v['gate_ratio']:.2f} at {k}"
                        for k, v in bad.items())
            + f" (> {REGEN_TOLERANCE})")


def _budget(cfg, training, dims) -> tuple[dict, dict]:
    """Filtering budget (equal: N particles per step for NBF and the PF) and the GDE's offline
    training, which the PF does not have."""
    rows = tables.where(training, dim=max(dims)) if training is not None else None
    params = int(training["parameters"][rows][0]) if rows is not None else 0
    nbf = {"samples": cfg.particles, "optimiser_steps": cfg.train_steps,
           "data_seen": cfg.train_steps * cfg.batch_size * (cfg.set_size + cfg.target_size),
           "parameters": params}
    pf = {"samples": cfg.particles, "optimiser_steps": 0, "data_seen": 0, "parameters": 0}
    why = ("the GDE is trained offline on exact held-in beliefs (the paper's setup); the PF "
           "and the trivial beliefs have nothing to train. Filtering uses N particles per step "
           "for both.")
    return {"nbf": nbf, "pf": pf}, {"optimiser_steps": why, "data_seen": why, "parameters": why}


def _levels_claim(id, statement, paper, criterion, table, cfg, training, settings: dict,
                  note: str) -> Claim:
    """NBF below both the equal-N PF and the strongest trivial belief in every setting."""
    by_setting = {s: _rows(table, **cond) for s, cond in settings.items()}
    regen = {s: regeneration(table, cond, training) for s, cond in settings.items()}
    margins = _beats_margins({"nbf": {s: r["nbf"] for s, r in by_setting.items()},
                              "by_setting": by_setting}, settings)
    pf_vs_trivial = {s: _margins({"trivial - pf": np.asarray(r["trivial"])
                                  - np.asarray(r["pf"])})["trivial - pf"]
                     for s, r in by_setting.items()}
    measured = {
        "metric": f"{METRIC} divergence to the exact belief, mean over steps and episodes",
        "settings": settings,
        "nbf": {s: r["nbf"] for s, r in by_setting.items()},
        "by_setting": by_setting,
        "margins": margins,
        "regeneration": regen,
        "pf_vs_trivial (finding)": pf_vs_trivial,
    }
    predicate = lambda m: _decision(_beats_margins(m, settings)) == "held"
    budget, budget_note = _budget(cfg, training, [2 * c["evaders"] for c in settings.values()])
    return Claim.check(
        id, statement, paper, measured, predicate, criterion, note,
        compared_with={"trivial": "prior_only / last_seen (best per setting)", "baseline": "pf"},
        inconclusive_if=lambda m: _gate(m["regeneration"]) or (
            "a CI of the compared differences contains 0"
            if _decision(m["margins"]) == "open" else None),
        min_detectable_effect=lambda m: _half_width(m["margins"]),
        effect=lambda m: min(v["mean"] for v in m["margins"].values()),
        ideal={"nbf": {s: r["exact_n"] for s, r in by_setting.items()}},
        ideal_note="the exact grid filter's belief drawn as N points (exact_n) in place of NBF",
        trivial={"nbf": {s: r["trivial"] for s, r in by_setting.items()}},
        trivial_note="the strongest trivial belief of each setting in place of NBF",
        budget=budget, budget_note=budget_note,
    )


def tracking_claim(table, cfg, training=None) -> Claim:
    cond = dict(evaders=1, dynamics=cfg.held_in, particles=cfg.particles)
    return _levels_claim(
        "multimodal_tracking",
        "NBF tracks multimodal posteriors: its divergence to the exact belief is below both the "
        "equal-N bootstrap particle filter's and the strongest trivial belief's.",
        "accurate tracking of complex multimodal posteriors (abstract); issue 19: divergence "
        "below the equal-N particle filter's",
        "d = 2 (one evader), held-in dynamics, N = particles: the 95% CIs over seeds of "
        "S_eps(PF) − S_eps(NBF) and S_eps(trivial) − S_eps(NBF) both lie above 0 (not held "
        "when either lies below 0)",
        table, cfg, training, {"d=2": cond},
        "Beliefs are scored as N-point measures (NBF: N fresh samples of g(.|z_t); PF: its N "
        "weighted particles); exact_n is N samples of the exact belief (the floor).")


def scaling_claim(table, cfg, training=None) -> Claim:
    settings = {f"d={2 * k}": dict(evaders=k, dynamics=cfg.held_in, particles=cfg.particles)
                for k in sorted(int(k) for k in cfg.evaders)}
    return _levels_claim(
        "dimension_scaling",
        "NBF scales gracefully with the state dimension: at every d its error is below both "
        "the equal-N particle filter's and the strongest trivial belief's.",
        "graceful scaling with state dimension; particle filters require exponentially many "
        "particles in the state dimension (abstract)",
        "at every d = 2k (k in evaders, N = particles, held-in dynamics): the 95% CIs over "
        "seeds of S_eps(PF) − S_eps(NBF) and S_eps(trivial) − S_eps(NBF) lie above 0 (not held "
        "when any lies below 0)",
        table, cfg, training, settings,
        "Decided on levels at each d, not on a slope. Whether the PF itself beats the trivial "
        "belief at each d is a finding ('pf_vs_trivial'), not a gate.")


def _zero_shot_parts(m: dict, held_out) -> dict:
    """Per held-out dynamics: the normalised-error ratio (NBF / exact_n on the held-out
    dynamics over the same on the held-in one, per seed) and NBF's margin over the strongest
    trivial belief there."""
    held_in = m["held_in"]
    base = np.asarray(m["nbf"][held_in], float) / np.asarray(m["floor"][held_in], float)
    out = {}
    for dyn in held_out:
        nbf = np.asarray(m["nbf"][dyn], float)
        ratio = nbf / np.asarray(m["floor"][dyn], float) / base
        mean, lo, hi = _ci(ratio)
        out[dyn] = {"ratio": {"mean": mean, "ci95": [lo, hi],
                              "side": "above" if lo > ZERO_SHOT_TOLERANCE else
                              "below" if hi < ZERO_SHOT_TOLERANCE else "straddles"},
                    **_margins({"trivial - nbf": np.asarray(m["trivial"][dyn], float) - nbf})}
    return out


def _zero_shot_decision(parts: dict) -> str:
    ratio_sides = [p["ratio"]["side"] for p in parts.values()]
    trivial_sides = [p["trivial - nbf"]["side"] for p in parts.values()]
    if "above" in ratio_sides or "below" in trivial_sides:
        return "not held"
    if all(s == "below" for s in ratio_sides) and all(s == "above" for s in trivial_sides):
        return "held"
    return "open"


def zero_shot_claim(table, cfg, training=None) -> Claim:
    dyns = [cfg.held_in, *cfg.held_out]
    conds = {dyn: dict(evaders=1, dynamics=dyn, particles=cfg.particles) for dyn in dyns}
    rows = {dyn: _rows(table, **c) for dyn, c in conds.items()}
    measured = {
        "tolerance": ZERO_SHOT_TOLERANCE,
        "held_in": cfg.held_in,
        "nbf": {d: r["nbf"] for d, r in rows.items()},
        "floor": {d: r["exact_n"] for d, r in rows.items()},
        "trivial": {d: r["trivial"] for d, r in rows.items()},
        "trivial_name": {d: r["trivial_name"] for d, r in rows.items()},
        "regeneration": {cfg.held_in: regeneration(table, conds[cfg.held_in], training)},
    }
    measured["by_dynamics"] = _zero_shot_parts(measured, cfg.held_out)
    measured["nbf_over_pf_10n (finding, where the 10N PF ran)"] = {
        d: summary(_per_seed(table, "nbf", **c) / _per_seed(table, "pf_10n", **c))
        for d, c in conds.items() if tables.where(table, filter="pf_10n", **c).any()}
    measured["pf_normalised (finding)"] = {
        d: summary(_per_seed(table, "pf", **c) / _per_seed(table, IDEAL, **c))
        for d, c in conds.items()}

    def half_width(m):
        return max((p["ratio"]["ci95"][1] - p["ratio"]["ci95"][0]) / 2
                   for p in m["by_dynamics"].values())

    return Claim.check(
        "zero_shot",
        "On dynamics held out from training, NBF's error normalised by the N-exact-sample floor "
        "stays within 20% of its held-in value, and NBF still beats the trivial beliefs there.",
        "zero-shot generalization to dynamics held out from training (abstract); the 20% "
        "tolerance is ours (the abstract gives no number)",
        measured,
        lambda m: _zero_shot_decision(_zero_shot_parts(m, cfg.held_out)) == "held",
        f"for every held-out dynamics: the 95% CI over seeds of [S(NBF)/S(exact_n)] held-out / "
        f"[S(NBF)/S(exact_n)] held-in lies below {ZERO_SHOT_TOLERANCE}, and the CI of "
        "S(trivial) − S(NBF) on it lies above 0 (not held when a ratio CI lies above the "
        "tolerance or NBF is significantly worse than the trivial belief)",
        "Normalising by exact_n removes how hard each dynamics' beliefs are to represent with N "
        "points; the PF-10N-normalised ratios are reported as a finding.",
        compared_with={"trivial": "prior_only / last_seen (best per dynamics)"},
        inconclusive_if=lambda m: _gate(m["regeneration"]) or (
            "a ratio CI contains the tolerance, or the CI of trivial − NBF contains 0"
            if _zero_shot_decision(m["by_dynamics"]) == "open" else None),
        min_detectable_effect=half_width,
        effect=ZERO_SHOT_TOLERANCE - 1.0,
        ideal={"nbf": measured["floor"]},
        ideal_note="the exact grid filter's belief drawn as N points (exact_n) in place of NBF",
        trivial={"nbf": measured["trivial"]},
        trivial_note="the strongest trivial belief of each dynamics in place of NBF",
    )


@claim_set("tables/filtering.csv", "tables/training.csv")
def CLAIMS(run) -> list[Claim]:
    table = tables.read(run.input("filtering.csv"), ["filter", "seed", METRIC])
    training = tables.read(run.input("training.csv"))
    return [tracking_claim(table, run.cfg, training), scaling_claim(table, run.cfg, training),
            zero_shot_claim(table, run.cfg, training)]
