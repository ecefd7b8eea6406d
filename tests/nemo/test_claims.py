"""Claim predicates on synthetic returns tables: each verdict reachable (held / not held /
inconclusive), the ideal and trivial rows, and the budget check."""

import numpy as np
import pytest

from repro26.core.claims import BY_CONSTRUCTION, CANNOT_SHOW
from repro26.nemo import claims
from repro26.nemo.names import SETTINGS

SEEDS = 8
# (E, C, N) per method
GOOD = {"nemo": (0.40, 0.30, 0.35), "nemo_plain": (0.35, 0.25, 0.30),
        "nemo_one_step": (0.36, 0.26, 0.31),
        "emotion_only": (0.45, 0.15, 0.25), "fixed_75": (0.38, 0.22, 0.28),
        "fixed_50": (0.32, 0.27, 0.29), "fixed_25": (0.25, 0.31, 0.26),
        "cognition_only": (0.15, 0.35, 0.20), "random": (0.30, 0.15, 0.25),
        "rule_based": (0.33, 0.20, 0.26), "planner_emo": (0.55, 0.10, 0.30),
        "planner_cog": (0.10, 0.45, 0.25), "planner_need": (0.45, 0.35, 0.45)}


def table(means, noise=0.005, shift_means=None):
    """Rows (method, seed, setting) with per-seed noise around the given (E, C, N) means."""
    rng = np.random.default_rng(0)
    rows = {k: [] for k in ("method", "seed", "setting", *claims.METRICS, "need_shift")}
    for setting in SETTINGS:
        use = shift_means if (shift_means and setting != "in_distribution") else means
        for method, values in use.items():
            for seed in range(SEEDS):
                rows["method"].append(method)
                rows["seed"].append(seed)
                rows["setting"].append(setting)
                for metric, v in zip(claims.METRICS, values):
                    rows[metric].append(v + noise * rng.standard_normal())
                rows["need_shift"].append(0.7)
    return {k: np.asarray(v) for k, v in rows.items()}


def learning(env_steps=None):
    rows = {k: [] for k in ("method", "seed", "iteration", "optimiser_steps", "dialogues",
                            "env_steps", "parameters")}
    for method in claims.BUDGET_MODELS:
        for seed in range(SEEDS):
            for it in range(3):
                rows["method"].append(method)
                rows["seed"].append(seed)
                rows["iteration"].append(it)
                rows["optimiser_steps"].append(4)
                rows["dialogues"].append(64)
                default = 100 if method == claims.PLAIN else 5000
                rows["env_steps"].append((env_steps or {}).get(method, default))
                rows["parameters"].append(1000)
    return {k: np.asarray(v) for k, v in rows.items()}


def verdicts(t, lt=None):
    lt = learning() if lt is None else lt
    return [c.verdict for c in (claims.both_metrics_claim(t, lt), claims.sim2sim_claim(t, lt),
                                claims.credit_claim(t, lt))]


def test_held_when_nemo_improves_where_possible_and_is_not_dominated():
    # emotion-only beats NeMo on its own objective E: reported, not required
    claim = claims.both_metrics_claim(table(GOOD), learning())
    assert claim.verdict == "held" and claim.ideal_passes and not claim.trivial_passes
    per = claim.measured["settings"]["in_distribution"]
    assert per["reported"]["emotion_only.E"]["status"] == "not better"
    assert set(per["required"]) == {"emotion_only.N", "emotion_only.C", "cognition_only.N",
                                    "cognition_only.E"}
    assert verdicts(table(GOOD)) == ["held", "held", "held"]


def test_not_held_when_a_single_objective_baseline_has_the_better_need_weighted_score():
    bad = {**GOOD, "nemo": (0.40, 0.30, 0.24)}
    assert verdicts(table(bad))[:2] == ["not held", "not held"]
    # only the shifted settings fail: the first claim holds, the second does not
    assert verdicts(table(GOOD, shift_means=bad))[:2] == ["held", "not held"]


def test_not_held_when_a_fixed_scalarisation_dominates():
    bad = {**GOOD, "fixed_50": (0.42, 0.32, 0.29)}
    claim = claims.both_metrics_claim(table(bad), learning())
    assert claim.verdict == "not held"
    assert claim.measured["settings"]["in_distribution"]["front"]["fixed_50"]["status"] \
        == "dominates"


def test_comparison_not_required_where_the_ideal_cannot_improve():
    flat = {**GOOD, "planner_cog": (0.10, 0.152, 0.25)}  # no more C than emotion-only's 0.15
    m = claims.measured_rows(table(flat))
    per = claims.judge_setting(m["nemo"]["in_distribution"], m["rows"], "in_distribution")
    assert "emotion_only.C" in per["reported"] and "emotion_only.C" not in per["required"]
    assert not per["reported"]["emotion_only.C"]["improvement_possible"]


def test_a_baseline_that_does_not_beat_the_trivial_rows_does_not_count():
    # cognition-only at random's C: its comparisons (and front point) are excluded, not counted
    weak = {**GOOD, "cognition_only": (0.15, 0.15, 0.20), "nemo": (0.40, 0.30, 0.35)}
    claim = claims.both_metrics_claim(table(weak), learning())
    per = claim.measured["settings"]["in_distribution"]
    assert per["excluded"] == ["cognition_only"] and claim.verdict == "held"
    assert "cognition_only.N" in per["reported"] and "cognition_only.N" not in per["required"]
    assert per["front"]["cognition_only"]["status"] == "excluded"
    # nothing beats the trivial rows: no comparison counts
    none = {**GOOD, **{b: GOOD["random"] for b in claims.FRONT}}
    claim = claims.both_metrics_claim(table(none), learning())
    assert claim.verdict == "inconclusive" and "no baseline" in claim.inconclusive_reason
    assert np.isfinite(claim.min_detectable_effect) and claim.effect == claims.MIN_EFFECT


def test_inconclusive_when_the_interval_straddles_the_effect():
    close = {**GOOD, "nemo": (0.40, 0.30, 0.262)}
    claim = claims.both_metrics_claim(table(close, noise=0.02), learning())
    assert claim.verdict == "inconclusive" and "emotion_only.N" in claim.inconclusive_reason
    assert claim.min_detectable_effect > 0.005


def test_inconclusive_when_even_the_ideal_fails():
    poor = {**GOOD, "planner_need": (0.2, 0.2, 0.2)}
    claim = claims.both_metrics_claim(table(poor), learning())
    assert claim.verdict == "inconclusive" and claim.inconclusive_reason == CANNOT_SHOW


def test_inconclusive_when_the_trivial_row_passes_too():
    # a front that beats the rule-based schedule on its own objectives without dominating it
    strong = {**GOOD, "rule_based": GOOD["nemo"], "fixed_75": (0.46, 0.20, 0.28),
              "fixed_50": (0.30, 0.42, 0.29), "fixed_25": (0.20, 0.45, 0.26)}
    claim = claims.both_metrics_claim(table(strong), learning())
    assert claim.verdict == "inconclusive" and claim.inconclusive_reason == BY_CONSTRUCTION


@pytest.mark.parametrize("plain,noise,expected", [((0.35, 0.25, 0.30), 0.005, "held"),
                                                  ((0.35, 0.25, 0.36), 0.005, "not held"),
                                                  ((0.35, 0.25, 0.20), 0.005, "inconclusive"),
                                                  ((0.35, 0.25, 0.34), 0.02, "inconclusive")])
def test_credit_claim_verdicts(plain, noise, expected):
    claim = claims.credit_claim(table({**GOOD, "nemo_plain": plain}, noise=noise), learning())
    assert claim.verdict == expected
    assert "env_steps" in claim.budget_note


def test_unequal_budget_without_a_note_is_refused():
    with pytest.raises(ValueError, match="env_steps"):
        claims.both_metrics_claim(table(GOOD), learning({"fixed_50": 2000}))
