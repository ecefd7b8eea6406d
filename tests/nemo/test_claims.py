"""Claim predicates on synthetic returns tables: each verdict reachable (held / not held /
inconclusive)."""

import numpy as np
import pytest

from repro26.nemo import claims
from repro26.nemo.evaluate import SETTINGS

SEEDS = 8


def table(means: dict[str, tuple[float, float]], noise=0.005, shift_means=None):
    """Rows (method, seed, setting) with per-seed noise around the given (emo, cog) means."""
    rng = np.random.default_rng(0)
    rows = {k: [] for k in ("method", "seed", "setting", "emo_improvement", "cog_improvement")}
    for setting in SETTINGS:
        use = shift_means if (shift_means and setting != "in_distribution") else means
        for method, (emo, cog) in use.items():
            for seed in range(SEEDS):
                rows["method"].append(method)
                rows["seed"].append(seed)
                rows["setting"].append(setting)
                rows["emo_improvement"].append(emo + noise * rng.standard_normal())
                rows["cog_improvement"].append(cog + noise * rng.standard_normal())
    return {k: np.asarray(v) for k, v in rows.items()}


GOOD = {"nemo": (0.40, 0.40), "emotion_only": (0.35, 0.20), "cognition_only": (0.15, 0.35),
        "fixed_linear": (0.33, 0.33), "random": (0.25, 0.15), "rule_based": (0.3, 0.25)}


def verdicts(t):
    return [c.verdict for c in (claims.both_metrics_claim(t), claims.sim2sim_claim(t))]


def test_held_when_nemo_beats_every_baseline_on_both_metrics():
    assert verdicts(table(GOOD)) == ["held", "held"]


def test_not_held_when_a_single_objective_baseline_wins_its_own_objective():
    bad = {**GOOD, "emotion_only": (0.45, 0.20)}
    assert verdicts(table(bad)) == ["not held", "not held"]
    # only the shifted settings fail: the first claim holds, the second does not
    assert verdicts(table(GOOD, shift_means=bad)) == ["held", "not held"]


def test_inconclusive_when_a_baseline_does_not_beat_random():
    weak = {**GOOD, "cognition_only": (0.15, 0.14)}
    claim = claims.both_metrics_claim(table(weak))
    assert claim.verdict == "inconclusive" and "cognition_only" in claim.inconclusive_reason


def test_inconclusive_when_the_ci_straddles_the_effect():
    close = {**GOOD, "fixed_linear": (0.395, 0.33)}
    claim = claims.both_metrics_claim(table(close, noise=0.05))
    assert claim.verdict == "inconclusive" and "fixed_linear" in claim.inconclusive_reason


@pytest.mark.parametrize("delta,expected", [(0.02, "better"), (-0.02, "not better")])
def test_comparison_status_is_one_sided(delta, expected):
    m = {**GOOD, "fixed_linear": (0.40 - delta, 0.33)}
    status = claims.compare_setting(table(m), "in_distribution")["comparisons"]
    assert status["fixed_linear.emo_improvement"]["status"] == expected
