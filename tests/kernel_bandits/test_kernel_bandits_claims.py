"""Each claim predicate on synthetic tables: one that makes it hold, one that makes it fail, and
one the experiment cannot decide."""

from types import SimpleNamespace

import numpy as np
import pytest

from repro26.kernel_bandits import claims

HORIZONS = (100, 200, 500, 1000, 2000)
SEEDS = (0, 1, 2)
CFG = SimpleNamespace(kernel="matern32", kernels=("matern32", "se"), adversaries=("drift", "adaptive"),
                      horizons=HORIZONS, grid=20, dim=1, gamma_noise=1.0, fixed_horizon=400,
                      nystrom=SimpleNamespace(grid=20, m=(8, 16, 32), samplers=("uniform", "leverage"),
                                              claim_sampler="leverage"))


def scaling_table(exponents: dict[str, float], bound_factor: float = 2.0, uniform_slope: float = 1.0,
                  noise: float = 0.1, adversaries=CFG.adversaries, bound_log_power: float = 0.0
                  ) -> dict[str, np.ndarray]:
    """R_T = (1 + noise·seed) T^exponent per algorithm, every kernel and adversary; the uniform
    policy's regret T^uniform_slope; the theory bound ``bound_factor`` · T^0.6 · (log T)^p for
    exp_weights; γ_T = T^0.2, so ½ + the slope of √γ_T is 0.6."""
    rows = []
    exponents = {**exponents, "uniform": uniform_slope}
    for kernel in CFG.kernels:
        for adversary in adversaries:
            for algo, exponent in exponents.items():
                for seed in SEEDS:
                    for T in HORIZONS:
                        regret = (1 + noise * seed) * T ** exponent
                        scale = np.sqrt(T * T ** 0.2)
                        bound = (bound_factor * T ** 0.6 * np.log(T) ** bound_log_power
                                 if algo == "exp_weights" else np.nan)
                        rows.append((kernel, adversary, algo, T, seed, regret, regret / scale,
                                     bound, False, T ** 0.2))
    columns = ("kernel", "adversary", "algo", "horizon", "seed", "regret", "ratio", "theory_bound",
               "explore_capped", "gamma_T")
    return {c: np.array([r[i] for r in rows]) for i, c in enumerate(columns)}


@pytest.mark.parametrize(("exponent", "bound_factor", "uniform_slope", "verdict"), [
    (0.55, 2.0, 1.0, "held"),           # below the bound, slope below the bound's 0.6
    (0.55, 0.5, 1.0, "not held"),       # the regret's CI lies above the bound
    (0.55, 0.8, 1.0, "inconclusive"),   # the mean is above the bound at T = 100, its CI is not
    (0.8, 10.0, 1.0, "not held"),       # below the bound, but the slope exceeds the rate
    (0.55, 2.0, 0.5, "inconclusive"),   # the bound is above uniform's regret: rate not tested
    (0.55, 2.0, 0.55, "inconclusive"),  # tied with uniform: the bound is vacuous again
])
def test_regret_rate(exponent, bound_factor, uniform_slope, verdict):
    table = scaling_table({"exp_weights": exponent}, bound_factor, uniform_slope)
    if uniform_slope == exponent:  # a tie with noise across seeds: shuffle uniform's seed order
        sel = table["algo"] == "uniform"
        table["regret"][sel] *= np.where(table["seed"][sel] % 2 == 0, 1.05, 0.95)
    claim = claims.regret_rate(CFG, table)
    assert claim.verdict == verdict, claim.inconclusive_reason
    entry = claim.measured["per_adversary"]["adaptive"]
    assert entry["local_slope_last_decade"]["mean"] == pytest.approx(exponent, abs=1e-6)
    assert entry["rate_exponent"] == pytest.approx(0.6)
    assert claim.trivial_passes is False  # uniform play's slope 1 (or 0.5/0.55 above the bound)
    if verdict == "inconclusive":
        assert np.isfinite(claim.min_detectable_effect) and claim.effect is not None


def test_regret_rate_slope_ci_across_the_rate_is_inconclusive():
    table = scaling_table({"exp_weights": 0.6}, 10.0, 1.0)
    sel = table["algo"] == "exp_weights"  # per-seed slopes 0.55, 0.6, 0.65 around 0.6
    table["regret"][sel] *= table["horizon"][sel] ** (0.05 * (table["seed"][sel] - 1.0))
    claim = claims.regret_rate(CFG, table)
    assert claim.verdict == "inconclusive" and "bound's slope" in claim.inconclusive_reason


@pytest.mark.parametrize(("exponent", "verdict"), [(0.7, "held"), (0.8, "not held")])
def test_regret_rate_is_the_slope_of_the_analysis_bound_log_factors_included(exponent, verdict):
    """Õ(√(T γ_T)) allows the analysis's log factors: with a bound T^0.6 · log T (slope ≈ 0.757
    over T in [200, 2000]) a regret slope of 0.7 holds although it exceeds ½ + the slope of
    √γ_T (0.6, a finding), and 0.8 does not."""
    claim = claims.regret_rate(CFG, scaling_table({"exp_weights": exponent}, 1.0, 1.0,
                                                  bound_log_power=1.0))
    assert claim.verdict == verdict, claim.inconclusive_reason
    entry = claim.measured["per_adversary"]["adaptive"]
    log_slope = np.log(np.log(2000) / np.log(200)) / np.log(10)
    assert entry["bound_slope_last_decade"] == pytest.approx(0.6 + log_slope, abs=0.01)
    assert entry["rate_exponent"] == pytest.approx(0.6)
    assert entry["finding_exponent_with_one_log_T"] == pytest.approx(0.6 + log_slope, abs=0.01)


def test_regret_rate_without_the_uniform_policy_is_inconclusive():
    table = scaling_table({"exp_weights": 0.55})
    keep = table["algo"] != "uniform"
    claim = claims.regret_rate(CFG, {k: v[keep] for k, v in table.items()})
    assert claim.verdict == "inconclusive" and "uniform" in claim.inconclusive_reason


def test_regret_rate_does_not_ask_the_lower_bound_construction_to_beat_uniform():
    """On the bump construction uniform play is as good as any learner; a tie there is no
    evidence against the claim, while the bound is still checked on it."""
    cfg = SimpleNamespace(**{**vars(CFG), "adversaries": ("drift", "bump")})
    rows = [scaling_table({"exp_weights": 0.55}, 2.0, uniform_slope, adversaries=(adversary,))
            for adversary, uniform_slope in (("drift", 1.0), ("bump", 0.55))]
    table = {k: np.concatenate([r[k] for r in rows]) for k in rows[0]}
    claim = claims.regret_rate(cfg, table)
    assert claim.verdict == "held"
    assert not claim.measured["per_adversary"]["bump"]["rate_tested"]
    assert "finding_minus_uniform_at_T_max" not in claim.measured["per_adversary"]["bump"]


@pytest.mark.parametrize(("exponent", "verdict"), [(1.0, "held"), (0.6, "not held"),
                                                   (0.9, "inconclusive")])
def test_gp_ucb_linear(exponent, verdict):
    table = scaling_table({"gp_ucb": exponent, "exp_weights": 0.5})
    sel = table["algo"] == "gp_ucb"  # per-seed slopes exponent − 0.02, exponent, exponent + 0.02
    table["regret"][sel] *= table["horizon"][sel] ** (0.02 * (table["seed"][sel] - 1.0))
    claim = claims.gp_ucb_linear(CFG, table)
    assert claim.verdict == verdict


def fixed_and_timing(nystrom_factor: float, nystrom_seconds: float, spread: float = 0.1):
    """Exact regret 10 + seed; Nyström regret ``nystrom_factor`` times it at every m; its CPU
    time ratio to exact ``nystrom_seconds`` with an interval of ± ``spread`` of it."""
    n_arms = CFG.nystrom.grid
    rows = [("exact", n_arms, seed, 10.0 + seed) for seed in SEEDS]
    rows += [(s, m, seed, nystrom_factor * (10.0 + seed)) for s in CFG.nystrom.samplers
             for m in CFG.nystrom.m for seed in SEEDS]
    fixed = {"sampler": np.array([r[0] for r in rows]), "m": np.array([r[1] for r in rows]),
             "seed": np.array([r[2] for r in rows]), "regret": np.array([r[3] for r in rows]),
             "n_arms": np.full(len(rows), n_arms)}
    timing_rows = [("exact", n_arms, 1.0)] + [(s, m, nystrom_seconds) for s in CFG.nystrom.samplers
                                               for m in CFG.nystrom.m]
    ratio = np.array([r[2] for r in timing_rows])
    n = len(timing_rows)
    timing = {"sampler": np.array([r[0] for r in timing_rows]), "m": np.array([r[1] for r in timing_rows]),
              "cpu_seconds_per_round": 1e-4 * ratio, "ratio_to_exact": ratio,
              "ratio_lo": ratio * (1 - spread), "ratio_hi": ratio * (1 + spread),
              "noise_floor": np.full(n, 0.02), "timing_rounds": np.full(n, 9),
              "control_ratio": np.full(n, 1.0)}
    return fixed, timing


@pytest.mark.parametrize(("factor", "seconds", "spread", "verdict"), [
    (1.05, 0.2, 0.1, "held"),          # within 10% and faster
    (1.25, 0.2, 0.1, "not held"),      # faster but 25% more regret
    (1.0, 1.5, 0.1, "not held"),       # same regret, slower
    (1.0, 0.9, 0.3, "inconclusive"),   # faster by median, but the interval contains 1
])
def test_nystrom_matches_exact(factor, seconds, spread, verdict):
    claim = claims.nystrom_matches_exact(CFG, *fixed_and_timing(factor, seconds, spread))
    assert claim.verdict == verdict
    assert claim.measured["m"] == 32  # the smallest m >= sqrt(400) = 20
    assert claim.measured["by_sampler"]["leverage"]["regret_ratio_to_exact"] == pytest.approx(factor)
    assert claim.timing["basis"] == "cpu"
