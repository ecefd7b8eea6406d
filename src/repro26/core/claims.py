"""Headline claims as predicates over measured numbers, written to ``claims.json``.

A :class:`Claim` is built from the measured numbers and a predicate over them; ``holds`` is
always the predicate's value, never typed in by hand. A claim that does not hold stays in the
file (and the report) as *did not hold*, with its numbers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from repro26.core import io


@dataclasses.dataclass(frozen=True)
class Claim:
    id: str
    statement: str
    paper: str
    measured: Mapping[str, Any]
    holds: bool
    criterion: str
    note: str = ""

    @classmethod
    def check(
        cls,
        id: str,
        statement: str,
        paper: str,
        measured: Mapping[str, Any],
        predicate: Callable[[Mapping[str, Any]], Any],
        criterion: str,
        note: str = "",
    ) -> "Claim":
        """Evaluate ``predicate(measured)``; ``criterion`` says in words what it tests."""
        return cls(id, statement, paper, dict(measured), bool(predicate(measured)), criterion, note)


def write_claims(
    path: str | Path,
    method: str,
    scale: str,
    seeds: Sequence[int],
    claims: Sequence[Claim],
    meta: Mapping[str, Any],
) -> None:
    ids = [c.id for c in claims]
    if len(set(ids)) != len(ids):
        raise ValueError(f"duplicate claim ids: {ids}")
    io.write_json(path, {
        "method": method,
        "scale": scale,
        "seeds": list(seeds),
        "claims": [dataclasses.asdict(c) for c in claims],
        "meta": dict(meta),
    })


def read_claims(path: str | Path) -> dict[str, Any]:
    data = io.read_json(path)
    for key in ("method", "scale", "claims"):
        if key not in data:
            raise io.UsageError(f"claims file {path}: missing field '{key}'")
    return data
