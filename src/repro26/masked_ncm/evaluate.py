"""From per-problem optimisation results to bounds, errors and coverage (tidy tables).

For one instance and sample size n (columns by prefix):

* ``true``     [min_G Q_G, max_G Q_G] over the true class, IDA with the true joint;
* ``ncm``      Masked NCM given the true CPDAG: [min over its masks and restarts of the "min"
               runs, max over the "max" runs];
* ``ncm_pc``   the same over the class of PC's estimated CPDAG (what a user has);
* ``single``   the single-DAG NCM, its own model, on a random consistent extension of PC's CPDAG;
* ``ida``      plug-in IDA: [min, max] of the back-door adjustment with the empirical
               distribution over the true class; ``ida_pc`` over PC's class.

Endpoint error = (|lo_hat - lo| + |hi_hat - hi|) / 2; an interval covers the true effect
Q_{G*} (the query in the data-generating DAG) when lo_hat <= Q_{G*} <= hi_hat.
``single_expected_miss`` is the share of PC's class whose exact query differs from Q_{G*} (the
miss rate of a random member with infinite data); ``class_expected_miss`` the same over the
true class.

Runs that end outside the data-fit region by more than ``max_violation`` (in units of the
constraint g, i.e. LR statistic > (1 + max_violation) c) do not fit the data and are left out of
the min / max (if every run of an interval is infeasible, all are used and the row says so).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np


def _index(runs: dict[str, np.ndarray]) -> dict[tuple, list[int]]:
    groups = defaultdict(list)
    for i in range(len(runs["seed"])):
        groups[(int(runs["seed"][i]), int(runs["n"][i]))].append(i)
    return groups


def _interval(runs, rows, max_violation: float, model: str = "masked",
              masks=None) -> tuple[float, float, int]:
    """(lo, hi, number of infeasible runs) over the feasible runs of ``rows`` of ``model``
    (restricted to the mask indices ``masks`` when given)."""
    models = runs.get("model")
    sel = [i for i in rows if (models is None or models[i] == model)
           and (masks is None or int(runs["mask"][i]) in masks)]
    feasible = [i for i in sel if runs["constraint"][i] <= max_violation]
    out = []
    for direction, pick in (("min", np.min), ("max", np.max)):
        use = [i for i in feasible if runs["direction"][i] == direction] or \
              [i for i in sel if runs["direction"][i] == direction]
        out.append(float(pick([runs["q"][i] for i in use])))
    return out[0], out[1], len(sel) - len(feasible)


def _score(prefix: str, lo: float, hi: float, true_lo: float, true_hi: float, effect: float) -> dict:
    return {
        f"{prefix}_lo": lo, f"{prefix}_hi": hi,
        f"{prefix}_err": 0.5 * (abs(lo - true_lo) + abs(hi - true_hi)),
        f"{prefix}_cover": bool(lo <= effect <= hi),
        f"{prefix}_width": hi - lo,
    }


#: two queries are "the same" below this difference (exact IDA values are float sums)
SAME = 1e-9


def graph_bounds(instances: list[dict], runs: dict[str, np.ndarray], max_violation: float) -> list[dict]:
    """One row per (seed, n) of a graph dataset: true, Masked NCM (true and PC class),
    single-DAG NCM and plug-in IDA bounds."""
    groups = _index(runs)
    out = []
    for inst in instances:
        true_lo, true_hi = float(np.min(inst["ida_exact"])), float(np.max(inst["ida_exact"]))
        effect = float(inst["true_effect"])
        score = lambda prefix, lo, hi: _score(prefix, lo, hi, true_lo, true_hi, effect)  # noqa: E731
        for sample in inst["samples"]:
            rows = groups[(int(inst["seed"]), int(sample["n"]))]
            *ncm, infeasible = _interval(runs, rows, max_violation, masks=set(sample["true_index"]))
            *ncm_pc, _ = _interval(runs, rows, max_violation, masks=set(sample["pc_index"]))
            *single, _ = _interval(runs, rows, max_violation, model="single")
            ida = (float(np.min(sample["ida_plugin"])), float(np.max(sample["ida_plugin"])))
            ida_pc = (float(np.min(sample["ida_plugin_pc"])), float(np.max(sample["ida_plugin_pc"])))
            fit_gap = [runs["nll_fit"][i] - runs["nll_mle"][i] for i in rows]
            out.append({
                "seed": inst["seed"], "num_nodes": inst["num_nodes"], "n": sample["n"],
                "class_size": len(inst["mec"]), "pc_class_size": len(sample["pc_mec"]),
                "pc_shd": sample["pc_shd"], "true_lo": true_lo, "true_hi": true_hi,
                "true_width": true_hi - true_lo, "true_effect": effect,
                **score("ncm", *ncm), **score("ncm_pc", *ncm_pc), **score("single", *single),
                **score("ida", *ida), **score("ida_pc", *ida_pc),
                "single_exact": float(sample["single_exact"]),
                "single_expected_miss": float(np.mean(
                    np.abs(np.asarray(sample["ida_exact_pc"]) - effect) > SAME)),
                "class_expected_miss": float(np.mean(
                    np.abs(np.asarray(inst["ida_exact"]) - effect) > SAME)),
                "max_fit_gap": float(np.max(fit_gap)),
                "max_constraint": float(np.max([runs["constraint"][i] for i in rows])),
                "infeasible_runs": infeasible, "runs": len(rows),
            })
    return out


def iv_bounds(instances: list[dict], runs: dict[str, np.ndarray], max_violation: float) -> list[dict]:
    """One row per (seed, n) of the IV dataset: Balke-Pearl LP bounds of the true distribution vs
    the Masked NCM's, the plug-in natural bounds (no instrument) and the plug-in LP bounds."""
    groups = _index(runs)
    out = []
    for inst in instances:
        for sample in inst["samples"]:
            rows = groups[(int(inst["seed"]), int(sample["n"]))]
            lo, hi, infeasible = _interval(runs, rows, max_violation)
            out.append({
                "seed": inst["seed"], "n": sample["n"], "true_effect": inst["true_effect"],
                "true_lo": inst["lp_lo"], "true_hi": inst["lp_hi"],
                "lp_plugin_lo": sample["lp_lo"], "lp_plugin_hi": sample["lp_hi"],
                **_score("ncm", lo, hi, inst["lp_lo"], inst["lp_hi"], inst["true_effect"]),
                **_score("natural", sample["natural_lo"], sample["natural_hi"], inst["lp_lo"],
                         inst["lp_hi"], inst["true_effect"]),
                **_score("lp", sample["lp_lo"], sample["lp_hi"], inst["lp_lo"], inst["lp_hi"],
                         inst["true_effect"]),
                "infeasible_runs": infeasible, "runs": len(rows),
            })
    return out
