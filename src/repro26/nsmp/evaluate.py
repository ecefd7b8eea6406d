"""Per case and method: the best grid point, the cost to reach ``tol``, the schedule's structure.

A baseline's grid point (ADMM ``rho``; FedAvg ``lr``; FedProx ``lr, mu``) is chosen per case,
the same for every seed, by (most seeds reaching ``tol``, fewest mean floats to ``tol``, smallest
mean final error) -- the most favourable tuning for the baseline.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from repro26.core import io
from repro26.nsmp.data import parse_case

SUMMARY_COLUMNS = ("reached", "iters_to_tol", "rounds_to_tol", "messages_to_tol", "floats_to_tol",
                   "first_err", "first_messages", "first_rounds", "final_err", "min_err", "iters",
                   "total_floats", "total_messages", "total_rounds")


def numeric(table: dict[str, np.ndarray], key: str) -> np.ndarray:
    """A column as floats; empty cells (NaN / not reached) become ``nan``."""
    return np.array([np.nan if v == "" else float(v) for v in table[key].tolist()])


def best_rows(table: dict[str, np.ndarray]) -> list[dict]:
    """Rows of the best grid point of one (case, method) summary table."""
    hps = list(dict.fromkeys(table["hp"].tolist()))

    def rank(hp):
        sel = table["hp"] == hp
        reached = table["reached"][sel].astype(bool)
        mean_floats = numeric(table, "floats_to_tol")[sel].mean() if reached.all() else np.inf
        return (-reached.mean(), mean_floats, numeric(table, "final_err")[sel].mean())

    best = min(hps, key=rank)
    sel = np.flatnonzero(table["hp"] == best)
    return [{k: table[k][i] for k in ("method", "case", "seed", "hp", *SUMMARY_COLUMNS)} for i in sel]


def evaluate(inputs, out: Path, meta: dict) -> None:
    """``out`` = evaluation table; ``structure.csv`` beside it (one row per case and seed)."""
    rows, structure = [], []
    for path in map(Path, inputs):
        if path.name.endswith("_summary.csv"):
            for row in best_rows(io.read_table(path)):
                problem, topology, n = parse_case(str(row["case"]))
                rows.append({"problem": problem, "topology": topology, **row})
        elif path.name == "case.npz":
            info = {k[5:]: v for k, v in io.read_npz(path).items() if k.startswith("info_")}
            case = path.parent.name
            problem, topology, _ = parse_case(case)
            for s in range(info["seed"].size):
                structure.append({"case": case, "problem": problem, "topology": topology,
                                  **{k: v[s] for k, v in info.items()}})
    n_of = {(r["case"], int(r["seed"])): int(r["n"]) for r in structure}
    for row in rows:
        row["n"] = n_of[(str(row["case"]), int(row["seed"]))]
    io.write_table(out, rows, meta)
    io.write_table(Path(out).with_name("structure.csv"), structure, meta)
