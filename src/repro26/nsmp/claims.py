"""The issue's two claims as predicates over ``evaluation.csv`` and ``structure.csv``.

The abstract claims exactness in two passes and "efficient neighbour-to-neighbour message
passing". Efficiency is decided, like with like, on the communication needed to reach the
centralised optimum to relative error ``tol`` (equal accuracy): *messages* and *communicated
floats*, each counted where the solver sends it. Sequential rounds (hops: one per tree level per
pass for NSMP, one per iteration for a consensus method) are reported as a finding, not a
criterion: the abstract makes no claim about latency. A baseline that never reaches ``tol``
enters with its whole budget (a lower bound on its cost); if that bound is not above NSMP's cost
the comparison cannot tell (``inconclusive``).

1. ``quadratic_two_passes``: on quadratics (ridge, sensor localisation; every overlap pattern and
   size run) NSMP's first round -- one leaf-to-root and one root-to-leaf pass -- reaches the
   optimum to ``tol`` with exactly ``2(n-1)`` messages, and the best-tuned consensus ADMM needs
   more messages and more floats for the same accuracy, on every seed of every case.
2. ``convex_fewer_floats``: on convex non-quadratic objectives (logistic, Huber) NSMP reaches
   ``tol`` on every seed, with fewer messages and fewer floats than the best-tuned ADMM and FedAvg
   on every seed of every case. The ratios are reported (the abstract gives no number).

Trivial row (both claims): no communication, every client keeping the zero assignment (relative
error 1 against the optimum, 0 messages, never reaching ``tol``). Ideal row: the theorem's
protocol in exact arithmetic (error 0 after two passes of ``2(n-1)`` messages, the fewest with
which every client can hear from every other on a tree) -- it shows the predicate can pass.
"""

from __future__ import annotations

import numpy as np

from repro26.core import tables
from repro26.core.claims import Claim
from repro26.core.method import claim_set
from repro26.core.stats import summary
from repro26.nsmp.data import QUADRATIC
from repro26.nsmp.evaluate import numeric

DECIDE = ("messages", "floats")  # what efficiency is decided on
FINDING = ("rounds",)  # reported, not a criterion
EFFECT = 1.0  # the claim: baseline / NSMP cost ratio > 1 (no number in the abstract)
TRIVIAL_NOTE = ("no communication: every client keeps the zero assignment (relative error 1, "
                "0 messages, never reaches tol)")
IDEAL_NOTE = ("the theorem's protocol in exact arithmetic: error 0 after two passes of 2(n-1) messages, "
              "the fewest with which every client hears from every other on a tree")


def _cost(ev, sel, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Per-seed cost to ``tol`` in ``kind`` (``rounds``, ``messages`` or ``floats``) and whether
    it was reached (not reached: the whole budget, a lower bound)."""
    reached = ev["reached"][sel].astype(bool)
    return np.where(reached, numeric(ev, f"{kind}_to_tol")[sel],
                    numeric(ev, f"total_{kind}")[sel]), reached


def _compare(ev, case: str, base: str) -> dict:
    """NSMP against one baseline in one case: per-seed ratios baseline / NSMP of messages,
    floats and rounds to ``tol`` (seeds paired by the table's order), whether NSMP sends fewer
    messages and floats on every seed, and whether an unreached baseline's budget leaves that
    undecided. Rounds are reported only."""
    nsmp = tables.where(ev, case=case, method="nsmp")
    sel = tables.where(ev, case=case, method=base)
    out, cheaper, undecided = {"hp": str(ev["hp"][sel][0])}, True, False
    for kind in DECIDE + FINDING:
        ours, _ = _cost(ev, nsmp, kind)
        theirs, reached = _cost(ev, sel, kind)
        ratio = theirs / ours
        out[f"{kind}_ratio"] = summary(ratio)
        out[f"{kind}_ratio_min"] = float(ratio.min())
        out[f"{kind}_ratio_is_lower_bound"] = bool(not reached.all())
        if kind in DECIDE:
            cheaper &= bool(np.all(ratio > 1))
            undecided |= bool(np.any(~reached & (ratio <= 1)))
    out["fewer_rounds_every_seed_(finding)"] = out["rounds_ratio_min"] > 1
    out["final_err"] = summary(numeric(ev, "final_err")[sel])
    return {**out, "nsmp_cheaper_every_seed": cheaper, "undecided": undecided}


def _undecided(per_case: dict, bases) -> str | None:
    cases = [c for c, e in per_case.items() if any(e[b]["undecided"] for b in bases if b in e)]
    return (f"a baseline never reached tol within a budget below NSMP's cost in {cases}: "
            f"raise its iteration budget") if cases else None


def _min_ratio(per_case: dict, bases) -> float:
    """The smallest baseline / NSMP ratio over cases, baselines and decision kinds: the margin
    by which the comparison was decided (a lower bound where a baseline missed tol)."""
    return min(e[b][f"{k}_ratio_min"] for e in per_case.values() for b in bases if b in e for k in DECIDE)


def _budget(cfg, bases) -> tuple[dict, dict]:
    """Budgets of NSMP and the baselines: the same data and unknowns; their iteration budgets
    differ on purpose (each runs until tol or its budget; communication to tol is compared)."""
    data = cfg.n_clients * cfg.rows_per_client
    iters = {"nsmp": cfg.newton_rounds, "admm": cfg.admm_iters, "fedavg": cfg.fed_iters}
    out = {m: {"optimiser_steps": iters[m], "data_seen": data} for m in ("nsmp", *bases)}
    note = {"optimiser_steps": "an iteration budget, not a cost: every method runs until it reaches tol "
                               "(or its budget, counted as a lower bound); the claim compares the "
                               "messages and floats spent to reach tol"}
    return out, note


def quadratic_claim(ev, st, cfg) -> Claim:
    quad_cases = [c for c in dict.fromkeys(ev["case"].tolist())
                  if str(c).split("-")[0] in QUADRATIC]
    per_case = {}
    worst_err, msg_ok, all_cheaper, fewer_rounds = 0.0, True, True, True
    for case in quad_cases:
        nsmp = tables.where(ev, case=case, method="nsmp")
        err = numeric(ev, "first_err")[nsmp]
        msgs = numeric(ev, "first_messages")[nsmp]
        n = numeric(ev, "n")[nsmp]
        st_sel = tables.where(st, case=case)
        admm = _compare(ev, case, "admm")
        worst_err = max(worst_err, float(err.max()))
        msg_ok &= bool(np.all(msgs == 2 * (n - 1)))
        all_cheaper &= admm["nsmp_cheaper_every_seed"]
        fewer_rounds &= admm["fewer_rounds_every_seed_(finding)"]
        per_case[case] = {
            "nsmp_rel_err_after_2_passes_max": float(err.max()),
            "nsmp_messages_sent": int(msgs[0]), "two_n_minus_1": int(2 * (n[0] - 1)),
            "nsmp_rounds_(hops)": summary(numeric(ev, "first_rounds")[nsmp]),
            "admm": admm,
            "rip_violations": summary(st["violations"][st_sel]),
            "separator_enlargements": summary(st["added"][st_sel]),
        }
    measured = {"tol": cfg.tol, "nsmp_rel_err_after_2_passes_max": worst_err,
                "messages_equal_2(n-1)": msg_ok, "nsmp_cheaper_than_admm_everywhere": all_cheaper,
                "min_admm_over_nsmp_ratio": _min_ratio(per_case, ("admm",)),
                "nsmp_fewer_rounds_than_admm_everywhere_(finding)": fewer_rounds,
                "per_case": per_case}
    budget, budget_note = _budget(cfg, ("admm",))
    return Claim.check(
        "quadratic_two_passes",
        "On quadratics NSMP reaches the centralised optimum to 1e-6 relative error in two passes "
        "(2(n-1) messages), while ADMM needs more communication (messages and floats) for the same "
        "accuracy.",
        "two passes, 2(n-1) messages, exact (abstract: 'equivalent to minimising the joint objective', "
        "'efficient neighbor-to-neighbor message passing')",
        measured,
        lambda m: m["nsmp_rel_err_after_2_passes_max"] <= m["tol"] and m["messages_equal_2(n-1)"]
        and m["nsmp_cheaper_than_admm_everywhere"],
        "max NSMP error after its first round <= tol over all quadratic cases and seeds; the "
        "messages its passes sent == 2(n-1); the best-tuned ADMM needs more messages and more "
        "floats to tol than NSMP on every seed of every case (sequential rounds: a finding)",
        note="A pass is one sequential hop per tree level, so NSMP's two passes cost 2 x height "
        "rounds (a chain of n clients: about n); ADMM costs one neighbour-to-neighbour round per "
        "iteration. Rounds are reported (per-case rounds_ratio), not judged: the abstract claims "
        "exactness and efficient message passing, not latency.",
        compared_with={"no communication": TRIVIAL_NOTE,
                       "admm": "best-tuned consensus ADMM (rho grid per case)"},
        inconclusive_if=lambda m: _undecided(m["per_case"], ("admm",)),
        trivial={"nsmp_rel_err_after_2_passes_max": 1.0, "messages_equal_2(n-1)": False},
        trivial_note=TRIVIAL_NOTE,
        ideal={"nsmp_rel_err_after_2_passes_max": 0.0, "messages_equal_2(n-1)": True,
               "nsmp_cheaper_than_admm_everywhere": True},
        ideal_note=IDEAL_NOTE,
        budget=budget, budget_note=budget_note,
        effect=EFFECT, min_detectable_effect=lambda m: m["min_admm_over_nsmp_ratio"],
    )


def convex_claim(ev, cfg) -> Claim:
    cases = [c for c in dict.fromkeys(ev["case"].tolist()) if str(c).split("-")[0] not in QUADRATIC]
    per_case, nsmp_ok = {}, True
    cheaper, fewer_rounds = {"admm": True, "fedavg": True}, {"admm": True, "fedavg": True}
    for case in cases:
        nsmp = tables.where(ev, case=case, method="nsmp")
        nsmp_ok &= bool(ev["reached"][nsmp].astype(bool).all())
        entry = {"nsmp_floats_to_tol": summary(numeric(ev, "floats_to_tol")[nsmp]),
                 "nsmp_messages_to_tol": summary(numeric(ev, "messages_to_tol")[nsmp]),
                 "nsmp_rounds_to_tol": summary(numeric(ev, "rounds_to_tol")[nsmp]),
                 "nsmp_outer_rounds_to_tol": summary(numeric(ev, "iters_to_tol")[nsmp])}
        for base in ("admm", "fedavg", "fedprox"):
            if tables.where(ev, case=case, method=base).any():
                entry[base] = _compare(ev, case, base)
                if base in cheaper:
                    cheaper[base] &= entry[base]["nsmp_cheaper_every_seed"]
                    fewer_rounds[base] &= entry[base]["fewer_rounds_every_seed_(finding)"]
        per_case[case] = entry
    measured = {"tol": cfg.tol, "nsmp_reached_tol_all": nsmp_ok,
                "nsmp_cheaper_than_admm_everywhere": cheaper["admm"],
                "nsmp_cheaper_than_fedavg_everywhere": cheaper["fedavg"],
                "min_baseline_over_nsmp_ratio": _min_ratio(per_case, ("admm", "fedavg")),
                "nsmp_fewer_rounds_than_admm_everywhere_(finding)": fewer_rounds["admm"],
                "nsmp_fewer_rounds_than_fedavg_everywhere_(finding)": fewer_rounds["fedavg"],
                "per_case": per_case}
    budget, budget_note = _budget(cfg, ("admm", "fedavg"))
    return Claim.check(
        "convex_fewer_floats",
        "On convex non-quadratic objectives NSMP converges to the optimum with fewer messages and "
        "far fewer communicated floats than ADMM/FedAvg (ratio reported).",
        "efficient neighbour-to-neighbour message passing; far fewer floats than ADMM/FedAvg (no "
        "number in the abstract)",
        measured,
        lambda m: m["nsmp_reached_tol_all"] and m["nsmp_cheaper_than_admm_everywhere"]
        and m["nsmp_cheaper_than_fedavg_everywhere"],
        "NSMP reaches tol on every case and seed, with fewer messages and fewer floats than the "
        "best-tuned ADMM and FedAvg on every seed of every convex case (ratios in measured; 'far' "
        "is not given a number by the abstract, so it is reported, not tested; sequential rounds: a "
        "finding)",
        note="NSMP here = quadratic models refined over outer rounds (one exact distributed Newton "
        "step per round, Armijo backtracking at the root); each upward message carries the "
        "separator's Hessian (s(s+1)/2 + s + 2 floats), an ADMM/FedAvg iteration 2 floats per "
        "shared coordinate. Baselines tuned on grids per case (ADMM rho in admm_rho; FedAvg/FedProx "
        "lr in fed_lr, mu in fedprox_mu).",
        compared_with={"no communication": TRIVIAL_NOTE, "admm": "best-tuned consensus ADMM",
                       "fedavg": "best-tuned FedAvg"},
        inconclusive_if=lambda m: _undecided(m["per_case"], ("admm", "fedavg")),
        trivial={"nsmp_reached_tol_all": False},
        trivial_note=TRIVIAL_NOTE,
        ideal={"nsmp_reached_tol_all": True, "nsmp_cheaper_than_admm_everywhere": True,
               "nsmp_cheaper_than_fedavg_everywhere": True},
        ideal_note=IDEAL_NOTE + " (each outer round an exact Newton step)",
        budget=budget, budget_note=budget_note,
        effect=EFFECT, min_detectable_effect=lambda m: m["min_baseline_over_nsmp_ratio"],
    )


@claim_set("evaluation.csv", "structure.csv")
def CLAIMS(run) -> list[Claim]:
    ev = tables.read(run.input("evaluation.csv"))
    st = tables.read(run.input("structure.csv"))
    return [quadratic_claim(ev, st, run.cfg), convex_claim(ev, run.cfg)]
