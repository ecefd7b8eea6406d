"""Every claim predicate on a synthetic table that makes it hold and one that makes it fail."""

import numpy as np

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
                                 "truncation_error": 1e-4})
                    for m in ("mean_field", "degree", "no_price"):
                        rows.append({**base, "method": m, "price_error": trivial_error,
                                     "welfare_gap": trivial_error**2, "queries_to_eps": np.nan,
                                     "truncation_error": np.nan})
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
    assert claims.queries_claim(_summary(), 0.05, 1.0, 300).verdict == "held"
    assert claims.queries_claim(_summary(queries_growth_n=1.0), 0.05, 1.0, 300).verdict == "not held"
    assert claims.queries_claim(_summary(het_growth=-0.5), 0.05, 1.0, 300).verdict == "not held"
    # one family clearly growing with n: not held even where another family's CI is wide
    mixed = _summary()
    sel = (mixed["family"] == "ba") & (mixed["method"] == "poll")
    mixed["queries_to_eps"] = np.where(sel, mixed["queries_to_eps"] * (mixed["n"] / 100.0),
                                       mixed["queries_to_eps"])
    noisy = (mixed["family"] == "er") & (mixed["method"] == "poll")
    rng = np.random.default_rng(3)
    mixed["queries_to_eps"] = np.where(noisy, mixed["queries_to_eps"]
                                       * np.exp(1.5 * rng.normal(size=noisy.size)),
                                       mixed["queries_to_eps"])
    assert claims.queries_claim(mixed, 0.05, 1.0, 300).verdict == "not held"
    trivial_good = claims.queries_claim(_summary(trivial_error=0.01), 0.05, 1.0, 300)
    assert trivial_good.verdict == "inconclusive"


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
    assert claims.operations_claim(_ops(1e5)).verdict == "held"
    assert claims.operations_claim(_ops(1e7)).verdict == "not held"


def test_truthfulness_claim_flips():
    inc = {"best_gain_plain": np.array([1e-3, 2e-4]), "best_gain_probe": np.array([1e-8, 3e-9])}
    assert claims.truthfulness_claim(inc, 1e-6).verdict == "held"
    inc["best_gain_probe"] = np.array([1e-8, 5e-5])
    assert claims.truthfulness_claim(inc, 1e-6).verdict == "not held"


def _detection(rate):
    rows = []
    for s in SEEDS:
        rows.append({"attack": 1.0, "seed": s, "detection_rate": np.nan,
                     "false_positive_rate": 0.05 + 0.002 * s, "price_error_undefended": 0.01,
                     "price_error_defended": 0.01})
        rows.append({"attack": 0.8, "seed": s, "detection_rate": rate + 0.002 * s,
                     "false_positive_rate": 0.05, "price_error_undefended": 0.1,
                     "price_error_defended": 0.01})
    return _table(rows)


def test_detection_claim_flips():
    assert claims.detection_claim(_detection(0.9), 0.8, 0.05).verdict == "held"
    assert claims.detection_claim(_detection(0.05), 0.8, 0.05).verdict == "not held"
