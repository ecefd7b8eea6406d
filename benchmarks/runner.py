"""Time a function of ours against a reference implementation in the same process.

    from benchmarks.runner import compare
    compare("srgw n=1000", ours=lambda: solve(A), reference=lambda: ot.gromov...(A), repeats=5)

Warm-up calls (JIT compilation, caches) are excluded; each side is timed ``repeats`` times and
the medians are compared. JAX results are blocked on before the clock stops. Prints one row
(name, ours, reference, reference/ours) and returns it; ratio > 1 means ours is faster.
``save("srgw", rows)`` writes the rows to ``results/benchmarks/srgw.csv`` (atomic, with the JAX
version, backend, git commit and date in its header), so a benchmark run leaves a record.
"""

from __future__ import annotations

import datetime
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

RESULTS = Path("results") / "benchmarks"


def _block(result: Any) -> Any:
    import jax

    return jax.block_until_ready(result)


def median_time(fn: Callable[[], Any], repeats: int = 5, warmup: int = 1) -> float:
    """Median wall time of ``fn()`` over ``repeats`` calls, after ``warmup`` untimed calls."""
    for _ in range(warmup):
        _block(fn())
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        _block(fn())
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def compare(name: str, ours: Callable[[], Any], reference: Callable[[], Any],
            repeats: int = 5, warmup: int = 1) -> dict[str, float | str]:
    t_ours = median_time(ours, repeats, warmup)
    t_ref = median_time(reference, repeats, warmup)
    row = {"name": name, "ours_s": t_ours, "reference_s": t_ref, "speedup": t_ref / t_ours}
    print(f"{name:<40} ours {t_ours * 1e3:10.2f} ms   reference {t_ref * 1e3:10.2f} ms   "
          f"reference/ours {t_ref / t_ours:6.2f}x", flush=True)
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
