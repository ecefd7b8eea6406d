"""Each claim predicate on synthetic evaluation tables: one that makes it hold, one that fails,
and one the experiment cannot decide; sequential rounds never decide (a finding)."""

from types import SimpleNamespace

import numpy as np
import pytest

from repro26.core.claims import claim_problems
from repro26.nsmp import claims

CFG = SimpleNamespace(tol=1e-6, n_clients=8, rows_per_client=30, newton_rounds=25, admm_iters=300,
                      fed_iters=300)
SEEDS = (0, 1)
N = 8  # clients
NSMP_ROUNDS, NSMP_FLOATS, NSMP_MESSAGES = 6.0, 100.0, 2.0 * (N - 1)


def table(rows: list[dict]) -> dict[str, np.ndarray]:
    return {k: np.array([r[k] for r in rows]) for k in rows[0]}


def row(case, method, seed, *, reached=True, first_err=1e-12, first_messages=2 * (N - 1),
        rounds_to_tol=NSMP_ROUNDS, floats_to_tol=NSMP_FLOATS, messages_to_tol=NSMP_MESSAGES,
        total_rounds=1e4, total_floats=1e6, total_messages=1e5):
    return {"case": case, "method": method, "seed": seed, "hp": "-", "n": N, "reached": reached,
            "first_err": first_err, "first_messages": first_messages, "first_rounds": NSMP_ROUNDS,
            "iters_to_tol": 1.0 if reached else np.nan,
            "rounds_to_tol": rounds_to_tol if reached else np.nan,
            "floats_to_tol": floats_to_tol if reached else np.nan,
            "messages_to_tol": messages_to_tol if reached else np.nan,
            "total_rounds": total_rounds, "total_floats": total_floats, "total_messages": total_messages,
            "final_err": 1e-9}


def valid(claim):
    """The claim's JSON passes the core schema check (what every smoke run validates)."""
    assert claim_problems(claim.to_json()) == []
    return claim


def structure(cases) -> dict[str, np.ndarray]:
    return table([{"case": c, "seed": s, "violations": 0, "added": 0} for c in cases for s in SEEDS])


@pytest.mark.parametrize(("nsmp_err", "messages", "admm_rounds", "admm_floats", "admm_messages", "verdict"), [
    (1e-12, 2 * (N - 1), 41.0, 900.0, 500.0, "held"),
    (1e-12, 2 * (N - 1), 5.0, 900.0, 500.0, "held"),       # ADMM needs fewer rounds: a finding only
    (1e-3, 2 * (N - 1), 41.0, 900.0, 500.0, "not held"),   # two passes are not exact
    (1e-12, 3 * (N - 1), 41.0, 900.0, 500.0, "not held"),  # more than 2(n-1) messages sent
    (1e-12, 2 * (N - 1), 41.0, 50.0, 500.0, "not held"),   # ADMM needs fewer floats
    (1e-12, 2 * (N - 1), 41.0, 900.0, 10.0, "not held"),   # ADMM needs fewer messages
])
def test_quadratic_two_passes(nsmp_err, messages, admm_rounds, admm_floats, admm_messages, verdict):
    cases = ("ridge-chain", "sensor-grid")
    ev = table([row(c, "nsmp", s, first_err=nsmp_err, first_messages=messages) for c in cases
                for s in SEEDS]
               + [row(c, "admm", s, rounds_to_tol=admm_rounds, floats_to_tol=admm_floats,
                      messages_to_tol=admm_messages) for c in cases for s in SEEDS])
    claim = valid(claims.quadratic_claim(ev, structure(cases), CFG))
    assert claim.verdict == verdict
    assert claim.ideal_passes and not claim.trivial_passes
    assert claim.measured["nsmp_fewer_rounds_than_admm_everywhere_(finding)"] == (admm_rounds > NSMP_ROUNDS)
    ratio = claim.measured["per_case"]["ridge-chain"]["admm"]["rounds_ratio"]["mean"]
    assert ratio == pytest.approx(admm_rounds / NSMP_ROUNDS)


@pytest.mark.parametrize(("budget", "verdict"), [(500.0, "held"), (4.0, "inconclusive")])
def test_quadratic_admm_that_misses_tol_counts_its_budget(budget, verdict):
    """An ADMM run that never reaches tol costs at least its budget: enough to decide when the
    budget exceeds NSMP's cost, not otherwise."""
    cases = ("ridge-tree",)
    ev = table([row("ridge-tree", "nsmp", s) for s in SEEDS]
               + [row("ridge-tree", "admm", s, reached=False, total_messages=budget) for s in SEEDS])
    claim = valid(claims.quadratic_claim(ev, structure(cases), CFG))
    assert claim.verdict == verdict
    assert claim.measured["per_case"]["ridge-tree"]["admm"]["rounds_ratio_is_lower_bound"]


@pytest.mark.parametrize(("admm_floats", "fedavg_rounds", "fedavg_messages", "nsmp_reached", "verdict"), [
    (5e3, 20.0, 500.0, True, "held"),
    (5e3, 3.0, 500.0, True, "held"),        # FedAvg needs fewer sequential rounds: a finding only
    (50.0, 20.0, 500.0, True, "not held"),  # ADMM sends fewer floats
    (5e3, 20.0, 5.0, True, "not held"),     # FedAvg sends fewer messages
    (5e3, 20.0, 500.0, False, "not held"),  # NSMP misses tol on a seed
])
def test_convex_fewer_floats(admm_floats, fedavg_rounds, fedavg_messages, nsmp_reached, verdict):
    cases = ("logistic-tree", "huber-tree")
    ev = table([row(c, "nsmp", s, reached=nsmp_reached or s == 0, total_rounds=NSMP_ROUNDS * 30,
                    total_floats=NSMP_FLOATS * 30, total_messages=NSMP_MESSAGES * 30) for c in cases for s in SEEDS]
               + [row(c, "admm", s, rounds_to_tol=60.0, floats_to_tol=admm_floats, messages_to_tol=600.0)
                  for c in cases for s in SEEDS]
               + [row(c, "fedavg", s, rounds_to_tol=fedavg_rounds, floats_to_tol=2e3,
                      messages_to_tol=fedavg_messages) for c in cases for s in SEEDS])
    claim = valid(claims.convex_claim(ev, CFG))
    assert claim.verdict == verdict
    floats = claim.measured["per_case"]["huber-tree"]["admm"]["floats_ratio"]["mean"]
    if nsmp_reached:
        assert floats == pytest.approx(admm_floats / NSMP_FLOATS)
