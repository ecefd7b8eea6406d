"""The abstract's three headline claims (as worded in issue 4) as predicates over the tables."""

from __future__ import annotations

import math

import numpy as np

from repro26.core import tables
from repro26.core.claims import Claim
from repro26.core.method import claim_set
from repro26.core.stats import loglog_slope, summary
from repro26.srgw import rates

RATE_TOLERANCE = 0.3  # slack on the fitted slope (one-sided: faster decay always passes)
GAP_FLOAT_SLACK = 1e-6  # F is evaluated in float32 (resolution ~1e-7)
OBJECTIVE_RTOL = 0.01  # "reaches POT's objective (within 1%)"
POT_MIN_N = 1000  # "faster at n >= 1,000"
SCALING_MIN_N = rates.SCALING_MIN_N
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
        ideal={"violations": 0},
        ideal_note="an exactly deterministic relaxed optimum: gap 0 on every graph",
        trivial_note="no trivial estimator has a relaxation to round",
    )


def rate_claim(fits) -> Claim:
    """The error decays at least at the minimax rate, one-sided, on every family; it counts only
    where srGW beats the trivial edge-density estimator at the largest n. USVT and
    sorting-and-smoothing are findings, not criteria (the abstract makes no such comparison)."""
    per, trivial = {}, {}
    for fam in tables.unique(fits, "family"):
        ns, mse = tables.pivot(fits, "mse", family=fam, estimator="srgw")
        _, K = tables.pivot(fits, "K_theory", family=fam, estimator="srgw")
        kind = str(tables.select(fits, family=fam)["kind"][0])
        theory = loglog_slope(ns, rates.theory_rate(kind, ns, K[0]))
        slope = rates.slope_summary(ns, mse)
        present = [e for e in (*rates.ESTIMATORS, "srgw_ktheory")
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
        d_lo, d_hi = rates.slope_summary(
            ns, tables.pivot(fits, "mse", family=fam, estimator="density")[1])["ci95"]
        trivial[fam] = {**per[fam], "beats_trivial": False, "at_least_rate": bool(d_hi <= threshold),
                        "slower_than_rate": bool(d_lo > threshold)}
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
        effect=max(f["slope"]["mean"] - f["theory_slope"] for f in per.values()),
        trivial={"families": trivial},
        trivial_note="the edge-density estimator in srGW's place (its error does not decay)",
        ideal=None,
        ideal_note="no estimator attaining the minimax rate with known constants is run; the "
                   "theory slope over the same grid is the criterion",
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
                           "issue 4", {"rows": 0}, lambda m: False, "no POT rows", "no POT runs",
                           ideal_note="POT is the reference the claim is measured against")
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
        "Not an abstract claim (issue 4); the speedups are ratios of process CPU seconds (all "
        "threads; repro26.core.timing.cpu_seconds), one call each: POT runs its initial "
        "couplings one after another, ours in one vmapped call.",
        ideal_note="POT is the reference the claim is measured against",
        trivial_note="no trivial solver reaches POT's objective",
    )


def _slope_by_n(t, column: str) -> float:
    ns = np.unique(np.asarray(t["n"], float))
    vals = [np.median(np.asarray(t[column], float)[np.asarray(t["n"], float) == n]) for n in ns]
    return loglog_slope(ns, vals) if len(ns) >= 2 else float("nan")


def scaling_claim(scaling) -> Claim:
    """Sparse scaling, one-sided: at fixed mean degree the time per iteration is O(nnz K) =
    O(n). Measured by CPU time, all sizes in one job, in interleaved rounds
    (:func:`.evaluate.scaling_cpu`): at every n >= SCALING_MIN_N the CPU-time ratio to the
    smallest such n0 must lie below (n/n0)^(1 + slack) beyond the noise floor (held when every
    widened interval is below, not held when one lies above, inconclusive otherwise), and the
    blocks are recovered (ARI) at every n. The per-n jobs' single-call CPU times (time to
    tolerance, one sparse A @ T), their memory and POT's dense slopes are findings."""
    has = len(scaling.get("n", []))
    pick = lambda solver: tables.select(scaling, solver=solver) if has else {}
    ours, pot, cpu = pick("ours_sparse"), pick("pot_dense"), pick("ours_sparse_cpu")
    present = lambda t, column: t if t and column in t and len(t["n"]) else {}
    ours, pot, cpu = present(ours, "ari"), present(pot, "time_s"), present(cpu, "cpu_ratio")
    large = ({c: v[np.asarray(ours["n"], float) >= SCALING_MIN_N] for c, v in ours.items()}
             if ours else {})
    cpu_large = ({c: v[np.asarray(cpu["n"], float) >= SCALING_MIN_N] for c, v in cpu.items()}
                 if cpu else {})
    ns = sorted(set(np.asarray(cpu_large.get("n", []), int).tolist()))
    per_n = {}
    for i, n in enumerate(np.asarray(cpu_large.get("n", []), int)):
        n0 = int(cpu_large["base_n"][i])
        per_n[int(n)] = {"ratio": float(cpu_large["cpu_ratio"][i]),
                         "interval": [float(cpu_large["cpu_ratio_lo"][i]),
                                      float(cpu_large["cpu_ratio_hi"][i])],
                         "bound": float((n / n0) ** (1 + SCALING_SLOPE_SLACK)),
                         "linear": float(n / n0),
                         "cpu_iteration_s": float(cpu_large["cpu_iteration_s"][i])}
    measured = {
        "ns": ns,
        "cpu_per_n": per_n,
        "timing_noise_floor": float(cpu["noise_floor"][0]) if cpu else float("nan"),
        "cpu_timed_ns": sorted(np.asarray(cpu.get("n", []), int).tolist()) if cpu else [],
        "cpu_slope_all_timed": (_slope_by_n(cpu, "cpu_iteration_s")
                                if cpu and len(cpu["n"]) >= 2 else float("nan")),
        "cpu_iteration_slope": (loglog_slope(ns, [per_n[n]["ratio"] for n in ns])
                                if len(ns) >= 2 else float("nan")),
        "finding_per_job_iteration_slope": _slope_by_n(large, "iteration_s") if large else float("nan"),
        "finding_time_to_tolerance_slope": _slope_by_n(large, "time_s") if large else float("nan"),
        "finding_matmul_slope": _slope_by_n(large, "matmul_s") if large else float("nan"),
        "memory_slope": _slope_by_n(large, "memory_mb") if large else float("nan"),
        "ari_min": float(np.min(np.asarray(ours["ari"], float))) if ours else float("nan"),
        "by_n": {int(n): {k: float(np.median(np.asarray(ours[k], float)[ours["n"] == n]))
                          for k in ("time_s", "iterations", "iteration_s", "matmul_s",
                                    "iteration_over_matmul", "rss_peak_mb", "ari")}
                 for n in np.unique(ours["n"])} if ours else {},
        "pot_time_slope": _slope_by_n(pot, "time_s") if pot and len(pot["n"]) else float("nan"),
        "pot_memory_slope": (_slope_by_n(pot, "memory_mb") if pot and len(pot["n"])
                             else float("nan")),
    }
    larger = lambda m: [v for v in m["cpu_per_n"].values() if v["linear"] > 1]

    def undecided(m):
        if len(m["ns"]) < 2:
            return (f"{len(m['ns'])} sizes n >= {SCALING_MIN_N:,} timed by CPU: a ratio needs at "
                    "least 2")
        if m["ari_min"] < SCALING_MIN_ARI or any(v["interval"][0] > v["bound"] for v in larger(m)):
            return None
        open_ = [n for n, v in m["cpu_per_n"].items()
                 if v["linear"] > 1 and v["interval"][1] >= v["bound"]]
        return (f"the CPU-time interval at n = {open_} contains the bound (n/n0)^"
                f"{1 + SCALING_SLOPE_SLACK:g}" if open_ else None)

    # the smallest slope change the noise floor lets through over the timed range of n
    timed = lambda m: m["ns"] if len(m["ns"]) >= 2 else m["cpu_timed_ns"]
    span = lambda m: math.log(max(timed(m)) / min(timed(m))) if len(timed(m)) >= 2 else float("nan")
    timing = None
    if cpu:
        timing = {"basis": "cpu", "noise_floor": float(cpu["noise_floor"][0]),
                  "rounds": int(cpu["timing_rounds"][0]),
                  "control_ratio": float(cpu["control_ratio"][0])}
    ideal = {"cpu_per_n": {n: {**v, "ratio": v["linear"], "interval": [v["linear"]] * 2}
                           for n, v in per_n.items()}, "ari_min": 1.0}
    return Claim.check(
        "sparse_scaling",
        "The implementation scales efficiently with n: on sparse graphs (fixed mean degree) the "
        "time per iteration grows linearly in n and the blocks are recovered at every n.",
        "scales efficiently with n (abstract); issue 18",
        measured,
        lambda m: len(m["ns"]) >= 2 and all(v["interval"][1] < v["bound"] for v in larger(m))
        and m["ari_min"] >= SCALING_MIN_ARI,
        f"one-sided, CPU time (all sizes in one job, interleaved rounds, a control): at every "
        f"n >= {SCALING_MIN_N:,} the CPU seconds per iteration relative to the smallest such n0, "
        f"widened by the noise floor, lie below (n/n0)^(1 + {SCALING_SLOPE_SLACK}) (O(nnz K) at "
        f"fixed degree), and the ARI of the recovered blocks is at least {SCALING_MIN_ARI} at "
        f"every n",
        "Findings: the per-n jobs' single-call CPU-time slopes (iteration, time to tolerance, one sparse "
        "A @ T) and POT (dense, float64), whose memory is 3 x 8n^2 bytes.",
        compared_with={"floor": "one sparse A @ T (the floor of an iteration), per-n jobs",
                       "reference": "POT srGW on the dense matrix"},
        inconclusive_if=undecided,
        min_detectable_effect=lambda m: m["timing_noise_floor"] / span(m),
        effect=lambda m: (m["cpu_iteration_slope"] if len(m["ns"]) >= 2
                          else m["cpu_slope_all_timed"]) - 1.0,
        ideal=ideal,
        ideal_note="an iteration whose time is exactly linear in n (the O(nnz K) count), with the "
                   "blocks recovered",
        trivial_note="no trivial competitor: one sparse A @ T is the floor of an iteration "
                     "(linear by construction) and is a finding",
        timing=timing,
    )


@claim_set("tables/fits.csv", "tables/pot.csv", "tables/scaling.csv")
def CLAIMS(run) -> list[Claim]:
    fits = tables.read(run.input("fits.csv"))
    pot = tables.read(run.input("pot.csv"))
    scaling = tables.read(run.input("scaling.csv"))
    return [gap_claim(fits), rate_claim(fits), pot_claim(pot), scaling_claim(scaling)]
