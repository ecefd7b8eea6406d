"""Each srgw claim predicate flips: a synthetic table that makes it held, one that makes it not."""

import numpy as np
import pytest

from repro26.core import tables
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


def scaling_table(slope, ari=0.99, ns=(1000, 10_000, 100_000, 1_000_000), spread=0.1):
    """Wall seconds per iteration = 1e-7 n^slope, one sparse A @ T at 0.7 of it; POT dense rows;
    CPU-time rows of one job: ratio (n/n0)^slope to n0 = the smallest n >= 1e4, interval
    ± ``spread`` of it."""
    rows = [{"solver": "ours_sparse", "n": n, "iteration_s": 1e-7 * n**slope,
             "matmul_s": 7e-8 * n**slope, "time_s": 1e-6 * n**slope, "iterations": 8,
             "iteration_over_matmul": 1 / 0.7, "memory_mb": 1e-3 * n, "rss_peak_mb": 400.0,
             "ari": ari} for n in ns]
    rows += [{"solver": "pot_dense", "n": n, "iteration_s": np.nan, "matmul_s": np.nan,
              "time_s": 1e-8 * n**3, "iterations": 3, "iteration_over_matmul": np.nan,
              "memory_mb": 24 * n**2 / 2**20, "rss_peak_mb": np.nan, "ari": ari}
             for n in (500, 1000, 2000)]
    n0 = min([n for n in ns if n >= claims.SCALING_MIN_N] or ns)
    rows += [{"solver": "ours_sparse_cpu", "n": n, "cpu_iteration_s": 1e-7 * n**slope,
              "cpu_ratio": (n / n0) ** slope, "cpu_ratio_lo": (n / n0) ** slope * (1 - spread),
              "cpu_ratio_hi": (n / n0) ** slope * (1 + spread), "base_n": n0,
              "noise_floor": 0.05, "timing_rounds": 7, "control_ratio": 1.0} for n in ns]
    return tables.concat([{k: np.asarray([r[k]]) for k in r} for r in rows])


@pytest.mark.parametrize(("slope", "ari", "ns", "spread", "verdict"), [
    (1.0, 0.99, (1000, 10_000, 100_000, 1_000_000), 0.1, "held"),
    (1.6, 0.99, (1000, 10_000, 100_000, 1_000_000), 0.1, "not held"),  # superlinear
    (1.0, 0.40, (1000, 10_000, 100_000, 1_000_000), 0.1, "not held"),  # fast, but blocks lost
    (1.0, 0.99, (300, 1000, 10_000), 0.1, "inconclusive"),             # one size >= 1e4
    (1.25, 0.99, (10_000, 100_000), 0.2, "inconclusive"),              # interval holds the bound
])
def test_scaling_claim_flips(slope, ari, ns, spread, verdict):
    claim = claims.scaling_claim(scaling_table(slope, ari, ns, spread))
    assert claim.verdict == verdict
    assert claim.timing["basis"] == "cpu"
    assert np.isclose(claim.measured["pot_memory_slope"], 2.0)
    if verdict == "inconclusive":
        assert np.isfinite(claim.min_detectable_effect) and claim.effect is not None
