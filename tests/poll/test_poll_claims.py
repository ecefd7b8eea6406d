"""Every claim predicate on a synthetic table that makes it hold and one that makes it fail."""

import numpy as np
import pytest

from repro26.poll import claims

SEEDS = range(6)
NS = (100, 300, 1000)


def _summary(queries_growth_n=0.0, het_growth=0.5, poll_error=0.01, trivial_error=0.4):
    """Summary rows: Poll queries ∝ n^growth (× exp(het_growth · h) at n = 300) with noise."""
    rng = np.random.default_rng(0)
    rows = []
    for fam in ("er", "ba"):
        for n in NS:
            for h in ((0.0, 1.0, 2.0) if n == 300 else (1.0,)):
                for s in SEEDS:
                    q = 1000 * (n / 100) ** queries_growth_n * np.exp(het_growth * h) \
                        * np.exp(0.05 * rng.normal())
                    base = {"family": fam, "n": n, "het": h, "seed": s, "degree_cv": 0.4}
                    rows.append({**base, "method": "poll", "price_error": poll_error,
                                 "welfare_gap": poll_error**2, "queries_to_eps": q,
                                 "queries_to_eps_clt": q, "truncation_error": 1e-4})
                    for m in ("mean_field", "degree", "no_price"):
                        rows.append({**base, "method": m, "price_error": trivial_error,
                                     "welfare_gap": trivial_error**2, "queries_to_eps": np.nan,
                                     "queries_to_eps_clt": np.nan, "truncation_error": np.nan})
    return _table(rows)


def _table(rows):
    cols = list(rows[0])
    return {c: np.asarray([r[c] for r in rows]) for c in cols}


def _trajectories(slope):
    rng = np.random.default_rng(1)
    rows = []
    for fam in ("er", "ba"):
        for s in SEEDS:
            for t in (1, 10, 32, 100, 1000, 10000):
                rows.append({"family": fam, "n": 1000, "het": 1.0, "seed": s, "round": t,
                             "welfare_gap": 0.5 * t**slope * np.exp(0.05 * rng.normal()),
                             "price_error": 0.5 * t ** (slope / 2)})
    return _table(rows)


def test_convergence_claim_flips():
    held = claims.convergence_claim(_trajectories(-1.0), _summary(), 0.05, 1.0)
    assert held.verdict == "held"
    flat = claims.convergence_claim(_trajectories(0.3), _summary(), 0.05, 1.0)
    assert flat.verdict == "not held"
    worse = claims.convergence_claim(_trajectories(-1.0), _summary(poll_error=0.5), 0.05, 1.0)
    assert worse.verdict == "not held"


def test_queries_claim_flips():
    held = claims.queries_claim(_summary(), 0.05, 1.0, 300)
    assert held.verdict == "held" and held.ideal is None and held.ideal_note
    assert claims.queries_claim(_summary(queries_growth_n=1.0), 0.05, 1.0, 300).verdict == "not held"
    assert claims.queries_claim(_summary(het_growth=-0.5), 0.05, 1.0, 300).verdict == "not held"
    # one family clearly growing with n: not held even where another family's CI is wide
    mixed = _summary()
    sel = (mixed["family"] == "ba") & (mixed["method"] == "poll")
    mixed["queries_to_eps_clt"] = np.where(sel, mixed["queries_to_eps_clt"] * (mixed["n"] / 100.0),
                                           mixed["queries_to_eps_clt"])
    noisy = (mixed["family"] == "er") & (mixed["method"] == "poll")
    rng = np.random.default_rng(3)
    mixed["queries_to_eps_clt"] = np.where(noisy, mixed["queries_to_eps_clt"]
                                           * np.exp(1.5 * rng.normal(size=noisy.size)),
                                           mixed["queries_to_eps_clt"])
    assert claims.queries_claim(mixed, 0.05, 1.0, 300).verdict == "not held"
    trivial_good = claims.queries_claim(_summary(trivial_error=0.01), 0.05, 1.0, 300)
    assert trivial_good.verdict == "inconclusive"
    # a slope interval straddling the 0.2 bound (no family decisively above): inconclusive
    straddle = claims.queries_claim(_summary(queries_growth_n=0.2), 0.05, 1.0, 300)
    assert straddle.verdict == "inconclusive" and "straddles" in straddle.inconclusive_reason
    assert 0 < straddle.min_detectable_effect < 1 and straddle.effect == claims.FLAT_SLOPE


def _ops(poll_ops):
    rows = []
    for fam in ("er", "ba"):
        for n in NS:
            for s in SEEDS:
                base = {"family": fam, "n": n, "seed": s}
                rows.append({**base, "method": "poll", "ops_to_eps": poll_ops * (1 + 0.01 * s)})
                rows.append({**base, "method": "cg", "ops_to_eps": 500.0 * n})
                rows.append({**base, "method": "best_response", "ops_to_eps": 300.0 * n})
                if n <= 300:
                    rows.append({**base, "method": "exact_dense", "ops_to_eps": 9.0 * n**3})
    return _table(rows)


def test_operations_claim_flips():
    held = claims.operations_claim(_ops(1e5))
    assert held.verdict == "held"
    assert held.measured["families"]["er"]["crossover_n"] == NS[-1]  # 500n, 300n vs 1e5
    # power laws through the seed means meet where 300 n = 1e5 (Poll's mean: 1.025e5)
    extrapolated = held.measured["families"]["er"]["finding_crossover_n_extrapolated"]
    assert extrapolated["best_response"] == pytest.approx(1.025e5 / 300, rel=1e-6)
    assert claims.operations_claim(_ops(1e7)).verdict == "not held"
    close = _ops(1e5)
    big = (close["method"] == "poll") & (close["n"] == NS[-1])
    # Poll's ops at the largest n around the best-response count, spread over seeds
    close["ops_to_eps"] = np.where(big, 300.0 * NS[-1] * (1 + 0.3 * (close["seed"] - 2.5)),
                                   close["ops_to_eps"])
    undecided = claims.operations_claim(close)
    assert undecided.verdict == "inconclusive" and np.isfinite(undecided.min_detectable_effect)
    assert undecided.measured["families"]["er"]["crossover_n"] is None


def _incentives(probe_exponent, plain_exponent=-1.0, horizons=(1024, 4096)):
    """Best gains per (horizon, seed, sample) ∝ T^exponent with seed noise."""
    rows = []
    for t in horizons:
        for s in SEEDS:
            for k in range(3):
                noise = 1 + 0.05 * ((s + k) % 3)
                rows.append({"rounds": t, "seed": s, "sample": k,
                             "best_gain_probe": 1e-6 * (t / 1024) ** probe_exponent * noise,
                             "best_gain_plain": 1e-3 * (t / 1024) ** plain_exponent * noise})
    return _table(rows)


def test_truthfulness_claim_flips_on_the_predicted_rate():
    held = claims.truthfulness_claim(_incentives(-2.0))
    assert held.verdict == "held" and held.ideal_passes and held.trivial_passes is False
    assert held.measured["probe"]["t2_growth"]["mean"] == pytest.approx(1.0, rel=0.1)
    assert claims.truthfulness_claim(_incentives(-1.0)).verdict == "not held"  # 1/T only
    # the plain rule at the same 1/T² rate: passes by construction of the horizon
    assert claims.truthfulness_claim(_incentives(-2.0, -2.0)).verdict == "inconclusive"


def _noisy_growth():
    inc = _incentives(-2.0)
    big = inc["rounds"] == 4096
    inc["best_gain_probe"] = np.where(big, inc["best_gain_probe"] * 2.0
                                      * np.exp(0.8 * np.sin(inc["seed"] * 1.7)),
                                      inc["best_gain_probe"])
    return inc


def test_truthfulness_claim_is_inconclusive_where_the_interval_straddles():
    claim = claims.truthfulness_claim(_noisy_growth())
    assert claim.verdict == "inconclusive", claim.measured["probe"]["t2_growth"]
    assert np.isfinite(claim.min_detectable_effect) and claim.effect == 4.0


def _detection(rate, spread=0.002):
    rows = []
    for s in SEEDS:
        rows.append({"attack": 1.0, "seed": s, "detection_rate": np.nan,
                     "analytic_detection_rate": 0.05,
                     "false_positive_rate": 0.05 + 0.002 * s, "price_error_undefended": 0.01,
                     "price_error_defended": 0.01})
        for attack, scale in ((0.8, 1.0), (0.95, 0.5)):
            rows.append({"attack": attack, "seed": s,
                         "detection_rate": 0.05 + scale * (rate - 0.05) + spread * (s - 2.5),
                         "analytic_detection_rate": 0.05 + scale * 0.85,
                         "false_positive_rate": 0.05, "price_error_undefended": 0.1,
                         "price_error_defended": 0.01})
    return _table(rows)


def test_detection_claim_flips():
    held = claims.detection_claim(_detection(0.9), 0.05)
    assert held.verdict == "held" and held.ideal_passes and held.trivial_passes is False
    assert claims.detection_claim(_detection(0.04), 0.05).verdict == "not held"
    undecided = claims.detection_claim(_detection(0.07, spread=0.02), 0.05)
    assert undecided.verdict == "inconclusive" and np.isfinite(undecided.min_detectable_effect)
