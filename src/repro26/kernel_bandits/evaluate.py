"""Tidy per-seed regret tables from the simulation runs (what figures and claims read).

* ``scaling.csv``: one row per kernel × adversary × algorithm × horizon T × seed with the final
  regret R_T, γ_T (greedy, same kernel), √(T γ_T), the ratio R_T/√(T γ_T), for exponential
  weights the analysis's bound at its rates (:func:`theory_bound`), and, for the bump
  adversary, the order of its lower bound Tε(T) = σ√(T M(T)^d).
* ``fixed.csv``: one row per algorithm × number of arms × seed at the fixed horizon
  (experiments 3 and 4), with the Nyström sampler and m parsed from the algorithm name.
"""

from __future__ import annotations

import numpy as np

from repro26.core import io
from repro26.kernel_bandits.data import bump_construction
from repro26.kernel_bandits.model import MATERN_NU
from repro26.kernel_bandits.solvers import EXPLORE_CAP
from repro26.kernel_bandits.train import parse_algorithm


def theory_bound(n_arms: int, eta: float) -> float:
    """The analysis's regret bound at the rates the learner ran with (NaN for other learners).

    With η = √(log|X| / (3 T g*)) and γ = η g*, regret ≤ log|X|/η + 3 η T g* = 2 log|X| / η
    (:func:`.solvers.exp_weights_rates`; the λ = 1/T bias term is not included). It holds only
    where γ = η g* ≤ ½ was not capped (``explore_capped``): the cap breaks η|f̂| ≤ 1."""
    return 2.0 * float(np.log(n_arms)) / eta if np.isfinite(eta) and eta > 0 else float("nan")


def _final_rows(table: dict[str, np.ndarray]) -> np.ndarray:
    """Row mask of the final round of each horizon (t == T)."""
    return table["t"] == table["horizon"]


def scaling_table(run) -> None:
    cfg = run.cfg
    runs, gammas = [], {}
    for path in run.inputs:
        table = io.read_table(path)
        if "gamma" in table:
            gammas[str(table["kernel"][0])] = dict(zip(table["t"].tolist(), table["gamma"].tolist()))
        else:
            runs.append(table)
    rows = []
    for table in runs:
        final = _final_rows(table)
        for i in np.flatnonzero(final):
            kernel, horizon = str(table["kernel"][i]), int(table["horizon"][i])
            if kernel not in gammas:
                raise io.UsageError(f"--input: no γ_t table for kernel {kernel}")
            gamma = gammas[kernel][horizon]
            scale = float(np.sqrt(horizon * gamma))
            lower = float("nan")
            if table["adversary"][i] == "bump":
                cells, eps = bump_construction(horizon, MATERN_NU[kernel], cfg.dim, cfg.adversary.bump_noise)
                lower = horizon * eps
            eta, explore = float(table["eta"][i]), float(table["explore"][i])
            rows.append({
                "kernel": kernel, "adversary": str(table["adversary"][i]), "algo": str(table["algo"][i]),
                "horizon": horizon, "seed": int(table["seed"][i]), "regret": float(table["regret"][i]),
                "gamma_T": gamma, "sqrt_T_gamma": scale, "ratio": float(table["regret"][i]) / scale,
                "bump_lower": lower,
                "theory_bound": theory_bound(int(table["n_arms"][i]), eta),
                "explore_capped": bool(explore >= EXPLORE_CAP),
            })
    rows.sort(key=lambda r: (r["kernel"], r["adversary"], r["algo"], r["horizon"], r["seed"]))
    io.write_table(run.out, rows, run.meta(runs=len(runs)))


def fixed_table(run) -> None:
    rows = []
    for path in run.inputs:
        table = io.read_table(path)
        for i in np.flatnonzero(_final_rows(table)):
            algo = str(table["algo"][i])
            base, sampler, m = parse_algorithm(algo)
            n_arms = int(table["n_arms"][i])
            rows.append({
                "algo": algo, "base": base, "sampler": sampler or ("exact" if base == "exp_weights" else ""),
                "m": m or (n_arms if base == "exp_weights" else 0), "n_arms": n_arms,
                "horizon": int(table["horizon"][i]), "seed": int(table["seed"][i]),
                "regret": float(table["regret"][i]),
            })
    rows.sort(key=lambda r: (r["base"], r["sampler"], r["n_arms"], r["m"], r["seed"]))
    io.write_table(run.out, rows, run.meta(runs=len(run.inputs)))
