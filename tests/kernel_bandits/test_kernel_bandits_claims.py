"""Each claim predicate on synthetic tables: one that makes it hold and one that makes it fail."""

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


def scaling_table(exponents: dict[str, float], gamma_exponent: float = 0.2) -> dict[str, np.ndarray]:
    """R_T = c_seed T^exponent per algorithm, γ_T = T^gamma_exponent, every kernel and adversary."""
    rows = []
    for kernel in CFG.kernels:
        for adversary in CFG.adversaries:
            for algo, exponent in exponents.items():
                for seed in SEEDS:
                    for T in HORIZONS:
                        regret = (1 + 0.1 * seed) * T ** exponent
                        scale = np.sqrt(T * T ** gamma_exponent)
                        rows.append((kernel, adversary, algo, T, seed, regret, regret / scale))
    columns = ("kernel", "adversary", "algo", "horizon", "seed", "regret", "ratio")
    return {c: np.array([r[i] for r in rows]) for i, c in enumerate(columns)}


@pytest.mark.parametrize(("exponent", "verdict"), [(0.55, "held"), (0.9, "not held")])
def test_regret_rate(exponent, verdict):
    # 0.55 < 0.75 and the ratio T^(0.55 - 0.6) decreases; 0.9 is near-linear and the ratio grows.
    claim = claims.regret_rate(CFG, scaling_table({"exp_weights": exponent, "exp_weights_tuned": 0.5}))
    assert claim.verdict == verdict
    slope = claim.measured["regret_slope_by_adversary"]["adaptive"]["mean"]
    assert slope == pytest.approx(exponent, abs=1e-6)


def test_regret_rate_fails_when_only_the_ratio_grows():
    """Slope 0.7 < 0.75, but with γ_T = T^{-0.5} the ratio T^(0.7 - 0.25) grows: not held."""
    claim = claims.regret_rate(CFG, scaling_table({"exp_weights": 0.7}, gamma_exponent=-0.5))
    assert claim.verdict == "not held"


@pytest.mark.parametrize(("exponent", "verdict"), [(1.0, "held"), (0.6, "not held")])
def test_gp_ucb_linear(exponent, verdict):
    claim = claims.gp_ucb_linear(CFG, scaling_table({"gp_ucb": exponent, "exp_weights": 0.5}))
    assert claim.verdict == verdict


def fixed_and_timing(nystrom_factor: float, nystrom_seconds: float):
    """Exact regret 10 + seed; Nyström regret ``nystrom_factor`` times it at every m."""
    n_arms = CFG.nystrom.grid
    rows = [("exact", n_arms, seed, 10.0 + seed) for seed in SEEDS]
    rows += [(s, m, seed, nystrom_factor * (10.0 + seed)) for s in CFG.nystrom.samplers
             for m in CFG.nystrom.m for seed in SEEDS]
    fixed = {"sampler": np.array([r[0] for r in rows]), "m": np.array([r[1] for r in rows]),
             "seed": np.array([r[2] for r in rows]), "regret": np.array([r[3] for r in rows]),
             "n_arms": np.full(len(rows), n_arms)}
    timing_rows = [("exact", n_arms, 1.0)] + [(s, m, nystrom_seconds) for s in CFG.nystrom.samplers
                                               for m in CFG.nystrom.m]
    timing = {"sampler": np.array([r[0] for r in timing_rows]), "m": np.array([r[1] for r in timing_rows]),
              "seconds_per_round": np.array([r[2] for r in timing_rows])}
    return fixed, timing


@pytest.mark.parametrize(("factor", "seconds", "verdict"), [
    (1.05, 0.2, "held"),       # within 10% and faster
    (1.25, 0.2, "not held"),   # faster but 25% more regret
    (1.0, 1.5, "not held"),    # same regret, slower
])
def test_nystrom_matches_exact(factor, seconds, verdict):
    claim = claims.nystrom_matches_exact(CFG, *fixed_and_timing(factor, seconds))
    assert claim.verdict == verdict
    assert claim.measured["m"] == 32  # the smallest m >= sqrt(400) = 20
    assert claim.measured["by_sampler"]["leverage"]["regret_ratio_to_exact"] == pytest.approx(factor)
