"""Headline claims as predicates over measured numbers, written to ``claims.json``.

A :class:`Claim` is built from the measured numbers and a predicate over them; its verdict is
always computed, never typed in by hand, and has three values (DESIGN.md, "Claims that decide"):

* ``held`` — the predicate holds on the measured numbers;
* ``not held`` — it does not;
* ``inconclusive`` — the experiment cannot tell at this scale, for one of four reasons: a
  summary the predicate reads has no interval (fewer than two seeds, or a NaN among its
  values); ``inconclusive_if(measured)`` returns a reason (the interval of the compared difference is
  wider than the effect, a compared baseline does not beat the trivial row, a model did not
  learn), or the ideal row fails the predicate (*the task cannot show it*), or the trivial row
  passes it as well as the ideal (*passes by construction*).

The schema of one claim in ``claims.json`` (every key always present):

=========================  ================================================================
``id``, ``statement``,     what the abstract says, the paper's number, the test in words
``paper``, ``criterion``
``measured``               the method's numbers (summaries ``{"mean", "ci95", "n"}`` over seeds)
``verdict``, ``holds``     computed; ``holds`` is ``verdict == "held"``
``inconclusive_reason``    why, when inconclusive
``min_detectable_effect``  number: the smallest effect the experiment could have detected
                           (required when inconclusive, unless a read summary has no interval;
                           :func:`validate_claims_file`)
``effect``                 number or text: the effect the claim is about (required then too)
``trivial``                the strongest trivial row's numbers (same keys the predicate reads),
                           ``trivial_note`` saying what it is; ``trivial_passes`` the predicate
``ideal``                  the ideal method's numbers (exact optimum, exact posterior, true
                           model, error-free policy), ``ideal_note`` what it is (or, with
                           ``ideal: null``, why no ideal exists); ``ideal_passes``
``budget``                 ``{model: {"optimiser_steps", "data_seen", "env_steps", "samples",
                           "parameters", ...}}`` of the compared models; ``budget_note`` names
                           every key that differs by > 10 % on purpose
``timing``                 ``null``, or ``{"basis": "cpu", "noise_floor": x, ...}`` for a claim
                           about time (:mod:`repro26.core.timing`); wall clock is refused
``compared_with``          names of what the claim was measured against, trivial row first
=========================  ================================================================

The trivial and ideal rows are evaluated with the *same* predicate: ``Claim.check`` calls
``predicate({**measured, **ideal})`` and ``predicate({**measured, **trivial})``, so each row
overrides only the keys that hold the method's own numbers.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from repro26.core import io

Verdict = Literal["held", "not held", "inconclusive"]
VERDICTS: tuple[str, ...] = ("held", "not held", "inconclusive")
CANNOT_SHOW = "the task cannot show it: the ideal does not pass"
BY_CONSTRUCTION = "passes by construction: the trivial row passes as well as the ideal"
NO_INTERVAL = "no interval for"
BUDGET_TOLERANCE = 0.10  # relative difference of a budget entry allowed without a note
Number = float | int
Effect = Number | str | Callable[[Mapping[str, Any]], Number | None] | None


def is_summary(tree: Any) -> bool:
    """A ``{"mean", "ci95", ...}`` summary over seeds (:func:`repro26.core.stats.summary`)."""
    return isinstance(tree, Mapping) and "mean" in tree and "ci95" in tree


class _Reads(Mapping):
    """A read-only view of ``measured`` that records which ``{"mean", "ci95"}`` summaries are
    read through it, so only the summaries a predicate uses decide "no interval"."""

    def __init__(self, data: Mapping[str, Any], path: str, log: dict[str, Mapping]):
        self._data, self._path, self._log = data, path, log

    def __getitem__(self, key):
        if is_summary(self._data):
            self._log[self._path] = self._data
        value = self._data[key]
        if isinstance(value, Mapping):
            return _Reads(value, f"{self._path}.{key}" if self._path else str(key), self._log)
        return value

    def __iter__(self):
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


def _no_interval(predicate: Callable[[Mapping[str, Any]], Any],
                 measured: Mapping[str, Any]) -> str | None:
    """Why the predicate cannot be evaluated on ``measured``: a summary it reads has fewer than
    two seeds (no interval, never a zero-width one) or a NaN or infinite bound."""
    read: dict[str, Mapping] = {}
    predicate(_Reads(measured, "", read))
    for key, s in read.items():
        bounds = [s.get("mean"), *s["ci95"]]
        if isinstance(s.get("n"), int) and s["n"] < 2:
            return f"{NO_INTERVAL} {key}: fewer than two seeds"
        if any(not isinstance(b, (int, float)) or not math.isfinite(b) for b in bounds):
            return f"{NO_INTERVAL} {key}: a value is NaN or infinite"
    return None


def budget_differences(budget: Mapping[str, Mapping[str, Number]],
                       tolerance: float = BUDGET_TOLERANCE) -> dict[str, tuple[float, float]]:
    """Budget entries whose values across the compared models differ by more than
    ``tolerance`` (relative to the largest): ``{key: (min, max)}``."""
    keys = {k for row in budget.values() for k in row}
    out = {}
    for key in sorted(keys):
        values = [float(row[key]) for row in budget.values() if key in row]
        if len(values) < 2:
            continue
        lo, hi = min(values), max(values)
        if hi > 0 and (hi - lo) / hi > tolerance:
            out[key] = (lo, hi)
    return out


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
    effect: float | str | None = None
    trivial: Mapping[str, Any] | None = None
    trivial_note: str = ""
    trivial_passes: bool | None = None
    ideal: Mapping[str, Any] | None = None
    ideal_note: str = ""
    ideal_passes: bool | None = None
    budget: Mapping[str, Mapping[str, Number]] = dataclasses.field(default_factory=dict)
    budget_note: Mapping[str, str] = dataclasses.field(default_factory=dict)
    timing: Mapping[str, Any] | None = None

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
        min_detectable_effect: Effect = None,
        effect: Effect = None,
        trivial: Mapping[str, Any] | None = None,
        trivial_note: str = "",
        ideal: Mapping[str, Any] | None = None,
        ideal_note: str = "",
        budget: Mapping[str, Mapping[str, Number]] | None = None,
        budget_note: Mapping[str, str] | None = None,
        timing: Mapping[str, Any] | None = None,
    ) -> "Claim":
        """Evaluate the verdict on ``measured``; ``criterion`` says in words what it tests.

        Order: a summary the predicate reads without an interval first; ``inconclusive_if``
        next; then the ideal row (``{**measured, **ideal}`` must
        pass the predicate, or the task cannot show the claim); then the trivial row (passing
        with the ideal means the predicate passes by construction); then the predicate.
        ``min_detectable_effect`` and ``effect`` may be callables of ``measured``.

        Raises ``ValueError`` (at build time, so a test catches it) for a budget that differs by
        more than 10 % in an entry that ``budget_note`` does not name, and for a timing claim not
        measured by CPU time.
        """
        measured = dict(measured)
        budget = {k: dict(v) for k, v in (budget or {}).items()}
        budget_note = dict(budget_note or {})
        unexplained = {k: v for k, v in budget_differences(budget).items() if k not in budget_note}
        if unexplained:
            key, (lo, hi) = next(iter(unexplained.items()))
            raise ValueError(f"claim {id}: budget '{key}' differs across compared models "
                             f"({lo:g} to {hi:g}); equalise it or name it in budget_note")
        if timing is not None and timing.get("basis") != "cpu":
            raise ValueError(f"claim {id}: timing must be measured by CPU time "
                             "(repro26.core.timing), not {timing.get('basis')!r}")
        if ideal is None and not ideal_note:
            raise ValueError(f"claim {id}: give the ideal row, or ideal_note saying why none exists")

        def passes(row: Mapping[str, Any] | None) -> bool | None:
            return None if row is None else bool(predicate({**measured, **row}))

        ideal_passes, trivial_passes = passes(ideal), passes(trivial)
        reason = _no_interval(predicate, measured)
        if not reason and inconclusive_if is not None:
            reason = inconclusive_if(measured)
        if not reason and ideal_passes is False:
            reason = CANNOT_SHOW
        if not reason and ideal_passes and trivial_passes:
            reason = BY_CONSTRUCTION
        if reason:
            verdict: Verdict = "inconclusive"
        else:
            verdict = "held" if bool(predicate(measured)) else "not held"

        def value(x: Effect):
            x = x(measured) if callable(x) else x
            return None if x is None else (x if isinstance(x, str) else float(x))

        return cls(id, statement, paper, measured, verdict, criterion, note,
                   dict(compared_with or {}), reason or "", value(min_detectable_effect),
                   value(effect), None if trivial is None else dict(trivial), trivial_note,
                   trivial_passes, None if ideal is None else dict(ideal), ideal_note,
                   ideal_passes, budget, budget_note, None if timing is None else dict(timing))

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


REQUIRED_KEYS = ("id", "statement", "paper", "criterion", "measured", "verdict", "holds",
                 "inconclusive_reason", "min_detectable_effect", "effect", "trivial", "ideal",
                 "ideal_note", "budget", "timing")


def claim_problems(claim: Mapping[str, Any]) -> list[str]:
    """What is wrong with one claim read from a ``claims.json`` against the schema above
    (an empty list when nothing is)."""
    cid = claim.get("id", "?")
    problems = [f"{cid}: missing '{k}'" for k in REQUIRED_KEYS if k not in claim]
    if problems:
        return problems
    if claim["verdict"] not in VERDICTS:
        problems.append(f"{cid}: verdict {claim['verdict']!r} is not one of {VERDICTS}")
    if claim["holds"] != (claim["verdict"] == "held"):
        problems.append(f"{cid}: holds disagrees with verdict")
    if claim["verdict"] == "inconclusive":
        mde = claim["min_detectable_effect"]
        no_interval = str(claim["inconclusive_reason"]).startswith(NO_INTERVAL)  # nothing detectable
        if not no_interval and (not isinstance(mde, (int, float)) or isinstance(mde, bool)
                                or not math.isfinite(mde)):
            problems.append(f"{cid}: inconclusive without a finite min_detectable_effect")
        if claim["effect"] is None:
            problems.append(f"{cid}: inconclusive without the effect the claim is about")
        if not claim["inconclusive_reason"]:
            problems.append(f"{cid}: inconclusive without a reason")
    if claim["ideal"] is None and not claim["ideal_note"]:
        problems.append(f"{cid}: no ideal row and no ideal_note saying why")
    timing = claim["timing"]
    if timing is not None and timing.get("basis") != "cpu":
        problems.append(f"{cid}: timing basis {timing.get('basis')!r}, not cpu")
    return problems


def validate_claims_file(path: str | Path) -> list[str]:
    """Every schema problem of a ``claims.json`` (empty when it validates)."""
    data = read_claims(path)
    return [p for c in data["claims"] for p in claim_problems(c)]
