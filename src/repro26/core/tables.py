"""Tidy results tables (one observation a row), read back as column arrays, and the few
reshapes every method's figures and claims need.

A table is ``dict[column, np.ndarray]`` as :func:`repro26.core.io.read_table` returns it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from repro26.core import io
from repro26.core.config import UsageError
from repro26.core.stats import mean_ci, summary

Table = dict[str, np.ndarray]


def read(path: str | Path, columns: Sequence[str] = ()) -> Table:
    """Read a table and check that it has ``columns`` (one line naming the first missing)."""
    table = io.read_table(path)
    missing = [c for c in columns if c not in table]
    if missing:
        raise UsageError(f"table {path}: no column '{missing[0]}' (has {', '.join(table) or 'none'})")
    return table


def concat(tables: Sequence[Mapping[str, np.ndarray]]) -> Table:
    """Stack tables row-wise; a column missing from a table is filled with NaN."""
    columns = list(dict.fromkeys(c for t in tables for c in t))
    out = {}
    for c in columns:
        parts = [np.asarray(t[c]) if c in t else np.full(len(next(iter(t.values()))), np.nan)
                 for t in tables]
        out[c] = np.concatenate(parts) if parts else np.asarray([])
    return out


def n_rows(table: Mapping[str, np.ndarray]) -> int:
    return len(next(iter(table.values()))) if table else 0


def where(table: Mapping[str, np.ndarray], **conditions) -> np.ndarray:
    """Boolean row mask: every ``column == value`` holds."""
    mask = np.ones(n_rows(table), bool)
    for column, value in conditions.items():
        if column not in table:
            raise KeyError(f"no column '{column}' (has {', '.join(table)})")
        mask &= table[column] == value
    return mask


def select(table: Mapping[str, np.ndarray], **conditions) -> Table:
    """The rows where every ``column == value`` holds."""
    mask = where(table, **conditions)
    return {c: v[mask] for c, v in table.items()}


def unique(table: Mapping[str, np.ndarray], column: str, **conditions) -> list:
    """Values of ``column`` in first-appearance order (among rows matching ``conditions``)."""
    return list(dict.fromkeys(table[column][where(table, **conditions)].tolist()))


def pivot(table: Mapping[str, np.ndarray], value: str, by: str = "n", seed: str = "seed",
          **conditions) -> tuple[np.ndarray, np.ndarray]:
    """``(xs, values[seed, x])``: column ``value`` per seed (rows) and value of ``by`` (sorted
    columns), for the rows matching ``conditions``. Missing cells are NaN; a duplicated
    (seed, x) cell is an error, since it means a condition is missing."""
    mask = where(table, **conditions)
    xs = np.unique(table[by][mask])
    seeds = np.unique(table[seed][mask])
    out = np.full((len(seeds), len(xs)), np.nan)
    filled = np.zeros(out.shape, bool)
    s_index = np.searchsorted(seeds, table[seed][mask])
    x_index = np.searchsorted(xs, table[by][mask])
    values = np.asarray(table[value][mask], float)
    for i, j, v in zip(s_index, x_index, values):
        if filled[i, j]:
            raise ValueError(f"pivot({value!r}, by={by!r}): several rows for seed {seeds[i]}, "
                             f"{by}={xs[j]}; add a condition ({', '.join(conditions) or 'none given'})")
        out[i, j], filled[i, j] = v, True
    return xs, out


def per_seed(table: Mapping[str, np.ndarray], value: str, seed: str = "seed",
             **conditions) -> np.ndarray:
    """Column ``value`` sorted by seed, for rows matching ``conditions`` (one row per seed)."""
    mask = where(table, **conditions)
    order = np.argsort(table[seed][mask], kind="stable")
    return np.asarray(table[value][mask], float)[order]


def mean_ci_by(table: Mapping[str, np.ndarray], value: str, by: str = "n", seed: str = "seed",
               **conditions) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(xs, mean, ci95 half-width)`` over seeds of ``value`` at each ``by``, NaN seeds dropped."""
    xs, values = pivot(table, value, by, seed, **conditions)
    means, halves = [], []
    for column in values.T:
        column = column[np.isfinite(column)]
        mean, half = mean_ci(column) if column.size else (np.nan, np.nan)
        means.append(float(mean))
        halves.append(float(half))
    return xs, np.asarray(means), np.asarray(halves)


def seed_summary(table: Mapping[str, np.ndarray], value: str, **conditions) -> dict:
    """``{"mean", "ci95", "n"}`` over the rows matching ``conditions`` (for claims.json)."""
    return summary(np.asarray(table[value][where(table, **conditions)], float))


# ----------------------------------------------------------------------------- circular


def circular_mean(phases, period: float = 1.0, axis=None) -> np.ndarray:
    """Mean direction of phases measured in units of ``period`` (e.g. cycles), in [0, period)."""
    angle = 2 * np.pi * np.asarray(phases, float) / period
    mean = np.arctan2(np.sin(angle).mean(axis=axis), np.cos(angle).mean(axis=axis))
    return np.mod(mean * period / (2 * np.pi), period)


def resultant_length(phases, period: float = 1.0, axis=None) -> np.ndarray:
    """Mean resultant length R in [0, 1]: 1 when all phases agree, near 0 when spread."""
    angle = 2 * np.pi * np.asarray(phases, float) / period
    return np.hypot(np.sin(angle).mean(axis=axis), np.cos(angle).mean(axis=axis))


def circular_distance(a, b, period: float = 1.0) -> np.ndarray:
    """Shortest distance between phases ``a`` and ``b`` on the circle, in [0, period/2]."""
    d = np.mod(np.asarray(a, float) - np.asarray(b, float), period)
    return np.minimum(d, period - d)
