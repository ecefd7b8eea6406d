"""Each srgw claim predicate flips: a synthetic table that makes it held, one that makes it not."""

import numpy as np
import pytest

from repro26.srgw import claims

NS = [100, 200, 500, 1000]
SEEDS = [0, 1, 2]


def fits_table(srgw_exponent=-1.0, srgw_scale=1.0, gap_factor=0.0, spread=0.01):
    """One SBM: srGW's MSE = srgw_scale * n^exponent, edge density flat at 0.05, USVT a bit
    better; gaps = gap_factor * bound."""
    rows = []
    for n in NS:
        for seed in SEEDS:
            noise = (1 + spread * seed) ** (np.log(n) if seed else 1)  # slope spread over seeds
            bound = 1.0 / n
            base = {"family": "sbm", "kind": "sbm", "n": n, "seed": seed, "K": 3, "K_theory": 3}
            rows.append({**base, "estimator": "srgw", "mse": srgw_scale * noise * n ** srgw_exponent,
                         "gap": gap_factor * bound, "gap_bound": bound, "fractional_rows": 0.0})
            rows.append({**base, "estimator": "density", "mse": 0.05, "gap": np.nan,
                         "gap_bound": np.nan, "fractional_rows": np.nan})
            for est in ("usvt", "sas", "nh", "sc"):
                rows.append({**base, "estimator": est, "mse": 0.5 * noise * n ** srgw_exponent,
                             "gap": np.nan, "gap_bound": np.nan, "fractional_rows": np.nan})
    return {k: np.asarray([r[k] for r in rows]) for k in rows[0]}


@pytest.mark.parametrize(("gap_factor", "verdict"), [(0.0, "held"), (0.9, "held"), (1.5, "not held")])
def test_gap_claim_is_one_sided_against_the_bound(gap_factor, verdict):
    assert claims.gap_claim(fits_table(gap_factor=gap_factor)).verdict == verdict


@pytest.mark.parametrize(("exponent", "scale", "verdict"), [
    (-1.5, 1.0, "held"),      # faster than the SBM rate (slope about -1): one-sided, held
    (-0.3, 1.0, "not held"),  # much slower than the rate
    (-1.5, 1e4, "not held"),  # right slope, but worse than the trivial edge density at largest n
])
def test_rate_claim_needs_the_rate_and_beating_the_trivial_estimator(exponent, scale, verdict):
    """(The seeds' slopes differ by 0.01 and 0.02: a narrow CI.)"""
    claim = claims.rate_claim(fits_table(srgw_exponent=exponent, srgw_scale=scale))
    assert claim.verdict == verdict
    assert claim.compared_with["trivial"].startswith("edge density")
    # USVT is better here in every case: a finding, never a criterion
    assert not claim.measured["families"]["sbm"]["finding_below_usvt"]


def pot_table(ratio, speedup):
    return {"n": np.array([200, 1000, 1000]), "objective_ratio": np.array([1.0, ratio, 1.0]),
            "speedup": np.array([0.5, speedup, speedup])}


@pytest.mark.parametrize(("ratio", "speedup", "verdict"), [
    (1.001, 3.0, "held"), (1.05, 3.0, "not held"), (1.0, 0.8, "not held")])
def test_pot_claim_flips(ratio, speedup, verdict):
    assert claims.pot_claim(pot_table(ratio, speedup)).verdict == verdict


def test_rate_claim_is_inconclusive_when_the_slope_ci_straddles_the_threshold():
    # slopes -1.3, -0.6, -0.2 around a threshold near -0.8: a CI that includes it
    claim = claims.rate_claim(fits_table(srgw_exponent=-1.3, srgw_scale=0.01, spread=1.0))
    assert claim.verdict == "inconclusive" and "straddles" in claim.inconclusive_reason
    assert claim.min_detectable_effect > 0.5
