"""Every claim predicate on synthetic tables that make it held, not held and inconclusive."""

import numpy as np
import pytest

from repro26.progress_advantage import claims as C

SEEDS = np.arange(8)
NOISE = np.random.default_rng(0).normal(0, 0.002, 8)


def _scores(values: dict[str, float], scale=0.002, seed=0):
    """Application scores with every scorer at ``values`` plus independent per-seed noise."""
    rng = np.random.default_rng(seed)
    base = {"random": 0.5, "position": 0.5, "logprob": 0.6, "self_certainty": 0.6,
            "step_prob": 0.6, "prm": 0.6, "orm": 0.6, "pa": 0.6, **values}
    out = {}
    for app in C.APPLICATIONS:
        out[app] = {k: v + rng.normal(0, scale, 8) for k, v in base.items()}
        if app == "attribution":
            out[app].pop("orm")
    return out


def test_beats_confidence_held_not_held_inconclusive():
    assert C.beats_confidence_claim(_scores({"pa": 0.7})).verdict == "held"
    assert C.beats_confidence_claim(_scores({"pa": 0.55})).verdict == "not held"
    assert C.beats_confidence_claim(_scores({"pa": 0.62}, 0.02)).verdict == "inconclusive"
    # a baseline no better than random does not count; with none counted: inconclusive
    none = {"logprob": 0.5, "self_certainty": 0.5, "step_prob": 0.5, "pa": 0.7}
    assert C.beats_confidence_claim(_scores(none)).verdict == "inconclusive"


def test_matches_reward_models_held_not_held_inconclusive():
    assert C.matches_reward_models_claim(_scores({"pa": 0.595})).verdict == "held"
    assert C.matches_reward_models_claim(_scores({"pa": 0.5, "prm": 0.7, "orm": 0.7})).verdict == "not held"
    assert C.matches_reward_models_claim(_scores({"pa": 0.59}, 0.02)).verdict == "inconclusive"


def _tabular(corr):
    corr = np.asarray(corr, float)
    n = corr.size
    return {"seed": np.arange(n), "steps": np.full(n, 100), "corr_learned": corr,
            "corr_closed_form": np.ones(n), "max_abs_err_closed_form": np.zeros(n),
            "slope_learned": np.ones(n), "corr_unregularised": np.full(n, 0.5),
            "corr_random": np.random.default_rng(0).normal(0, 0.1, n)}


@pytest.mark.parametrize("corr,verdict", [
    (0.997 + NOISE / 10, "held"),
    (0.95 + NOISE, "not held"),
    (0.99 + np.random.default_rng(3).normal(0, 0.01, 8), "inconclusive"),
])
def test_tabular_identity_verdicts(corr, verdict):
    assert C.tabular_claim(_tabular(corr)).verdict == verdict
