"""Each nesyproact claim predicate flips: synthetic summary tables that make it held, not held
and inconclusive, judged on the whole fault sweep, with the ideal and trivial rows."""

import numpy as np
import pytest

from repro26.core.claims import CANNOT_SHOW
from repro26.nesyproact import claims

DOMAINS = ["shop", "forum", "map"]
SEEDS = range(8)
SCALES = (0.0, 1.0)


def summary(gain=0.2, weak_gain=0.2, asi=0.5, random=0.05, spread=0.02, bad_domain=None,
            bad_gain=None, bad_scale=None, ideal_gain=0.3):
    """Success per (domain, agent, policy, seed, scale): ASI(strong) at ``asi``;
    NesyProAct(strong) at ``asi + gain`` (``bad_gain`` in ``bad_domain`` or at ``bad_scale``),
    NesyProAct(weak) at ``asi + weak_gain``, NesyProAct(ideal) at ``asi + ideal_gain``; ASI
    with the weak policy 0.1 lower; seed noise of size ``spread``."""
    rows = []
    for policy in ("strong", "weak", "ideal"):
        for scale in SCALES:
            for seed in SEEDS:
                noise = spread * ((seed % 3) - 1)
                for d in [*DOMAINS, "all"]:
                    bad = bad_gain is not None and (d == bad_domain or scale == bad_scale)
                    g = {"strong": bad_gain if bad else gain, "weak": weak_gain,
                         "ideal": ideal_gain}[policy]
                    values = {"random": random, "react": asi - 0.1,
                              "asi": asi + noise - 0.1 * (policy == "weak"),
                              "nesyproact": asi + g + 2 * noise}
                    for agent, v in values.items():
                        rows.append({"domain": d, "agent": agent, "policy": policy,
                                     "seed": seed, "fault_scale": scale, "success": v,
                                     "budget": 12.0, "steps": 8.0,
                                     "policy_calls": 6.0 if agent == "nesyproact" else 3.0})
    return {k: np.asarray([r[k] for r in rows]) for k in rows[0]}


@pytest.mark.parametrize(("kwargs", "verdict"), [
    ({}, "held"),
    ({"gain": -0.05}, "not held"),
    ({"bad_domain": "map", "bad_gain": -0.1}, "not held"),  # one domain loses
    ({"bad_scale": 0.0, "bad_gain": -0.1}, "not held"),  # one fault scale loses
    ({"bad_domain": "map", "bad_gain": 0.0, "spread": 0.1}, "inconclusive"),  # straddles 0
    ({"asi": 0.05, "random": 0.2}, "inconclusive"),  # ASI below random: does not count
])
def test_all_domains_claim(kwargs, verdict):
    claim = claims.all_domains_claim(summary(**kwargs), "strong", "ideal")
    assert claim.verdict == verdict, claim.inconclusive_reason
    assert claim.compared_with["trivial"].startswith("random")
    assert set(claim.measured["by_scale"][1.0]["by_domain"]) == set(DOMAINS)
    assert claim.ideal_passes and claim.trivial_passes is ("random" in kwargs)
    if verdict == "inconclusive":
        assert claim.min_detectable_effect > 0 and claim.effect == claims.PAPER_GAIN["strong"]


def test_an_ideal_that_does_not_beat_asi_means_the_task_cannot_show_it():
    claim = claims.all_domains_claim(summary(ideal_gain=-0.05), "strong", "ideal")
    assert claim.verdict == "inconclusive" and claim.inconclusive_reason == CANNOT_SHOW
    assert claim.measured["ideal_success"]["nesyproact"][1.0] == pytest.approx(0.45, abs=0.02)


@pytest.mark.parametrize(("weak_gain", "spread", "verdict"), [
    (0.1, 0.02, "held"), (-0.1, 0.02, "not held"), (0.01, 0.2, "inconclusive")])
def test_weak_policy_claim_compares_with_asi_strong(weak_gain, spread, verdict):
    claim = claims.weak_policy_claim(summary(weak_gain=weak_gain, spread=spread), "weak",
                                     "strong", "ideal")
    assert claim.verdict == verdict
    # against ASI with the strong policy, not ASI(weak) (which sits 0.1 lower)
    assert claim.measured["by_scale"][1.0]["overall"]["mean"] == pytest.approx(weak_gain, abs=0.05)
    same = claim.measured["finding_same_policy_gain"][1.0]["mean"]
    assert same == pytest.approx(weak_gain + 0.1, abs=0.05)
    assert "samples" in claim.budget_note


def test_one_sided_bounds_match_scipy():
    from scipy import stats

    d = np.array([0.1, 0.3, -0.05, 0.2, 0.15])
    g = claims.one_sided(d)
    res = stats.ttest_1samp(d, 0.0, alternative="greater")
    ci = res.confidence_interval(0.95)
    assert g["lower95"] == pytest.approx(ci.low)
