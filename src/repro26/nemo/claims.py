"""The abstract's two claims on the user-side state metrics, as predicates over tables/returns.csv.

Both are tested per setting with paired differences over seeds (the same evaluation users for
every method): for each baseline B in (emotion only, cognition only, fixed linear) and each
metric m in (emotional, cognitive improvement), d_s = m(NeMo, s) - m(B, s). With the one-sided
95% interval of the mean of d (the two-sided 90% t-interval):

* better  — its lower end > 0;
* not better — its upper end < MIN_EFFECT (NeMo cannot be ahead by a meaningful margin);
* undecided — otherwise.

A setting's verdict: held when all six comparisons are better, not held when any is not better,
inconclusive otherwise — or when a baseline does not beat the random policy on its own objective
(its emotional, cognitive, or equally weighted improvement, same one-sided test), since then the
comparison with it does not count (DESIGN.md, "Claims that decide"). Improving both metrics at
once is the claim: a single-objective baseline that wins on its own objective makes it not held.
"""

from __future__ import annotations

import numpy as np

from repro26.core import tables
from repro26.core.claims import Claim
from repro26.core.method import claim_set
from repro26.core.stats import summary

BASELINES = ("emotion_only", "cognition_only", "fixed_linear")
METRICS = ("emo_improvement", "cog_improvement")
MIN_EFFECT = 0.01  # 1% of the [0, 1] score range: the smallest improvement worth the name
LEVEL = 0.90  # two-sided level whose lower end is the one-sided 95% bound
# what each baseline optimises: the weights of its own objective (emotion, cognition)
OWN_OBJECTIVE = {"emotion_only": (1.0, 0.0), "cognition_only": (0.0, 1.0),
                 "fixed_linear": (0.5, 0.5)}
SETTINGS_SHIFT = ("shifted_personas", "alt_family")


def _paired(table, value, a: str, b: str, setting: str) -> np.ndarray:
    return (tables.per_seed(table, value, method=a, setting=setting)
            - tables.per_seed(table, value, method=b, setting=setting))


def _weighted(table, method, setting, weights) -> np.ndarray:
    return sum(w * tables.per_seed(table, m, method=method, setting=setting)
               for w, m in zip(weights, METRICS))


def compare_setting(table, setting: str) -> dict:
    """NeMo vs each baseline on both metrics, the baselines vs random, and trivial-row findings."""
    comparisons = {}
    for base in BASELINES:
        for metric in METRICS:
            s = summary(_paired(table, metric, "nemo", base, setting), level=LEVEL)
            lo, hi = s["ci95"]
            s["ci_level"] = "one-sided 95% (two-sided 90%)"
            s["status"] = "better" if lo > 0 else "not better" if hi < MIN_EFFECT else "undecided"
            comparisons[f"{base}.{metric}"] = s
    gate = {}
    for base, weights in OWN_OBJECTIVE.items():
        diff = _weighted(table, base, setting, weights) - _weighted(table, "random", setting,
                                                                    weights)
        s = summary(diff, level=LEVEL)
        s["beats_random"] = bool(s["ci95"][0] > 0)
        gate[base] = s
    findings = {f"nemo_minus_{triv}.{metric}": summary(_paired(table, metric, "nemo", triv,
                                                               setting), level=LEVEL)
                for triv in ("random", "rule_based") for metric in METRICS}
    statuses = [c["status"] for c in comparisons.values()]
    if "not better" in statuses:
        verdict = "not held"
    elif not all(g["beats_random"] for g in gate.values()):
        verdict = "inconclusive"
    elif all(s == "better" for s in statuses):
        verdict = "held"
    else:
        verdict = "inconclusive"
    return {"verdict": verdict, "comparisons": comparisons, "baselines_vs_random": gate,
            "findings_vs_trivial": findings, "seeds": int(len(tables.per_seed(
                table, METRICS[0], method="nemo", setting=setting)))}


def _reason(measured: dict) -> str | None:
    """Why the claim's settings are inconclusive (None when they are decided)."""
    settings = measured["settings"]
    if any(s["verdict"] == "not held" for s in settings.values()):
        return None
    reasons = []
    for name, s in settings.items():
        if s["verdict"] != "inconclusive":
            continue
        weak = [b for b, g in s["baselines_vs_random"].items() if not g["beats_random"]]
        open_ = [k for k, c in s["comparisons"].items() if c["status"] == "undecided"]
        if weak:
            reasons.append(f"{name}: {', '.join(weak)} do not beat random on their own "
                           "objective, so the comparison does not count")
        if open_:
            reasons.append(f"{name}: the CI of {', '.join(open_)} spans 0 and {MIN_EFFECT}")
    return "; ".join(reasons) or None


def _mde(settings: dict) -> float:
    return max((c["ci95"][1] - c["ci95"][0]) / 2 for s in settings.values()
               for c in s["comparisons"].values())


CRITERION = (f"paired over seeds, for every baseline in {', '.join(BASELINES)} and both the "
             f"emotional and the cognitive improvement: the one-sided 95% lower bound of "
             f"mean(NeMo - baseline) > 0 (held); not held if any one-sided upper bound is "
             f"< {MIN_EFFECT}; inconclusive otherwise, or when a baseline does not beat the "
             "random policy on its own objective")


def both_metrics_claim(table) -> Claim:
    settings = {"in_distribution": compare_setting(table, "in_distribution")}
    return Claim.check(
        "improves_both_user_states",
        "NeMo improves both user-side state metrics (emotional relief and cognitive growth) over "
        "single-objective and fixed-weight baselines.",
        "NeMo consistently improves user-side state metrics (abstract)",
        {"settings": settings},
        lambda m: m["settings"]["in_distribution"]["verdict"] == "held",
        CRITERION + " (in-distribution MindFlow users)",
        "Findings, not criteria: NeMo minus random and minus the rule-based schedule.",
        compared_with={"trivial": "random strategies; ESConv rule-based stage schedule",
                       "baselines": "emotion-only, cognition-only, fixed linear (0.5, 0.5) PPO"},
        inconclusive_if=_reason,
        min_detectable_effect=_mde(settings),
    )


def sim2sim_claim(table) -> Claim:
    settings = {s: compare_setting(table, s) for s in SETTINGS_SHIFT}
    return Claim.check(
        "advantage_under_sim2sim",
        "NeMo's advantage on both user-state metrics holds under Sim2Sim shift (shifted persona "
        "distribution; a differently structured simulator family).",
        "robust generalization under Sim2Sim (abstract)",
        {"settings": settings},
        lambda m: all(s["verdict"] == "held" for s in m["settings"].values()),
        CRITERION + ", in both shifted settings (held only if held in both)",
        "Policies are trained on in-distribution MindFlow only.",
        compared_with={"trivial": "random strategies; ESConv rule-based stage schedule",
                       "baselines": "emotion-only, cognition-only, fixed linear (0.5, 0.5) PPO"},
        inconclusive_if=_reason,
        min_detectable_effect=_mde(settings),
    )


@claim_set("tables/returns.csv")
def CLAIMS(run) -> list[Claim]:
    table = tables.read(run.input("returns.csv"))
    return [both_metrics_claim(table), sim2sim_claim(table)]
