"""The abstract's three headline claims (as worded in issue 4) as predicates over the tables."""

from __future__ import annotations

import numpy as np

from repro26.core import tables
from repro26.core.claims import Claim
from repro26.core.method import claim_set
from repro26.core.stats import loglog_slope, summary
from repro26.srgw import evaluate

RATE_TOLERANCE = 0.3  # slack on the fitted slope (one-sided: faster decay always passes)
GAP_FLOAT_SLACK = 1e-6  # F is evaluated in float32 (resolution ~1e-7)
OBJECTIVE_RTOL = 0.01  # "reaches POT's objective (within 1%)"
POT_MIN_N = 1000  # "faster at n >= 1,000"
SCALING_MIN_N = 10_000  # below, fixed per-call costs hide the O(nnz K) term
SCALING_SLOPE_SLACK = 0.25  # linear in n at fixed mean degree: slope <= 1 + slack
SCALING_MIN_ARI = 0.9


def gap_claim(fits) -> Claim:
    """O(1/n) is an upper bound: test it one-sided, graph by graph, against the bound
    max C̄²/n on what the relaxation can gain (only the i = j terms of the objective are not
    linear in row i of T). A gap of exactly 0 satisfies it; a slope cannot be fitted to it."""
    srgw = tables.select(fits, estimator="srgw")
    gap = np.asarray(srgw["gap"], float)
    bound = np.asarray(srgw["gap_bound"], float)
    ns = np.unique(srgw["n"])
    by_n = {int(n): {"max_gap": float(np.max(gap[srgw["n"] == n])),
                     "max_gap_over_bound": float(np.max(gap[srgw["n"] == n]
                                                        / bound[srgw["n"] == n])),
                     "bound_mean": float(np.mean(bound[srgw["n"] == n]))} for n in ns}
    measured = {
        "by_n": by_n,
        "graphs": int(gap.size),
        "violations": int(np.sum(gap > bound + GAP_FLOAT_SLACK)),
        "fraction_exactly_zero": float(np.mean(gap == 0)),
        "max_gap": float(np.max(gap)),
        "fraction_fractional_rows_max": float(np.nanmax(np.asarray(srgw["fractional_rows"], float))),
        "bound_slope": loglog_slope(ns, [by_n[int(n)]["bound_mean"] for n in ns]),
    }
    return Claim.check(
        "gap_rate",
        "The optimality gap between the relaxed srGW solution and the deterministic assignment "
        "vanishes at rate O(1/n).",
        "O(1/n) (abstract)",
        measured,
        lambda m: m["violations"] == 0,
        f"one-sided, on every graph of every family and n: F(rounded) - F(relaxed) <= "
        f"max C̄²/n (+{GAP_FLOAT_SLACK:g} for float32), the bound whose slope is -1",
        f"The relaxed solution is already deterministic on {100 * measured['fraction_exactly_zero']:.0f}% "
        "of the graphs (gap exactly 0).",
    )


def rate_claim(fits) -> Claim:
    """The error decays at least at the minimax rate, one-sided, on every family; it counts only
    where srGW beats the trivial edge-density estimator at the largest n. USVT and
    sorting-and-smoothing are findings, not criteria (the abstract makes no such comparison)."""
    per = {}
    for fam in tables.unique(fits, "family"):
        ns, mse = tables.pivot(fits, "mse", family=fam, estimator="srgw")
        _, K = tables.pivot(fits, "K_theory", family=fam, estimator="srgw")
        kind = str(tables.select(fits, family=fam)["kind"][0])
        theory = loglog_slope(ns, evaluate.theory_rate(kind, ns, K[0]))
        slope = evaluate.slope_summary(ns, mse)
        present = [e for e in (*evaluate.ESTIMATORS, "srgw_ktheory")
                   if tables.where(fits, family=fam, estimator=e).any()]
        last = {est: float(np.nanmean(tables.pivot(fits, "mse", family=fam, estimator=est)[1][:, -1]))
                for est in present}
        _, Kused = tables.pivot(fits, "K", family=fam, estimator="srgw")
        lo, hi = slope["ci95"]
        threshold = theory + RATE_TOLERANCE
        per[fam] = {
            "kind": kind, "slope": slope, "theory_slope": theory,
            # one-sided, decided by the CI over seeds: below the threshold, above it, or across
            "at_least_rate": bool(hi <= threshold),
            "slower_than_rate": bool(lo > threshold),
            "beats_trivial": bool(last["srgw"] < last["density"]),
            "largest_n": int(ns[-1]), "mse_at_largest_n": last,
            "K_theory": K[0].astype(int).tolist(),
            "K_used_median": np.nanmedian(Kused, 0).tolist(),
            "finding_below_usvt": bool(last["srgw"] < last["usvt"]),
            "finding_below_sas": bool(last["srgw"] < last["sas"]),
        }
    return Claim.check(
        "minimax_rate",
        "The srGW estimator's error decreases at the minimax rate for SBMs and smooth graphons.",
        "minimax-optimal rates for SBMs and smooth graphons (abstract)",
        {"families": per},
        lambda m: all(f["beats_trivial"] and f["at_least_rate"] for f in m["families"].values()),
        f"for every family: srGW's mean MSE at the largest n is below the edge-density "
        f"estimator's, and the upper end of the 95% CI over seeds of the log-log slope of its "
        f"MSE vs n is at most the theory slope + {RATE_TOLERANCE} (theory: K^2/n^2 + log K/n "
        f"[+ K^-2 for graphons], Gao-Lu-Zhou 2015, over the same grid at the rate-theory K); "
        f"not held when a CI lies above it, inconclusive when one straddles it",
        "One-sided: decaying faster than the rate counts as achieving it. Findings, not "
        "criteria: finding_below_usvt / finding_below_sas per family (USVT is at its best on "
        "low-rank graphons; `bridge` is full rank).",
        compared_with={"trivial": "edge density (Erdős–Rényi fit)",
                       "findings": "USVT, sorting-and-smoothing, network histogram, spectral"},
        inconclusive_if=_rate_undecided,
        min_detectable_effect=max(
            (f["slope"]["ci95"][1] - f["slope"]["ci95"][0]) / 2 for f in per.values()),
    )


def _rate_undecided(m) -> str | None:
    """Inconclusive when no family fails outright but some slope's CI straddles the threshold."""
    fams = m["families"].values()
    if any(f["slower_than_rate"] or not f["beats_trivial"] for f in fams):
        return None
    open_ = [name for name, f in m["families"].items() if not f["at_least_rate"]]
    if open_:
        return (f"the 95% CI over seeds of the slope straddles theory + {RATE_TOLERANCE} for "
                f"{', '.join(open_)}; more seeds or a longer n range are needed")
    return None


def pot_claim(pot) -> Claim:
    if not len(pot.get("n", [])):
        return Claim.check("pot_agreement", "JAX solver reaches POT's objective and is faster",
                           "issue 4", {"rows": 0}, lambda m: False, "no POT rows", "no POT runs")
    per_n = {}
    for n in np.unique(pot["n"]):
        sel = pot["n"] == n
        per_n[int(n)] = {
            "objective_ratio_max": float(np.max(np.asarray(pot["objective_ratio"][sel], float))),
            "speedup": summary(np.asarray(pot["speedup"][sel], float)),
            "speedup_median": float(np.median(np.asarray(pot["speedup"][sel], float))),
            "instances": int(sel.sum()),
        }
    return Claim.check(
        "pot_agreement",
        "The JAX solver reaches POT's objective (within 1%) and is faster at n >= 1,000.",
        "issue 4 (implementation scales efficiently with n, abstract)",
        {"by_n": per_n, "min_n": POT_MIN_N},
        lambda m: all(v["objective_ratio_max"] <= 1 + OBJECTIVE_RTOL for v in m["by_n"].values())
        and any(n >= POT_MIN_N for n in m["by_n"])
        and all(v["speedup_median"] > 1 for n, v in m["by_n"].items() if n >= POT_MIN_N),
        f"on every instance F_ours <= (1 + {OBJECTIVE_RTOL}) F_POT (same initial couplings, "
        f"float64 re-evaluation), and at every n >= {POT_MIN_N} the median over instances of "
        f"t_POT / t_ours > 1 (ours: compile excluded)",
    )


def _slope_by_n(t, column: str) -> float:
    ns = np.unique(np.asarray(t["n"], float))
    vals = [np.median(np.asarray(t[column], float)[np.asarray(t["n"], float) == n]) for n in ns]
    return loglog_slope(ns, vals) if len(ns) >= 2 else float("nan")


def scaling_claim(scaling) -> Claim:
    """Sparse scaling, one-sided: at fixed mean degree the time per iteration is O(nnz K) =
    O(n), so its log-log slope over n >= SCALING_MIN_N is at most 1 + slack, and the blocks
    are recovered (ARI) at every n. The floor of an iteration — one sparse A @ T — is measured in
    the same job; POT's dense slopes are findings."""
    has = len(scaling.get("n", []))
    ours = tables.select(scaling, solver="ours_sparse") if has else {}
    pot = tables.select(scaling, solver="pot_dense") if has else {}
    large = ({c: v[np.asarray(ours["n"], float) >= SCALING_MIN_N] for c, v in ours.items()}
             if ours else {})
    ns = sorted(set(np.asarray(large.get("n", []), int).tolist()))
    measured = {
        "ns": ns,
        "iteration_slope": _slope_by_n(large, "iteration_s") if ns else float("nan"),
        "time_to_tolerance_slope": _slope_by_n(large, "time_s") if ns else float("nan"),
        "matmul_slope": _slope_by_n(large, "matmul_s") if ns else float("nan"),
        "memory_slope": _slope_by_n(large, "memory_mb") if ns else float("nan"),
        "ari_min": float(np.min(np.asarray(ours["ari"], float))) if ours else float("nan"),
        "by_n": {int(n): {k: float(np.median(np.asarray(ours[k], float)[ours["n"] == n]))
                          for k in ("time_s", "iterations", "iteration_s", "matmul_s",
                                    "iteration_over_matmul", "rss_peak_mb", "ari")}
                 for n in np.unique(ours["n"])} if ours else {},
        "pot_time_slope": _slope_by_n(pot, "time_s") if pot and len(pot["n"]) else float("nan"),
        "pot_memory_slope": (_slope_by_n(pot, "memory_mb") if pot and len(pot["n"])
                             else float("nan")),
    }
    return Claim.check(
        "sparse_scaling",
        "The implementation scales efficiently with n: on sparse graphs (fixed mean degree) the "
        "time per iteration grows linearly in n and the blocks are recovered at every n.",
        "scales efficiently with n (abstract); issue 18",
        measured,
        lambda m: m["iteration_slope"] <= 1 + SCALING_SLOPE_SLACK
        and m["ari_min"] >= SCALING_MIN_ARI,
        f"one-sided: the log-log slope of seconds per iteration vs n over n >= {SCALING_MIN_N:,} "
        f"is at most 1 + {SCALING_SLOPE_SLACK} (O(nnz K) at fixed degree), and the ARI of the "
        f"recovered blocks is at least {SCALING_MIN_ARI} at every n",
        "POT (dense, float64) slopes are findings: its memory is 3 x 8n^2 bytes.",
        compared_with={"trivial": "one sparse A @ T (the floor of an iteration), same job",
                       "reference": "POT srGW on the dense matrix"},
        inconclusive_if=lambda m: None if len(m["ns"]) >= 3 else
        f"{len(m['ns'])} sizes n >= {SCALING_MIN_N:,}: a slope needs at least 3",
    )


@claim_set("tables/fits.csv", "tables/pot.csv", "tables/scaling.csv")
def CLAIMS(run) -> list[Claim]:
    fits = tables.read(run.input("fits.csv"))
    pot = tables.read(run.input("pot.csv"))
    scaling = tables.read(run.input("scaling.csv"))
    return [gap_claim(fits), rate_claim(fits), pot_claim(pot), scaling_claim(scaling)]
