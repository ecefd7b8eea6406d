"""Time compiled programs against each other by per-process CPU time, in interleaved rounds.

Wall clock on a shared machine measures the machine's load as much as the program; a verdict
decided on it flips from run to run (DESIGN.md, "Claims that decide", rule 8). Here:

* every program is called ``calls`` times per measurement, blocked on its result
  (``jax.block_until_ready``), and timed by ``time.process_time`` — the CPU seconds of this
  process, all its threads, which another process's load does not add to;
* the programs are timed in **rounds**: each round times every program once, in an order that
  rotates from round to round, so slow drift (thermal, caches, load) falls on all of them alike;
* a **control** — the baseline program timed a second time as if it were another program — gives
  the ratio the method would report between two identical programs;
* each program's ratio to the baseline is the median over rounds of ``r_p = t_p,r / t_base,r``,
  with the distribution-free interval of a median: the order statistics
  ``[r_(k), r_(n+1-k)]`` with the largest ``k`` such that ``P(k <= Binomial(n, 1/2) <= n-k)`` is at
  least ``confidence`` (:func:`median_interval`; with fewer than 6 rounds no such ``k`` exists at
  95% and the interval is the range, its coverage recorded);
* the **noise floor** is how far from 1 the control's median may lie: the larger ``|log|`` of the
  ends of the control's median interval. It shrinks as rounds are added (the spread of a median,
  not of single rounds), and it is wide when identical programs time differently. Each program's
  interval is widened by it on both sides (``[lo · e^-floor, hi · e^floor]``), and
  :func:`compare_to_bound` decides a bound only when that whole interval lies on one side of it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any, Literal

import numpy as np
from scipy.special import bdtr

CONTROL = "control"


def _block(result: Any) -> Any:
    import jax

    return jax.block_until_ready(result)


def cpu_timed(fn: Callable[..., Any], *args: Any) -> tuple[Any, float]:
    """``(fn(*args), CPU seconds of this process it took)``, blocked on the result (one call, so
    a compiled ``fn`` should have run once before; a first call includes its compilation)."""
    start = time.process_time()
    out = _block(fn(*args))
    return out, time.process_time() - start


def cpu_seconds(fn: Callable[[], Any], calls: int = 1) -> float:
    """CPU seconds of this process spent in ``calls`` blocked calls of ``fn`` (per call)."""
    start = time.process_time()
    for _ in range(calls):
        _block(fn())
    return (time.process_time() - start) / calls


def calls_for(fn: Callable[[], Any], min_seconds: float) -> int:
    """How many calls of ``fn`` take at least ``min_seconds`` of CPU (``process_time`` ticks
    are coarse on some systems, so one measurement must span many of them)."""
    one = max(cpu_seconds(fn), 1e-6)
    return max(1, math.ceil(min_seconds / one))


def median_order(n: int, confidence: float = 0.95) -> tuple[int, float]:
    """``(k, coverage)`` of the distribution-free interval ``[x_(k), x_(n+1-k)]`` (1-based order
    statistics) for the median of ``n`` independent draws: the largest ``k`` whose coverage
    ``1 - 2 P(Binomial(n, 1/2) <= k - 1)`` is at least ``confidence``; ``k = 1`` (the range,
    coverage ``1 - 2^(1-n)``) when no ``k`` reaches it."""
    if n < 1:
        raise ValueError("a median interval needs at least one value")
    k = 1
    while k + 1 <= (n + 1) // 2 and 1 - 2 * bdtr(k, n, 0.5) >= confidence:
        k += 1
    return k, float(1 - 2 * bdtr(k - 1, n, 0.5))


def median_interval(values: Any, confidence: float = 0.95) -> tuple[float, float, float]:
    """``(lo, hi, coverage)``: the :func:`median_order` interval of ``values``' median."""
    x = np.sort(np.asarray(values, dtype=float).ravel())
    k, coverage = median_order(x.size, confidence)
    return float(x[k - 1]), float(x[x.size - k]), coverage


def noise_floor(control_ratios: Any, confidence: float = 0.95) -> tuple[float, float]:
    """``(floor, coverage)``: the larger ``|log|`` of the ends of the median interval of the
    control's per-round ratios — how far from 1 two identical programs' median ratio may lie."""
    lo, hi, coverage = median_interval(control_ratios, confidence)
    return max(abs(math.log(lo)), abs(math.log(hi))), coverage


def interleaved_cpu_times(programs: Mapping[str, Callable[[], Any]], baseline: str, *,
                          rounds: int = 9, min_seconds: float = 0.05, warmup: int = 2,
                          confidence: float = 0.95) -> dict[str, Any]:
    """Per-call CPU seconds of each program in each of ``rounds`` interleaved rounds, plus the
    control (``baseline`` timed again under the name ``"control"``), and their ratios.

    Returns ``{"seconds": {name: [per round]}, "ratio": {name: summary}, "noise_floor": f,
    "rounds": rounds, "calls": {name: n}, "basis": "cpu"}`` where each summary is
    ``{"median", "q25", "q75", "median_interval": [lo, hi], "interval": [lo', hi'],
    "per_round": [...]}`` of ``t_name / t_baseline``: ``median_interval`` is the median's
    interval at ``confidence``, ``interval`` the same widened by the noise floor.
    """
    if baseline not in programs:
        raise ValueError(f"baseline '{baseline}' is not one of {list(programs)}")
    if CONTROL in programs:
        raise ValueError(f"'{CONTROL}' is reserved for the baseline timed against itself")
    if rounds < 3:
        raise ValueError("rounds must be >= 3 for a spread")
    progs = dict(programs) | {CONTROL: programs[baseline]}
    for fn in progs.values():
        for _ in range(warmup):
            _block(fn())
    calls = {name: calls_for(fn, min_seconds) for name, fn in progs.items()}
    names = list(progs)
    seconds: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds):
        order = names[r % len(names):] + names[: r % len(names)]
        for name in order:
            seconds[name].append(cpu_seconds(progs[name], calls[name]))
    base = np.asarray(seconds[baseline])
    floor, coverage = noise_floor(np.asarray(seconds[CONTROL]) / base, confidence)
    ratio = {}
    for name in names:
        if name == baseline:
            continue
        per_round = np.asarray(seconds[name]) / base
        q25, med, q75 = np.quantile(per_round, [0.25, 0.5, 0.75])
        lo, hi, _ = median_interval(per_round, confidence)
        ratio[name] = {"median": float(med), "q25": float(q25), "q75": float(q75),
                       "median_interval": [lo, hi],
                       "interval": [lo * math.exp(-floor), hi * math.exp(floor)],
                       "per_round": per_round.tolist()}
    return {"seconds": seconds, "ratio": ratio, "noise_floor": floor, "rounds": rounds,
            "coverage": coverage, "calls": calls, "baseline": baseline, "basis": "cpu"}

def compare_to_bound(timing: Mapping[str, Any], program: str, bound: float,
                     side: Literal["below", "above"] = "below") -> Literal["held", "not held", "inconclusive"]:
    """Is ``program``'s CPU-time ratio to the baseline below (or above) ``bound``, beyond the
    noise floor? ``inconclusive`` when the widened interval contains the bound."""
    lo, hi = timing["ratio"][program]["interval"]
    if side == "below":
        return "held" if hi < bound else ("not held" if lo > bound else "inconclusive")
    return "held" if lo > bound else ("not held" if hi < bound else "inconclusive")


def timing_record(timing: Mapping[str, Any], **extra: Any) -> dict[str, Any]:
    """The ``timing`` field of a :class:`repro26.core.claims.Claim` from a measurement."""
    return {"basis": "cpu", "noise_floor": timing["noise_floor"], "rounds": timing["rounds"],
            "coverage": median_order(timing["rounds"])[1],
            "control_ratio": timing["ratio"][CONTROL]["median"], **extra}
