"""The abstract's three headline claims (as worded in issue 4) as predicates over the tables."""

from __future__ import annotations

import numpy as np

from repro26.core import tables
from repro26.core.claims import Claim
from repro26.core.method import claim_set
from repro26.core.stats import loglog_slope, summary
from repro26.srgw import evaluate

GAP_SLOPE_BAND = (-1.3, -0.7)  # issue 4: "fitted log-log slope in [-1.3, -0.7]"
RATE_TOLERANCE = 0.3  # same half-width as the gap band, around the theory slope
OBJECTIVE_RTOL = 0.01  # "reaches POT's objective (within 1%)"
POT_MIN_N = 1000  # "faster at n >= 1,000"


def gap_claim(fits) -> Claim:
    fams = list(dict.fromkeys(fits["family"].tolist()))
    gaps = {f: tables.pivot(fits, "gap", family=f, estimator="srgw") for f in fams}
    ns = gaps[fams[0]][0]
    pooled = np.nanmean(np.stack([g for _, g in gaps.values()]), axis=0)  # seeds x n
    all_gaps = np.concatenate([g.ravel() for _, g in gaps.values()])
    _, bound = tables.pivot(fits, "gap_bound", family=fams[0], estimator="srgw")
    slope = evaluate.slope_summary(ns, pooled)
    measured = {
        "slope": slope,
        "n": ns.tolist(),
        "mean_gap_by_n": np.nanmean(pooled, 0).tolist(),
        "max_gap": float(np.nanmax(all_gaps)),
        "fraction_exactly_zero": float(np.mean(all_gaps == 0)),
        "fraction_fractional_rows_max": float(np.nanmax(
            np.asarray(fits["fractional_rows"][fits["estimator"] == "srgw"], float))),
        "bound_slope": loglog_slope(ns, np.nanmean(bound, 0)),
    }
    lo, hi = GAP_SLOPE_BAND
    note = ""
    if not np.all(np.nanmean(pooled, 0) > 0):
        note = (f"The conditional-gradient solution is deterministic (one-hot rows) on "
                f"{100 * measured['fraction_exactly_zero']:.0f}% of the graphs, so F(rounded) = "
                f"F(relaxed) there; the largest gap is {measured['max_gap']:.2g} (float32 "
                "resolution of F is ~1e-7) and the mean gap is 0 or negative at some n, so no "
                "log-log slope can be fitted: the gap is below any O(1/n) curve rather than "
                "decaying like one. Dashed in gap_vs_n: the bound max C^2/n on what the "
                f"relaxation can gain (slope {measured['bound_slope']:.2f}).")
    return Claim.check(
        "gap_rate",
        "The optimality gap between the relaxed srGW solution and the deterministic assignment "
        "vanishes at rate O(1/n).",
        "O(1/n) (abstract); issue 4: fitted log-log slope in [-1.3, -0.7]",
        measured,
        lambda m: lo <= m["slope"]["mean"] <= hi,
        f"mean over seeds of the log-log slope of the gap (averaged over families) vs n lies in "
        f"[{lo}, {hi}]; undefined (NaN, fails) when the gap is 0",
        note,
    )


def rate_claim(fits) -> Claim:
    fams = list(dict.fromkeys(fits["family"].tolist()))
    per = {}
    for fam in fams:
        ns, mse = tables.pivot(fits, "mse", family=fam, estimator="srgw")
        _, K = tables.pivot(fits, "K_theory" if "K_theory" in fits else "K", family=fam,
                              estimator="srgw")
        kind = str(fits["kind"][fits["family"] == fam][0])
        theory = loglog_slope(ns, evaluate.theory_rate(kind, ns, K[0]))
        slope = evaluate.slope_summary(ns, mse)
        present = [e for e in (*evaluate.ESTIMATORS, "srgw_ktheory")
                   if np.any((fits["family"] == fam) & (fits["estimator"] == e))]
        last = {est: float(np.nanmean(
                    tables.pivot(fits, "mse", family=fam, estimator=est)[1][:, -1]))
                for est in present}
        _, Kused = tables.pivot(fits, "K", family=fam, estimator="srgw")
        per[fam] = {
            "kind": kind, "slope": slope, "theory_slope": theory,
            "at_least_rate": bool(slope["mean"] <= theory + RATE_TOLERANCE),
            "within_two_sided_band": bool(abs(slope["mean"] - theory) <= RATE_TOLERANCE),
            "largest_n": int(ns[-1]), "mse_at_largest_n": last,
            "K_theory": K[0].astype(int).tolist(),
            "K_used_median": np.nanmedian(Kused, 0).tolist(),
            "beats_usvt": bool(last["srgw"] < last["usvt"]),
            "beats_sas": bool(last["srgw"] < last["sas"]),
        }
    return Claim.check(
        "minimax_rate",
        "The srGW estimator's error decreases at the minimax rate for SBMs and smooth graphons "
        "and is below USVT and sorting-and-smoothing at the largest n.",
        "minimax-optimal rates for SBMs and smooth graphons (abstract)",
        {"families": per},
        lambda m: all(f["at_least_rate"] and f["beats_usvt"] and f["beats_sas"]
                      for f in m["families"].values()),
        f"for every family: mean log-log slope of the MSE of P_hat vs n <= theory slope + "
        f"{RATE_TOLERANCE} (theory slope = slope of K^2/n^2 + log K/n [+ K^-2 for graphons, "
        f"Gao-Lu-Zhou 2015] over the same grid, with the rate-theory K), and mean MSE at the "
        f"largest n below "
        f"USVT's and sorting-and-smoothing's",
        "One-sided: decaying faster than the minimax rate (e.g. ~K^2/n^2 once an SBM's blocks "
        "are recovered exactly) counts as achieving it; `within_two_sided_band` says whether "
        "the slope is also within +-0.3 of the theory slope. srGW's K on a smooth graphon is "
        "the configured k_rule's (K_used_median; validation: held-out edge error over "
        "k_grid multiples of K_theory); mse_at_largest_n.srgw_ktheory is srGW at K_theory.",
    )


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


@claim_set("tables/fits.csv", "tables/pot.csv")
def CLAIMS(run) -> list[Claim]:
    fits = tables.read(run.input("fits.csv"))
    pot = tables.read(run.input("pot.csv"))
    return [gap_claim(fits), rate_claim(fits), pot_claim(pot)]
