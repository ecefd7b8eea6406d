"""Headline claims as predicates over measured numbers, written to ``claims.json``.

A :class:`Claim` is built from the measured numbers and a predicate over them; its verdict is
always computed, never typed in by hand, and has three values (DESIGN.md, "Claims that decide"):

* ``held`` — the predicate holds on the measured numbers;
* ``not held`` — it does not;
* ``inconclusive`` — the experiment cannot tell at this scale: the confidence interval of the
  compared difference is wider than the effect the claim is about, or the baseline the method
  is compared with does not beat the strongest trivial baseline. ``inconclusive_if(measured)``
  returns the reason (a string) or ``None``; ``min_detectable_effect`` records what could have
  been detected.

``compared_with`` names what the claim was measured against, the strongest trivial baseline of
the setting first (measured in the same run). A claim that does not hold stays in the file (and
the report) with its numbers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from repro26.core import io

Verdict = Literal["held", "not held", "inconclusive"]
VERDICTS: tuple[str, ...] = ("held", "not held", "inconclusive")


@dataclasses.dataclass(frozen=True)
class Claim:
    id: str
    statement: str
    paper: str
    measured: Mapping[str, Any]
    verdict: Verdict
    criterion: str
    note: str = ""
    compared_with: Mapping[str, str] = dataclasses.field(default_factory=dict)
    inconclusive_reason: str = ""
    min_detectable_effect: float | None = None

    @property
    def holds(self) -> bool:
        """True only for ``held`` (kept for readers of the two-valued field)."""
        return self.verdict == "held"

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
        *,
        compared_with: Mapping[str, str] | None = None,
        inconclusive_if: Callable[[Mapping[str, Any]], str | None] | None = None,
        min_detectable_effect: float | None = None,
    ) -> "Claim":
        """Evaluate the verdict on ``measured``; ``criterion`` says in words what it tests.

        ``inconclusive_if`` is asked first: a reason string makes the verdict ``inconclusive``.
        """
        measured = dict(measured)
        reason = inconclusive_if(measured) if inconclusive_if is not None else None
        if reason:
            verdict: Verdict = "inconclusive"
        else:
            verdict = "held" if bool(predicate(measured)) else "not held"
        return cls(id, statement, paper, measured, verdict, criterion, note,
                   dict(compared_with or {}), reason or "", min_detectable_effect)

    def to_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "holds": self.holds}


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
        "claims": [c.to_json() for c in claims],
        "meta": dict(meta),
    })


def verdict_of(claim: Mapping[str, Any]) -> str:
    """The verdict of a claim read from a claims.json (older files carry only ``holds``)."""
    return claim.get("verdict") or ("held" if claim.get("holds") else "not held")


def read_claims(path: str | Path) -> dict[str, Any]:
    data = io.read_json(path)
    for key in ("method", "scale", "claims"):
        if key not in data:
            raise io.UsageError(f"claims file {path}: missing field '{key}'")
    return data
