"""The issue's two claims as predicates over ``evaluation.csv`` and ``structure.csv``.

1. ``quadratic_two_passes``: on quadratics (ridge, sensor localisation; every overlap pattern and
   size run) NSMP's first round -- one leaf-to-root and one root-to-leaf pass, ``2(n-1)``
   messages -- reaches the centralised optimum to relative error ``tol = 1e-6``, while the best
   tuned consensus ADMM needs many rounds for the same accuracy. "Many" is read as at least
   ``many_rounds_factor`` (10) times NSMP's two passes; an ADMM run that never reaches ``tol``
   counts with its full budget (a lower bound).
2. ``convex_fewer_floats``: on convex non-quadratic objectives (logistic, Huber) NSMP converges to
   the optimum (``tol``) with far fewer floats than ADMM and FedAvg: the ratio
   ``floats_baseline / floats_NSMP`` to ``tol`` per case, averaged over seeds, is at least
   ``far_fewer_factor`` (10) in every case. A baseline that never reaches ``tol`` enters with its
   total budget, so its ratio is a lower bound (flagged in ``measured``).
"""

from __future__ import annotations

import numpy as np

from repro26.core import tables
from repro26.core.claims import Claim
from repro26.core.method import claim_set
from repro26.core.stats import summary
from repro26.nsmp.data import QUADRATIC
from repro26.nsmp.evaluate import numeric


def quadratic_claim(ev, st, cfg) -> Claim:
    quad_cases = [c for c in dict.fromkeys(ev["case"].tolist())
                  if str(c).split("-")[0] in QUADRATIC]
    per_case = {}
    worst_err, msg_ok, min_admm = 0.0, True, np.inf
    for case in quad_cases:
        nsmp = tables.where(ev, case=case, method="nsmp")
        admm = tables.where(ev, case=case, method="admm")
        err = numeric(ev, "first_err")[nsmp]
        msgs = numeric(ev, "first_messages")[nsmp]
        n = numeric(ev, "n")[nsmp]
        reached = ev["reached"][admm].astype(bool)
        iters = np.where(reached, numeric(ev, "iters_to_tol")[admm], numeric(ev, "iters")[admm])
        st_sel = tables.where(st, case=case)
        worst_err = max(worst_err, float(err.max()))
        msg_ok &= bool(np.all(msgs == 2 * (n - 1)))
        min_admm = min(min_admm, float(iters.min()))
        per_case[case] = {
            "nsmp_rel_err_after_2_passes_max": float(err.max()),
            "nsmp_messages": int(msgs[0]), "two_n_minus_1": int(2 * (n[0] - 1)),
            "nsmp_rounds_(hops)": summary(numeric(ev, "first_rounds")[nsmp]),
            "admm_iterations_to_tol": summary(iters), "admm_hp": str(ev["hp"][admm][0]),
            "admm_reached_all_seeds": bool(reached.all()),
            "rip_violations": summary(st["violations"][st_sel]),
            "separator_enlargements": summary(st["added"][st_sel]),
        }
    measured = {"tol": cfg.tol, "nsmp_rel_err_after_2_passes_max": worst_err,
                "messages_equal_2(n-1)": msg_ok, "admm_iterations_to_tol_min": min_admm,
                "nsmp_passes": 2, "per_case": per_case}
    factor = cfg.many_rounds_factor
    return Claim.check(
        "quadratic_two_passes",
        "On quadratics NSMP reaches the centralised optimum to 1e-6 relative error in two passes "
        "(2(n-1) messages), while ADMM needs many rounds for the same accuracy.",
        "two passes, 2(n-1) messages, exact; ADMM many rounds (issue 5 / abstract: equivalent to "
        "minimising the joint objective)",
        measured,
        lambda m: m["nsmp_rel_err_after_2_passes_max"] <= m["tol"] and m["messages_equal_2(n-1)"]
        and m["admm_iterations_to_tol_min"] >= factor * m["nsmp_passes"],
        f"max NSMP error after its first round <= tol over all quadratic cases and seeds; its "
        f"messages == 2(n-1); best-tuned ADMM needs >= {factor:g} x 2 iterations in every case",
    )


def convex_claim(ev, cfg) -> Claim:
    cases = [c for c in dict.fromkeys(ev["case"].tolist()) if str(c).split("-")[0] not in QUADRATIC]
    per_case, mins, nsmp_ok = {}, {"admm": np.inf, "fedavg": np.inf}, True
    for case in cases:
        nsmp = tables.where(ev, case=case, method="nsmp")
        nsmp_floats = numeric(ev, "floats_to_tol")[nsmp]
        nsmp_ok &= bool(ev["reached"][nsmp].astype(bool).all())
        entry = {"nsmp_floats_to_tol": summary(nsmp_floats),
                 "nsmp_outer_rounds_to_tol": summary(numeric(ev, "iters_to_tol")[nsmp])}
        for base in ("admm", "fedavg", "fedprox"):
            sel = tables.where(ev, case=case, method=base)
            if not sel.any():
                continue
            reached = ev["reached"][sel].astype(bool)
            floats = np.where(reached, numeric(ev, "floats_to_tol")[sel], numeric(ev, "total_floats")[sel])
            ratio = floats / nsmp_floats
            entry[f"{base}_floats_ratio"] = summary(ratio)
            entry[f"{base}_ratio_is_lower_bound"] = bool(not reached.all())
            entry[f"{base}_hp"] = str(ev["hp"][sel][0])
            entry[f"{base}_final_err"] = summary(numeric(ev, "final_err")[sel])
            if base in mins:
                mins[base] = min(mins[base], float(np.mean(ratio)))
        per_case[case] = entry
    measured = {"tol": cfg.tol, "nsmp_reached_tol_all": nsmp_ok,
                "min_ratio_admm": mins["admm"], "min_ratio_fedavg": mins["fedavg"],
                "per_case": per_case}
    factor = cfg.far_fewer_factor
    return Claim.check(
        "convex_fewer_floats",
        "On convex non-quadratic objectives NSMP converges to the optimum with far fewer "
        "communicated floats than ADMM/FedAvg (ratio reported).",
        "far fewer floats than ADMM/FedAvg (no number in the abstract)",
        measured,
        lambda m: m["nsmp_reached_tol_all"] and m["min_ratio_admm"] >= factor
        and m["min_ratio_fedavg"] >= factor,
        f"NSMP reaches tol in every case and seed, and the seed-mean ratio floats_baseline / "
        f"floats_NSMP to tol is >= {factor:g} for ADMM and FedAvg in every convex case",
        note="NSMP here = quadratic models refined over outer rounds (one exact distributed Newton "
        "step per round, Armijo backtracking at the root); each upward message carries the "
        "separator's Hessian (s(s+1)/2 + s + 2 floats), an ADMM/FedAvg iteration 2 floats per "
        "shared coordinate. Baselines tuned on grids per case (ADMM rho in admm_rho; FedAvg/FedProx "
        "lr in fed_lr, mu in fedprox_mu); a baseline that misses tol enters with its whole budget "
        "(lower bound).",
    )


@claim_set("evaluation.csv", "structure.csv")
def CLAIMS(run) -> list[Claim]:
    ev = tables.read(run.input("evaluation.csv"))
    st = tables.read(run.input("structure.csv"))
    return [quadratic_claim(ev, st, run.cfg), convex_claim(ev, run.cfg)]
