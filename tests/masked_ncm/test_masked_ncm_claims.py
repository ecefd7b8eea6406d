"""Every claim predicate on synthetic tables that make it held, not held and inconclusive."""

import numpy as np
import pytest

from repro26.masked_ncm import claims

NS = (100, 1000)


def _bounds(rows: int = 40, ncm_err=(0.03, 0.005), ida_err=(0.02, 0.003), ncm_cover=1.0,
            single_cover=0.5, spread=0.001, class_miss=0.5, seed=0) -> dict:
    """A bounds table with ``rows`` instances per n; coverage columns have the given rates
    (first k rows covered); errors are the given means per n (smallest n first) plus independent
    noise of size ``spread``; the true bounds are [0.3, 0.6], so [0, 1] errs by 0.35."""
    rng = np.random.default_rng(seed)
    t = {k: [] for k in ("n", "seed", "ncm_err", "ida_err", "ncm_pc_err", "ida_pc_err",
                         "ncm_cover", "ida_cover", "ncm_pc_cover", "ida_pc_cover", "single_cover",
                         "pc_shd", "single_expected_miss", "class_expected_miss", "true_lo",
                         "true_hi")}
    for j, n in enumerate(NS):
        for i in range(rows):
            t["n"].append(n)
            t["seed"].append(i)
            t["ncm_err"].append(ncm_err[j] + spread * rng.standard_normal())
            t["ida_err"].append(ida_err[j] + spread * rng.standard_normal())
            t["ncm_pc_err"].append(ncm_err[j])
            t["ida_pc_err"].append(ida_err[j])
            t["ncm_cover"].append(i < round(ncm_cover * rows))
            t["ida_cover"].append(i < rows // 2)
            t["ncm_pc_cover"].append(i < round(0.8 * rows))
            t["ida_pc_cover"].append(False)
            t["single_cover"].append(i < round(single_cover * rows))
            t["pc_shd"].append(0)
            t["single_expected_miss"].append(0.5)
            t["class_expected_miss"].append(class_miss)
            t["true_lo"].append(0.3)
            t["true_hi"].append(0.6)
    return {k: np.asarray(v) for k, v in t.items()}


def _iv(ncm_err, natural_err, spread=0.002, seeds=10) -> dict:
    rng = np.random.default_rng(1)
    n = np.repeat(NS, seeds)
    return {"n": n, "seed": np.tile(np.arange(seeds), len(NS)),
            "ncm_err": ncm_err + spread * rng.standard_normal(n.size),
            "natural_err": natural_err + spread * rng.standard_normal(n.size),
            "lp_err": np.full(n.size, 0.001)}


@pytest.mark.parametrize("table, verdict, reason", [
    (dict(), "held", ""),                                            # falls, and accurate at n max
    (dict(ncm_err=(0.005, 0.008)), "not held", ""),                  # accurate but rises with n
    (dict(ncm_err=(0.08, 0.05)), "not held", ""),                    # falls, not accurate
    (dict(ncm_err=(0.03, 0.0195), spread=0.02), "inconclusive", "CI"),
    (dict(ida_err=(0.02, 0.02)), "inconclusive", "cannot show"),     # even the MLE does not fall
])
def test_endpoint_error(table, verdict, reason):
    claim = claims.endpoint_error(_bounds(**table))
    assert claim.verdict == verdict and reason in claim.inconclusive_reason
    assert claim.trivial_passes is False  # [0, 1] errs by 0.35 at every n


@pytest.mark.parametrize("rate, verdict", [(0.975, "held"), (0.6, "not held"),
                                           (0.925, "inconclusive")])
def test_coverage_is_judged_on_the_given_cpdag(rate, verdict):
    claim = claims.coverage(_bounds(ncm_cover=rate))
    assert claim.verdict == verdict
    assert claim.measured["finding_ncm_pc_coverage"]["rate"] == 0.8
    assert claim.ideal_passes and claim.trivial_passes is False


@pytest.mark.parametrize("table, verdict", [
    (dict(single_cover=0.5), "held"),
    (dict(single_cover=0.95), "not held"),    # rarely misses
    (dict(single_cover=0.8), "not held"),     # no worse than the Masked NCM (PC class, 0.8)
    (dict(single_cover=0.75, rows=20), "inconclusive"),
])
def test_single_dag_miss(table, verdict):
    assert claims.single_dag_miss(_bounds(**table)).verdict == verdict


def test_single_dag_miss_cannot_show_where_the_class_agrees():
    claim = claims.single_dag_miss(_bounds(class_miss=0.0))
    assert claim.verdict == "inconclusive" and "cannot show" in claim.inconclusive_reason


@pytest.mark.parametrize("ncm, natural, spread, verdict", [
    (0.01, 0.2, 0.002, "held"), (0.2, 0.01, 0.002, "not held"), (0.05, 0.05, 0.02, "inconclusive")])
def test_iv_bounds(ncm, natural, spread, verdict):
    assert claims.iv_bounds(_iv(ncm, natural, spread)).verdict == verdict


def test_wilson_interval_textbook_values():
    """Wilson interval of 0/n starts at 0 and of n/n ends at 1; 5/10 is symmetric about 0.5."""
    lo, hi = claims.wilson(0, 20)
    assert lo == pytest.approx(0.0, abs=1e-12) and 0 < hi < 0.2
    lo, hi = claims.wilson(20, 20)
    assert hi == pytest.approx(1.0, abs=1e-12)
    lo, hi = claims.wilson(5, 10)
    assert lo + hi == pytest.approx(1.0)
    # the textbook value for 5/10 at 95%: [0.2366, 0.7634]
    assert lo == pytest.approx(0.2366, abs=1e-4)
