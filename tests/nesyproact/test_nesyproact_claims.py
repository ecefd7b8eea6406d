"""Each nesyproact claim predicate flips: synthetic summary tables that make it held, not held
and inconclusive."""

import numpy as np
import pytest

from repro26.nesyproact import claims

DOMAINS = ["shop", "forum", "map"]
SEEDS = range(8)


def summary(gain=0.2, weak_gain=0.2, asi=0.5, random=0.05, spread=0.02, bad_domain=None,
            bad_gain=None):
    """Success per (domain, agent, policy, seed) at scales 0 and 1: ASI at ``asi``, NesyProAct
    at ``asi + gain`` (``bad_gain`` in ``bad_domain``), seed noise of size ``spread``."""
    rows = []
    for policy, g in (("strong", gain), ("weak", weak_gain)):
        for scale in (0.0, 1.0):
            for seed in SEEDS:
                noise = spread * ((seed % 3) - 1)
                for d in [*DOMAINS, "all"]:
                    gd = bad_gain if d == bad_domain else g
                    values = {"random": random, "react": asi - 0.1, "asi": asi + noise,
                              "nesyproact": asi + gd + 2 * noise}
                    for agent, v in values.items():
                        rows.append({"domain": d, "agent": agent, "policy": policy,
                                     "seed": seed, "fault_scale": scale, "success": v})
    return {k: np.asarray([r[k] for r in rows]) for k in rows[0]}


@pytest.mark.parametrize(("kwargs", "verdict"), [
    ({}, "held"),
    ({"gain": -0.05}, "not held"),
    ({"bad_domain": "map", "bad_gain": -0.1}, "not held"),  # one domain loses
    ({"bad_domain": "map", "bad_gain": 0.0, "spread": 0.1}, "inconclusive"),  # straddles 0
    ({"asi": 0.05, "random": 0.2}, "inconclusive"),  # ASI below random: does not count
])
def test_all_domains_claim(kwargs, verdict):
    claim = claims.all_domains_claim(summary(**kwargs), "strong", 1.0)
    assert claim.verdict == verdict, claim.inconclusive_reason
    assert claim.compared_with["trivial"].startswith("random")
    assert set(claim.measured["by_domain"]) == set(DOMAINS)


@pytest.mark.parametrize(("weak_gain", "spread", "verdict"), [
    (0.1, 0.02, "held"), (-0.1, 0.02, "not held"), (0.01, 0.2, "inconclusive")])
def test_weak_policy_claim(weak_gain, spread, verdict):
    claim = claims.weak_policy_claim(summary(weak_gain=weak_gain, spread=spread), "weak", 1.0)
    assert claim.verdict == verdict
    assert claim.measured["overall"]["mean"] == pytest.approx(weak_gain, abs=0.05)


def test_one_sided_bounds_match_scipy():
    from scipy import stats

    d = np.array([0.1, 0.3, -0.05, 0.2, 0.15])
    g = claims.one_sided(d)
    res = stats.ttest_1samp(d, 0.0, alternative="greater")
    ci = res.confidence_interval(0.95)
    assert g["lower95"] == pytest.approx(ci.low)
