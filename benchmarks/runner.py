"""Time a function of ours against a reference implementation in the same process, by CPU time.

    from benchmarks.runner import compare
    compare("srgw n=1000", ours=lambda: solve(A), reference=lambda: ot.gromov...(A), repeats=5)

Both sides are timed by per-process CPU time (``time.process_time``) in interleaved rounds with a
control (ours timed against itself), through :mod:`repro26.core.timing`, so a ratio does not move
with the machine's load; warm-up calls (JIT compilation, caches) are excluded and JAX results are
blocked on before the clock stops. Prints one row (name, ours, reference, reference/ours with its
interval, the control's noise floor) and returns it; ratio > 1 means ours is faster.
``save("srgw", rows)`` writes the rows to ``results/benchmarks/srgw.csv`` (atomic, with the JAX
version, backend, git commit and date in its header), so a benchmark run leaves a record.
"""

from __future__ import annotations

import datetime
import platform
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from repro26.core import timing

RESULTS = Path("results") / "benchmarks"


def median_time(fn: Callable[[], Any], repeats: int = 5, warmup: int = 1) -> float:
    """Median CPU seconds of one call of ``fn()`` over ``repeats`` measurements, after
    ``warmup`` untimed calls (an absolute cost; ratios go through :func:`compare`)."""
    for _ in range(warmup):
        timing.cpu_seconds(fn)
    calls = timing.calls_for(fn, 0.05)
    return statistics.median(timing.cpu_seconds(fn, calls) for _ in range(repeats))


def compare(name: str, ours: Callable[[], Any], reference: Callable[[], Any],
            repeats: int = 5, warmup: int = 1) -> dict[str, float | str]:
    """``repeats`` interleaved CPU-time rounds (at least 3) of ours, the reference and the control."""
    t = timing.interleaved_cpu_times({"ours": ours, "reference": reference}, baseline="ours",
                                     rounds=max(3, repeats), warmup=warmup)
    t_ours = statistics.median(t["seconds"]["ours"])
    t_ref = statistics.median(t["seconds"]["reference"])
    ratio = t["ratio"]["reference"]
    lo, hi = ratio["interval"]
    row = {"name": name, "ours_s": t_ours, "reference_s": t_ref,  # CPU seconds per call
           "speedup": ratio["median"], "speedup_lo": lo, "speedup_hi": hi,
           "noise_floor": t["noise_floor"]}
    print(f"{name:<40} ours {t_ours * 1e3:10.2f} ms   reference {t_ref * 1e3:10.2f} ms (CPU)   "
          f"reference/ours {ratio['median']:6.2f}x [{lo:.2f}, {hi:.2f}]   "
          f"control noise {t['noise_floor']:.3f}", flush=True)
    return row


def save(benchmark: str, rows: Sequence[dict[str, Any]], **meta: Any) -> Path:
    """Write ``rows`` to ``results/benchmarks/<benchmark>.csv`` with provenance; return the path."""
    from repro26.core import io

    path = RESULTS / f"{benchmark}.csv"
    stamp = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    io.write_table(path, list(rows), io.run_metadata("-", benchmark=benchmark, date=stamp,
                                                     machine=platform.processor() or platform.machine(),
                                                     **meta))
    print(f"wrote {path}")
    return path
