"""Each claim predicate on synthetic evaluation tables: one that makes it hold, one that fails."""

from types import SimpleNamespace

import numpy as np
import pytest

from repro26.nsmp import claims

CFG = SimpleNamespace(tol=1e-6, many_rounds_factor=10.0, far_fewer_factor=10.0)
SEEDS = (0, 1)
N = 8  # clients


def table(rows: list[dict]) -> dict[str, np.ndarray]:
    return {k: np.array([r[k] for r in rows]) for k in rows[0]}


def row(case, method, seed, *, reached=True, first_err=1e-12, first_messages=2 * (N - 1),
        iters_to_tol=3.0, iters=100, floats_to_tol=100.0, total_floats=1e4):
    return {"case": case, "method": method, "seed": seed, "hp": "-", "n": N, "reached": reached,
            "first_err": first_err, "first_messages": first_messages, "first_rounds": 6.0,
            "iters_to_tol": iters_to_tol, "iters": iters, "floats_to_tol": floats_to_tol,
            "total_floats": total_floats, "final_err": 1e-9}


def structure(cases) -> dict[str, np.ndarray]:
    return table([{"case": c, "seed": s, "violations": 0, "added": 0} for c in cases for s in SEEDS])


@pytest.mark.parametrize(("nsmp_err", "messages", "admm_iters", "verdict"), [
    (1e-12, 2 * (N - 1), 200.0, "held"),
    (1e-3, 2 * (N - 1), 200.0, "not held"),      # two passes are not exact
    (1e-12, 3 * (N - 1), 200.0, "not held"),     # more than 2(n-1) messages
    (1e-12, 2 * (N - 1), 12.0, "not held"),      # ADMM needs fewer than 10 x 2 rounds
])
def test_quadratic_two_passes(nsmp_err, messages, admm_iters, verdict):
    cases = ("ridge-chain", "sensor-grid")
    ev = table([row(c, "nsmp", s, first_err=nsmp_err, first_messages=messages) for c in cases
                for s in SEEDS] + [row(c, "admm", s, iters_to_tol=admm_iters) for c in cases for s in SEEDS])
    claim = claims.quadratic_claim(ev, structure(cases), CFG)
    assert claim.verdict == verdict
    assert claim.measured["admm_iterations_to_tol_min"] == admm_iters


def test_quadratic_admm_that_misses_tol_counts_its_budget():
    cases = ("ridge-tree",)
    ev = table([row("ridge-tree", "nsmp", s) for s in SEEDS]
               + [row("ridge-tree", "admm", s, reached=False, iters_to_tol=np.nan, iters=500) for s in SEEDS])
    claim = claims.quadratic_claim(ev, structure(cases), CFG)
    assert claim.measured["admm_iterations_to_tol_min"] == 500 and claim.verdict == "held"


@pytest.mark.parametrize(("admm_floats", "fedavg_floats", "nsmp_reached", "verdict"), [
    (5e3, 2e3, True, "held"),        # ratios 50 and 20
    (5e3, 5e2, True, "not held"),    # FedAvg only 5 x NSMP
    (5e3, 2e3, False, "not held"),   # NSMP misses tol on a seed
])
def test_convex_fewer_floats(admm_floats, fedavg_floats, nsmp_reached, verdict):
    cases = ("logistic-tree", "huber-tree")
    ev = table([row(c, "nsmp", s, reached=nsmp_reached or s == 0) for c in cases for s in SEEDS]
               + [row(c, "admm", s, floats_to_tol=admm_floats) for c in cases for s in SEEDS]
               + [row(c, "fedavg", s, floats_to_tol=fedavg_floats) for c in cases for s in SEEDS])
    claim = claims.convex_claim(ev, CFG)
    assert claim.verdict == verdict
    assert claim.measured["min_ratio_admm"] == pytest.approx(admm_floats / 100.0)
