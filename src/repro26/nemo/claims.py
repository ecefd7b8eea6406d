"""The abstract's claims on the user-side state metrics, as predicates over tables/returns.csv
(budgets from tables/learning.csv).

Metrics (per method, seed and setting; :mod:`repro26.nemo.evaluate`): emotional improvement E,
cognitive improvement C and the need-weighted satisfaction N = Σ_t p(x_t) · r_t. Every
comparison is paired over seeds (the same evaluation users and random numbers for every method):
with d_s = m(A, s) - m(B, s) and the one-sided 95% interval of its mean (the two-sided 90%
t-interval), A is *better* than B on m when its lower end is > 0, *not better* when its upper
end is < MIN_EFFECT (A cannot be ahead by a meaningful margin), *undecided* otherwise.

``improves_both_user_states`` (per setting), as the abstract means it:

* for each single-objective baseline B (emotion only, cognition only), NeMo is better on N and
  on the objective B does not optimise (C for emotion only, E for cognition only), each where
  improvement is possible: where the ideal row for that metric (the planner optimum for it) is
  better than B by more than MIN_EFFECT (lower end of (ideal - B) > MIN_EFFECT). B's own
  objective is reported, not required;
* NeMo is not dominated by the front of fixed scalarisations (PPO on w E + (1 - w) C for
  w in 1, 0.75, 0.5, 0.25, 0): a front point F *dominates* when F is better than NeMo on both E
  and C; it is *clear* when on E or on C it is not better than NeMo by MIN_EFFECT (upper end of
  (F - NeMo) < MIN_EFFECT); undecided otherwise.

A baseline that does not beat both trivial rows (uniform random, ESConv rule-based schedule) on
its own objective in a setting is excluded there: its comparisons are reported, not counted
("ours beats B counts only where B beats the trivial row"). Setting verdict: not held when a
counted comparison is not better or a counted front point dominates; held when every counted
comparison is better and every counted front point is clear; inconclusive otherwise, or when
every baseline is excluded.

``advantage_under_sim2sim``: the same in both shifted settings (held only if held in both).

``forward_simulation_improves_credit``: NeMo against the same need-aware PPO on plain returns
(no forward simulation), on N in distribution: held when better, not held when not better,
inconclusive otherwise or when the plain learner does not beat both trivial rows on N.

Ideal row of every claim: ``planner_need`` (the best open-loop plan for N on the noise-free
simulator, knowing the user) in NeMo's place; trivial row: the stronger (on N, per setting) of
the two trivial policies in NeMo's place. Both go through the same predicate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from repro26.core import tables
from repro26.core.claims import Claim
from repro26.core.method import claim_set
from repro26.core.stats import summary

METRICS = ("emo_improvement", "cog_improvement", "need_weighted")
SHORT = {"emo_improvement": "E", "cog_improvement": "C", "need_weighted": "N"}
MIN_EFFECT = 0.01  # 1% of the [0, 1] score range: the smallest improvement worth the name
LEVEL = 0.90  # two-sided level whose ends are the one-sided 95% bounds
# the emotion weight w of each fixed scalarisation w E + (1 - w) C (repro26.nemo.train.FIXED)
FRONT = {"emotion_only": 1.0, "fixed_75": 0.75, "fixed_50": 0.5, "fixed_25": 0.25,
         "cognition_only": 0.0}
# single-objective baseline -> (its own objective, the objective it does not optimise)
SINGLE = {"emotion_only": ("emo_improvement", "cog_improvement"),
          "cognition_only": ("cog_improvement", "emo_improvement")}
IDEAL_FOR = {"emo_improvement": "planner_emo", "cog_improvement": "planner_cog",
             "need_weighted": "planner_need"}
TRIVIAL = ("random", "rule_based")
PLAIN = "nemo_plain"
SETTINGS_IN = ("in_distribution",)
SETTINGS_SHIFT = ("shifted_personas", "alt_family")
SETTINGS = SETTINGS_IN + SETTINGS_SHIFT
ROW_METHODS = (*FRONT, PLAIN, "nemo_one_step", *TRIVIAL, *IDEAL_FOR.values())
BUDGET_MODELS = ("nemo", *FRONT, PLAIN)
BUDGET_KEYS = {"optimiser_steps": "optimiser_steps", "data_seen": "dialogues",
               "env_steps": "env_steps"}

Rows = Mapping[str, Mapping[str, Mapping[str, Sequence[float]]]]  # method -> setting -> metric


# --------------------------------------------------------------------------- paired tests
def compare(a: Sequence[float], b: Sequence[float]) -> dict:
    """One-sided paired comparison of a against b: summary of a - b and its status."""
    s = summary(np.asarray(a, float) - np.asarray(b, float), level=LEVEL)
    lo, hi = s["ci95"]
    s["ci_level"] = "one-sided 95% (two-sided 90%)"
    s["status"] = "better" if lo > 0 else "not better" if hi < MIN_EFFECT else "undecided"
    return s


def own_value(row: Mapping[str, Sequence[float]], w: float) -> np.ndarray:
    """A fixed scalarisation's own objective w E + (1 - w) C, per seed."""
    return (w * np.asarray(row["emo_improvement"], float)
            + (1 - w) * np.asarray(row["cog_improvement"], float))


def strongest_trivial(rows: Rows, setting: str) -> str:
    """The trivial policy with the larger mean N in ``setting``."""
    return max(TRIVIAL, key=lambda t: float(np.mean(rows[t][setting]["need_weighted"])))


def judge_setting(nemo: Mapping[str, Sequence[float]], rows: Rows, setting: str) -> dict:
    """The three-valued verdict of ``improves_both_user_states`` in one setting and every
    comparison it rests on (``nemo``: metric -> per-seed values of the row in NeMo's place)."""
    at = {m: rows[m][setting] for m in rows}
    gate = {}
    for base, w in FRONT.items():
        gate[base] = {t: compare(own_value(at[base], w), own_value(at[t], w)) for t in TRIVIAL}
        gate[base]["beats_trivial"] = all(gate[base][t]["status"] == "better" for t in TRIVIAL)
    excluded = [b for b in FRONT if not gate[b]["beats_trivial"]]
    required, reported = {}, {}
    for base, (own, other) in SINGLE.items():
        for metric in ("need_weighted", other, own):
            c = compare(nemo[metric], at[base][metric])
            room = compare(at[IDEAL_FOR[metric]][metric], at[base][metric])
            c["improvement_possible"] = bool(room["ci95"][0] > MIN_EFFECT)
            c["ideal_minus_baseline"] = {k: room[k] for k in ("mean", "ci95")}
            required_here = (metric != own and c["improvement_possible"]
                             and base not in excluded)
            (required if required_here else reported)[f"{base}.{SHORT[metric]}"] = c
    front = {}
    for base in FRONT:
        e = compare(at[base]["emo_improvement"], nemo["emo_improvement"])
        c = compare(at[base]["cog_improvement"], nemo["cog_improvement"])
        dominates = e["status"] == "better" and c["status"] == "better"
        clear = e["ci95"][1] < MIN_EFFECT or c["ci95"][1] < MIN_EFFECT
        front[base] = {"front_minus_nemo.E": e, "front_minus_nemo.C": c,
                       "status": "excluded" if base in excluded else
                       "dominates" if dominates else "clear" if clear else "undecided"}
    statuses = [c["status"] for c in required.values()]
    counted = [f["status"] for f in front.values() if f["status"] != "excluded"]
    if not counted:
        verdict = "inconclusive"
    elif "not better" in statuses or "dominates" in counted:
        verdict = "not held"
    elif all(s == "better" for s in statuses) and all(f == "clear" for f in counted):
        verdict = "held"
    else:
        verdict = "inconclusive"
    return {"verdict": verdict, "required": required, "reported": reported, "front": front,
            "excluded": excluded, "baselines_vs_trivial": gate}


def judge_credit(nemo: Mapping[str, Sequence[float]], rows: Rows) -> dict:
    """``forward_simulation_improves_credit`` in distribution: NeMo vs plain returns on N."""
    at = {m: rows[m]["in_distribution"] for m in rows}
    gate = {t: compare(at[PLAIN]["need_weighted"], at[t]["need_weighted"]) for t in TRIVIAL}
    c = compare(nemo["need_weighted"], at[PLAIN]["need_weighted"])
    findings = {SHORT[m]: compare(nemo[m], at[PLAIN][m]) for m in METRICS[:2]}
    if not all(g["status"] == "better" for g in gate.values()):
        verdict = "inconclusive"
    else:
        verdict = {"better": "held", "not better": "not held"}.get(c["status"], "inconclusive")
    return {"verdict": verdict, "nemo_minus_plain.N": c, "findings": findings,
            "plain_vs_trivial": gate}


# --------------------------------------------------------------------------- measured numbers
def collect(table, methods: Sequence[str], settings: Sequence[str]) -> dict:
    """method -> setting -> metric -> per-seed values (sorted by seed)."""
    return {m: {s: {k: tables.per_seed(table, k, method=m, setting=s).tolist() for k in METRICS}
                for s in settings} for m in methods}


def budgets(learning) -> dict:
    """Per model: the training totals of one seed, summed from the learning curve (equal over
    seeds), and the parameter count."""
    out = {}
    for model in BUDGET_MODELS:
        seed = tables.unique(learning, "seed", method=model)[0]
        sel = tables.select(learning, method=model, seed=seed)
        out[model] = {k: float(np.sum(sel[col])) for k, col in BUDGET_KEYS.items()}
        out[model]["parameters"] = float(sel["parameters"][0])
    return out


def _settings_verdict(verdicts: Sequence[str]) -> str:
    if "not held" in verdicts:
        return "not held"
    return "held" if all(v == "held" for v in verdicts) else "inconclusive"


def _both_decision(m: Mapping, settings: Sequence[str]) -> tuple[str, dict]:
    per = {s: judge_setting(m["nemo"][s], m["rows"], s) for s in settings}
    return _settings_verdict([p["verdict"] for p in per.values()]), per


def _mde(per: Mapping[str, dict]) -> float:
    """Half-width of the widest one-sided interval among the comparisons with the baselines and
    the front tests (counted or not): a true difference of this size would have been decided."""
    halves = [(c["ci95"][1] - c["ci95"][0]) / 2 for p in per.values()
              for c in (*p["required"].values(), *p["reported"].values())]
    halves += [(f[k]["ci95"][1] - f[k]["ci95"][0]) / 2 for p in per.values()
               for f in p["front"].values() for k in ("front_minus_nemo.E", "front_minus_nemo.C")]
    return max(halves)


def _reason(per: Mapping[str, dict]) -> str | None:
    reasons = []
    for name, p in per.items():
        if p["verdict"] != "inconclusive":
            continue
        open_ = [k for k, c in p["required"].items() if c["status"] == "undecided"]
        open_ += [f"front {b}" for b, f in p["front"].items() if f["status"] == "undecided"]
        if len(p["excluded"]) == len(FRONT):
            reasons.append(f"{name}: no baseline beats both trivial rows on its own objective, "
                           "so no comparison counts")
        elif open_:
            reasons.append(f"{name}: undecided at MIN_EFFECT {MIN_EFFECT}: {', '.join(open_)}")
    return "; ".join(reasons) or None


def _override(rows: Rows, pick) -> dict:
    """The row to put in NeMo's place, per setting: ``pick(setting)`` names the method."""
    return {"nemo": {s: rows[pick(s)][s] for s in SETTINGS}}


BOTH_CRITERION = (
    "per setting, paired over seeds with one-sided 95% bounds: NeMo better than emotion-only "
    "and cognition-only on the need-weighted satisfaction N and on the objective each does not "
    "optimise, where the planner optimum for that metric beats the baseline by > "
    f"{MIN_EFFECT}; no point of the fixed-scalarisation front (w = 1, 0.75, 0.5, 0.25, 0) better "
    f"than NeMo on both E and C, each clear (not better by {MIN_EFFECT} on E or on C); a "
    "baseline that does not beat both trivial rows on its own objective in a setting is "
    "excluded there (reported, not counted)")
COMPARED = {"trivial": "uniform random strategies; ESConv rule-based stage schedule",
            "baselines": "the same PPO on fixed scalarisations w E + (1 - w) C, w = 1 "
                         "(emotion only), 0.75, 0.5, 0.25, 0 (cognition only)",
            "ideal": "planner optima on the noise-free simulator for E, C and N"}
IDEAL_NOTE = ("planner_need in NeMo's place: the best open-loop plan for the need-weighted "
              "satisfaction N found by beam search on the noise-free simulator of the setting, "
              "knowing the user's persona and opening state; played on the same users with the "
              "same random numbers")
TRIVIAL_NOTE = "the stronger on N (per setting) of uniform random and the rule-based schedule"
BUDGET_NOTE = {"env_steps": "forward simulation is NeMo's mechanism: each visited state is "
                            "expanded for every strategy over H turns in the simulator; the "
                            "plain-return learner plays the same dialogues and takes no "
                            "simulator turns beyond them"}


def _both_claim(cid: str, statement: str, paper: str, m: dict, settings: Sequence[str],
                note: str, budget: dict) -> Claim:
    verdict, per = _both_decision(m, settings)
    rows = m["rows"]
    return Claim.check(
        cid, statement, paper, {**m, "settings": per},
        lambda mm: _both_decision(mm, settings)[0] == "held",
        BOTH_CRITERION + ("" if len(settings) == 1 else "; held only if held in every setting"),
        note, compared_with=COMPARED,
        inconclusive_if=lambda _: _reason(per) if verdict == "inconclusive" else None,
        min_detectable_effect=_mde(per), effect=MIN_EFFECT,
        ideal=_override(rows, lambda s: "planner_need"), ideal_note=IDEAL_NOTE,
        trivial=_override(rows, lambda s: strongest_trivial(rows, s)), trivial_note=TRIVIAL_NOTE,
        budget=budget)


def measured_rows(table) -> dict:
    return {"nemo": collect(table, ["nemo"], SETTINGS)["nemo"],
            "rows": collect(table, ROW_METHODS, SETTINGS),
            "need_shift": {s: summary(tables.per_seed(table, "need_shift", method="random",
                                                      setting=s)) for s in SETTINGS}}


def both_metrics_claim(table, learning) -> Claim:
    budget = {k: v for k, v in budgets(learning).items() if k != PLAIN}
    return _both_claim(
        "improves_both_user_states",
        "NeMo improves the user-side state metrics (need-weighted satisfaction; emotional "
        "relief and cognitive growth) over single-objective baselines, and is not dominated by "
        "fixed scalarisations.",
        "NeMo consistently improves user-side state metrics (abstract)",
        measured_rows(table), SETTINGS_IN,
        "In-distribution MindFlow users. need_shift: fraction of dialogues of the random policy "
        "in which the user's dominant need switches at least once.", budget)


def sim2sim_claim(table, learning) -> Claim:
    budget = {k: v for k, v in budgets(learning).items() if k != PLAIN}
    return _both_claim(
        "advantage_under_sim2sim",
        "NeMo's advantage on the user-side state metrics holds under Sim2Sim shift (shifted "
        "persona distribution; a differently structured simulator family).",
        "robust generalization under Sim2Sim (abstract)",
        measured_rows(table), SETTINGS_SHIFT,
        "Policies are trained on in-distribution MindFlow only; the planner plans on each "
        "setting's own noise-free simulator.", budget)


def credit_claim(table, learning) -> Claim:
    m = measured_rows(table)
    rows = m["rows"]
    decision = judge_credit(m["nemo"]["in_distribution"], rows)
    budget = {k: v for k, v in budgets(learning).items() if k in ("nemo", PLAIN)}
    c = decision["nemo_minus_plain.N"]

    def reason(_):
        if decision["verdict"] != "inconclusive":
            return None
        if not all(g["status"] == "better" for g in decision["plain_vs_trivial"].values()):
            return "the plain-return learner does not beat both trivial rows on N"
        return f"the interval of NeMo - plain on N spans 0 and {MIN_EFFECT}"

    return Claim.check(
        "forward_simulation_improves_credit",
        "Forward simulation (step-level credit from local multi-turn effects) improves on the "
        "same need-aware PPO trained on plain returns.",
        "By converting delayed, multi-dimensional feedback into step-level optimization "
        "signals, NeMo improves credit assignment (abstract)",
        {**m, "decision": decision},
        lambda mm: judge_credit(mm["nemo"]["in_distribution"], mm["rows"])["verdict"] == "held",
        f"paired over seeds, in distribution: one-sided 95% lower bound of N(NeMo) - "
        f"N(plain returns) > 0 (held), upper bound < {MIN_EFFECT} (not held); inconclusive "
        "otherwise or when the plain learner does not beat both trivial rows on N",
        "Findings: the same difference on E and on C.",
        compared_with={"trivial": COMPARED["trivial"],
                       "baselines": "need-aware PPO on plain returns-to-go of the need-weighted "
                                    "reward (same network, optimiser, iterations, dialogues)",
                       "ideal": "planner optimum for N"},
        inconclusive_if=reason, min_detectable_effect=(c["ci95"][1] - c["ci95"][0]) / 2,
        effect=MIN_EFFECT,
        ideal=_override(rows, lambda s: "planner_need"), ideal_note=IDEAL_NOTE,
        trivial=_override(rows, lambda s: strongest_trivial(rows, s)), trivial_note=TRIVIAL_NOTE,
        budget=budget, budget_note=BUDGET_NOTE)


@claim_set("tables/returns.csv", "tables/learning.csv")
def CLAIMS(run) -> list[Claim]:
    table = tables.read(run.input("returns.csv"))
    learning = tables.read(run.input("learning.csv"))
    return [both_metrics_claim(table, learning), sim2sim_claim(table, learning),
            credit_claim(table, learning)]
