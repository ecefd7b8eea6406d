"""Where the stages write the tables (paths under ``results/<scale>/nbffg/``) and how figures
and claims read them back: pure Python and NumPy, so that a figure or claims job imports no JAX."""

from __future__ import annotations

import numpy as np


def dynamics(task: str) -> str:
    """``doublewell_random_16`` -> ``doublewell``."""
    return task.split("_")[0]


def tasks_where(cfg, keep) -> list[str]:
    """The configured tasks whose dynamics satisfy ``keep``, sorted by name."""
    return sorted(t for t in cfg.tasks if keep(dynamics(t)))


def metrics_path(task: str, seed: int) -> str:
    return f"eval/{task}/seed{seed}.csv"


def nodes_path(task: str, seed: int) -> str:
    return f"eval/{task}/seed{seed}_nodes.csv"


def history_path(task: str, seed: int) -> str:
    return f"train/{task}/seed{seed}_history.csv"


def table_paths(cfg, tasks, *layouts) -> list[str]:
    """Every seed's table of every task in ``tasks``, for each layout (``metrics_path``, ...)."""
    return [layout(t, s) for layout in layouts for t in tasks for s in cfg.seeds]


def read_tables(run, layout, tasks) -> dict:
    """The ``layout`` tables of ``tasks`` and every seed, stacked (``{}`` when none)."""
    from repro26.core import tables

    return tables.concat([tables.read(run.input(layout(t, s)))
                          for t in tasks for s in sorted(run.cfg.seeds)])


def per_seed(table, task: str, method: str, column: str) -> np.ndarray:
    """``column`` of one task and method, one value per seed in seed order."""
    from repro26.core import tables

    return tables.per_seed(table, column, task=task, method=method)
