"""Every claim predicate of NBFFG on synthetic tables: one that makes it held, one not held,
one inconclusive."""

import types

import numpy as np
import pytest

from repro26.nbffg.claims import _cost, _elbo_ess, _shapes

SEEDS = np.arange(4)


def _metrics(rows):
    """rows: (task, method, {column: per-seed values}) -> a stacked table with one row per seed."""
    cols = {"task": [], "method": [], "seed": [], "elbo": [], "ess": [], "post_rmse": [],
            "exact_log_p": [], "accept": [], "samples": []}
    for task, method, values in rows:
        for i, s in enumerate(SEEDS):
            cols["task"].append(task)
            cols["method"].append(method)
            cols["seed"].append(s)
            for c in ("elbo", "ess", "post_rmse", "exact_log_p", "accept"):
                v = values.get(c, np.full(SEEDS.size, np.nan))
                cols[c].append(float(np.asarray(v, float)[i]))
            cols["samples"].append(512)
    return {k: np.asarray(v) for k, v in cols.items()}


NOISE = np.array([0.01, -0.01, 0.02, -0.02])


def _elbo_table(gain: float, noise_scale: float = 1.0):
    base = {"elbo": -10 + NOISE * 3, "ess": 0.2 + NOISE}
    nb = {"elbo": base["elbo"] + gain + noise_scale * NOISE * 50,
          "ess": base["ess"] + gain / 10 + noise_scale * NOISE * 5}
    lin = {"elbo": base["elbo"] - 0.5, "ess": base["ess"] - 0.05}
    return _metrics([("doublewell_balanced_16", "nbffg", nb), ("doublewell_balanced_16", "bffg", base),
                     ("doublewell_balanced_16", "bffg_lin", lin),
                     ("doublewell_balanced_16", "naive", {"elbo": base["elbo"] - 50, "ess": 0.002 + 0 * NOISE})])


@pytest.mark.parametrize("gain, noise, verdict", [(1.0, 0.0, "held"), (-1.0, 0.0, "not held"),
                                                   (0.05, 1.0, "inconclusive")])
def test_elbo_ess_claim_three_values(gain, noise, verdict):
    claim = _elbo_ess(_elbo_table(gain, noise))
    assert claim.verdict == verdict
    if verdict == "inconclusive":
        assert claim.min_detectable_effect > 0.05


def test_elbo_ess_claim_fails_against_the_fair_bffg():
    """Better than the paper-proxy BFFG is not enough: the fair BFFG beats NBFFG here."""
    base = {"elbo": -10 + NOISE * 3, "ess": 0.2 + NOISE}
    nb = {"elbo": base["elbo"] + 1.0, "ess": base["ess"] + 0.1}
    lin = {"elbo": base["elbo"] + 2.0, "ess": base["ess"] + 0.3}
    table = _metrics([("statedep_random_16", m, v) for m, v in
                      (("nbffg", nb), ("bffg", base), ("bffg_lin", lin), ("naive", base))])
    assert _elbo_ess(table).verdict == "not held"


def _shape_table(nbffg_rmse, naive_ess=0.001):
    t = "shapes_random_16"
    return _metrics([(t, "nbffg", {"post_rmse": nbffg_rmse, "ess": 0.3 + 0 * NOISE}),
                     (t, "bffg", {"post_rmse": 0.10 + NOISE / 10, "ess": 0.2 + 0 * NOISE}),
                     (t, "bffg_lin", {"post_rmse": 0.12 + NOISE / 10, "ess": 0.2 + 0 * NOISE}),
                     (t, "naive", {"post_rmse": 0.5 + NOISE, "ess": naive_ess + 0 * NOISE}),
                     (t, "mcmc", {"post_rmse": 0.2 + NOISE, "accept": 0.3 + 0 * NOISE})])


@pytest.mark.parametrize("rmse, verdict", [(0.05 + NOISE / 10, "held"), (0.2 + NOISE / 10, "not held"),
                                           (0.10 + NOISE * 3, "inconclusive")])
def test_shapes_claim_three_values(rmse, verdict):
    assert _shapes(_shape_table(rmse)).verdict == verdict


def test_shapes_claim_skips_degenerate_naive():
    """Naive with a tiny error but 0.5 effective samples is degenerate: not the baseline."""
    table = _shape_table(0.05 + NOISE / 10)
    table["post_rmse"][table["method"] == "naive"] = 0.01
    claim = _shapes(table)
    assert claim.verdict == "held"
    assert claim.measured["tasks"]["shapes_random_16"]["strongest_baseline"] == "bffg"
    assert "naive" in claim.measured["tasks"]["shapes_random_16"]["degenerate"]


def _cost_table(rel_exponent, spread=0.0, full_time_exponent=1.0):
    """CPU time per step grows like leaves^0.2 (subsampled) or leaves^full_time_exponent (whole
    tree); the relative gradient variance like leaves^rel_exponent; the absolute variance
    grows like the leaves on top (a tree-summed ELBO) and must not decide."""
    leaves = np.array([8, 16, 32, 64])
    rows = {k: [] for k in ("leaves", "mode", "repeat", "cpu_sec_per_step", "grad_rel_var",
                            "grad_var", "noise_floor")}
    for mode, t_exp in (("subsampled", 0.2), ("full", full_time_exponent)):
        for n in leaves:
            for r in range(3):
                jitter = np.exp(spread * np.sin(7 * r + n))
                rows["leaves"].append(n)
                rows["mode"].append(mode)
                rows["repeat"].append(r)
                rows["cpu_sec_per_step"].append(1e-3 * n**t_exp)
                rows["grad_rel_var"].append(n**rel_exponent * jitter)
                rows["grad_var"].append(n ** (rel_exponent + 1.0) * jitter)
                rows["noise_floor"].append(0.02)
    return {k: np.asarray(v) for k, v in rows.items()}


COST_CFG = types.SimpleNamespace(cost=types.SimpleNamespace(paths=4, batch=4, repeats=3))


@pytest.mark.parametrize("exponent, spread, verdict", [(0.0, 0.0, "held"), (1.5, 0.0, "not held"),
                                                        (0.3, 2.0, "inconclusive")])
def test_cost_claim_three_values(exponent, spread, verdict):
    claim = _cost(_cost_table(exponent, spread), COST_CFG)
    assert claim.verdict == verdict and claim.timing["basis"] == "cpu"
    assert claim.ideal_passes  # log2(leaves) over 8..64: slope 0.33 < 0.5


def test_cost_claim_by_construction_when_the_whole_tree_is_as_cheap():
    """If even the whole-tree step passes (its time does not grow), the claim cannot tell."""
    claim = _cost(_cost_table(0.0, full_time_exponent=0.1), COST_CFG)
    assert claim.verdict == "inconclusive" and "construction" in claim.inconclusive_reason
