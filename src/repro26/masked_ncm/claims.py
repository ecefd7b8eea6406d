"""The issue's two headline claims as predicates over ``bounds.csv``."""

from __future__ import annotations

import numpy as np

from repro26.core import tables
from repro26.core.claims import Claim
from repro26.core.method import claim_set
from repro26.core.stats import summary

PAPER = "Masked NCMs (NeurIPS 2026), abstract: asymptotic recovery of the true bounds; accurate bounds"

#: "a substantial fraction" of misses by the single-DAG NCM, fixed before running: one in five
SUBSTANTIAL = 0.2


def _per_n(table: dict, column: str) -> dict[str, float]:
    return {str(int(n)): float(np.mean(table[column][table["n"] == n])) for n in np.unique(table["n"])}


def check_all(bounds: dict) -> list[Claim]:
    """Both claims on a bounds table (one row per instance and n)."""
    last = bounds["n"] == bounds["n"].max()
    n_max = int(bounds["n"].max())
    error = Claim.check(
        "endpoint_error",
        "Masked NCM bound endpoints converge to the true bounds as n grows "
        "(mean absolute endpoint error < 0.02 at the largest n).",
        PAPER + " (the optimisation objective asymptotically recovers the true bounds)",
        {
            "largest_n": n_max,
            "ncm_error_at_largest_n": summary(bounds["ncm_err"][last]),
            "ncm_error_by_n": _per_n(bounds, "ncm_err"),
            "plugin_ida_error_by_n": _per_n(bounds, "ida_err"),
            "single_dag_error_by_n": _per_n(bounds, "single_err"),
            "instances_at_largest_n": int(last.sum()),
        },
        lambda m: m["ncm_error_at_largest_n"]["mean"] < 0.02,
        "mean over instances (seeds x graph sizes) of (|lo_hat - lo| + |hi_hat - hi|) / 2 at the "
        "largest n is < 0.02",
    )
    cover = bounds["ncm_cover"].astype(bool)
    single_miss = ~bounds["single_cover"].astype(bool)
    coverage = Claim.check(
        "coverage",
        "The true causal effect lies inside the Masked NCM interval in >= 95% of instances, "
        "whereas a single-DAG NCM misses it in a substantial fraction.",
        PAPER,
        {
            "ncm_coverage": float(cover.mean()),
            "single_dag_miss_fraction": float(single_miss.mean()),
            "plugin_ida_coverage": float(bounds["ida_cover"].astype(bool).mean()),
            "instances": int(cover.size),
            "ncm_coverage_by_n": _per_n(bounds, "ncm_cover"),
            "single_dag_miss_by_n": {k: 1.0 - v for k, v in _per_n(bounds, "single_cover").items()},
        },
        lambda m: m["ncm_coverage"] >= 0.95 and m["single_dag_miss_fraction"] >= SUBSTANTIAL,
        f"pooled over seeds, graph sizes and n: Masked NCM coverage >= 0.95 and single-DAG NCM "
        f"miss fraction >= {SUBSTANTIAL} ('substantial', fixed before running)",
    )
    return [error, coverage]


@claim_set("bounds.csv")
def CLAIMS(run) -> list[Claim]:
    return check_all(tables.read(run.input("bounds.csv")))
