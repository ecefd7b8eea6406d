"""The issue's three headline claims of NBFFG as predicates over the evaluation tables."""

from __future__ import annotations

import numpy as np

from repro26.core import tables
from repro26.core.claims import Claim
from repro26.core.method import claim_set
from repro26.core.stats import loglog_slope_over_seeds, summary
from repro26.nbffg.evaluate import dynamics, metrics_path, per_seed, read_tables, table_paths


def _elbo_ess(table) -> Claim:
    tasks = sorted({t for t in table["task"] if dynamics(t) != "linear"})
    measured = {}
    for t in tasks:
        gain = per_seed(table, t, "nbffg", "elbo") - per_seed(table, t, "bffg", "elbo")
        measured[t] = {"elbo_gain": summary(gain),
                       "ess_nbffg": summary(per_seed(table, t, "nbffg", "ess")),
                       "ess_bffg": summary(per_seed(table, t, "bffg", "ess"))}
        if dynamics(t) == "ctmc":  # exact evidence and marginals known: report the gaps too
            exact = per_seed(table, t, "nbffg", "exact_log_p")
            for m in ("nbffg", "bffg"):
                measured[t][f"elbo_gap_to_exact_{m}"] = summary(exact - per_seed(table, t, m, "elbo"))
                measured[t][f"marginal_rmse_{m}"] = summary(per_seed(table, t, m, "post_rmse"))
    return Claim.check(
        "elbo_ess_nonlinear",
        "On nonlinear dynamics NBFFG has higher ELBO and ESS than linear BFFG.",
        "NBFFG outperforms baselines on synthetic benchmarks (abstract; no number given)",
        measured,
        lambda m: len(m) > 0 and all(v["elbo_gain"]["mean"] > 0
                                     and v["ess_nbffg"]["mean"] > v["ess_bffg"]["mean"]
                                     for v in m.values()),
        "for every nonlinear task (double-well, state-dependent OU, Kunita shapes, and the "
        "discrete-trait ctmc tasks with time-dependent rates): mean over seeds of "
        "ELBO(NBFFG) - ELBO(BFFG) > 0 and mean ESS/N(NBFFG) > mean ESS/N(BFFG)",
    )


def _cost(table, cfg) -> Claim:
    leaves = np.unique(table["leaves"])
    measured = {}
    for mode in ("subsampled", "full"):
        sel = table["mode"] == mode
        ys = np.stack([np.sort(table["sec_per_step"][sel & (table["leaves"] == n)]) for n in leaves], 1)
        measured[f"slope_{mode}"] = loglog_slope_over_seeds(leaves, ys)
        measured[f"ms_per_step_{mode}"] = [float(v) for v in 1e3 * ys.mean(0)]
    measured["leaves"] = [int(n) for n in leaves]
    return Claim.check(
        "cost_flat_with_subsampling",
        "Training cost per step is flat in tree size with pathwise subsampling (linear without).",
        "complexity reduced from tree-size dependent to path-length dependent (abstract)",
        measured,
        lambda m: m["slope_subsampled"]["mean"] < 0.5 and m["slope_full"]["mean"] > 0.75,
        "log-log slope of seconds/step vs leaves (balanced trees, mean over timing repeats): "
        "< 0.5 with subsampling (path length grows like log leaves) and > 0.75 on the whole tree",
        note=f"{cfg.cost.paths} paths per sample, batch {cfg.cost.batch}; wall-clock on a shared CPU",
    )


def _shapes(table) -> Claim:
    tasks = sorted({t for t in table["task"] if dynamics(t) == "shapes"})
    measured = {}
    for t in tasks:
        err = {m: per_seed(table, t, m, "post_rmse") for m in ("nbffg", "bffg", "naive", "mcmc")}
        measured[t] = {**{f"rmse_{m}": summary(v) for m, v in err.items()},
                       "nbffg_minus_bffg": summary(err["nbffg"] - err["bffg"]),
                       "nbffg_minus_naive": summary(err["nbffg"] - err["naive"])}
    return Claim.check(
        "ancestral_shapes",
        "Ancestral shape reconstruction error is lower than BFFG's and naive's.",
        "reconstruction of ancestral butterfly wing shapes (abstract; no number given)",
        measured,
        lambda m: len(m) > 0 and all(v["rmse_nbffg"]["mean"] < v["rmse_bffg"]["mean"]
                                     and v["rmse_nbffg"]["mean"] < v["rmse_naive"]["mean"]
                                     for v in m.values()),
        "for every shape task: mean over seeds of the internal-node landmark RMSE of the "
        "self-normalised posterior mean vs the true shapes, NBFFG < BFFG and NBFFG < naive",
    )


@claim_set(inputs_from=lambda cfg: [*table_paths(cfg, cfg.tasks, metrics_path), "cost.csv"])
def CLAIMS(run) -> list[Claim]:
    table = read_tables(run, metrics_path, run.cfg.tasks)
    cost = tables.read(run.input("cost.csv"))
    return [_elbo_ess(table), _cost(cost, run.cfg), _shapes(table)]
