"""The job a stage process is running, so that core pieces deeper down can key their state to it.

``repro26.core.cli.run_stage`` enters :func:`job` around the stage. While it runs,
:func:`repro26.core.train.run_loop` tags its checkpoints with the job's identity (method, stage,
scale, config hash, variant, seed, output) and registers them here; a checkpoint written for
another job (say, before ``train.lr`` was changed) is refused and training starts over. When the
stage returns, having written its final outputs, the job's checkpoints are deleted. A stage
that fails or is killed leaves them, so the rerun resumes. The job also carries the stage's
provenance (git commit, JAX version, config hash, job), which array files written during it record.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import hashlib
import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any


@dataclasses.dataclass
class Job:
    tag: str
    provenance: dict[str, Any] = dataclasses.field(default_factory=dict)
    checkpoints: list[Path] = dataclasses.field(default_factory=list)

    def register(self, *paths: Path) -> None:
        self.checkpoints.extend(paths)


_CURRENT: contextvars.ContextVar[Job | None] = contextvars.ContextVar("repro26_job", default=None)


def job_tag(**identity: Any) -> str:
    """Short stable hash of what defines a job's result."""
    blob = json.dumps(identity, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


@contextlib.contextmanager
def job(tag: str, provenance: dict[str, Any] | None = None) -> Iterator[Job]:
    """Run a stage as job ``tag`` (``provenance``: what array files it writes record, see
    :func:`repro26.core.io.write_npz`); on success remove the checkpoints it registered."""
    current = Job(tag, dict(provenance or {}))
    token = _CURRENT.set(current)
    try:
        yield current
    finally:
        _CURRENT.reset(token)
    for path in current.checkpoints:
        path.unlink(missing_ok=True)


def current() -> Job | None:
    return _CURRENT.get()


JOB_CPU_PREFIX = "repro26: job CPU time "
_JOB_COST = re.compile(re.escape(JOB_CPU_PREFIX) + r"([0-9.]+) s[^\n]*?(?:; peak memory ([0-9.]+) MB)?$",
                       re.M)


def job_cpu_line() -> str:
    """The last line a stage process writes to its log: its CPU seconds so far (user + system,
    all its threads, and children it waited for, from ``os.times``) and its peak resident memory
    (``getrusage``). Snakemake's ``benchmark:`` samples a job every second for 30 s and every 30 s
    after, keeping the last sample, so its ``cpu_time`` and ``max_rss`` miss what came after that
    sample; this line does not."""
    import resource

    t = os.times()
    seconds = t.user + t.system + t.children_user + t.children_system
    peak = max(resource.getrusage(who).ru_maxrss
               for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    peak_mb = peak / 2**20 if sys.platform == "darwin" else peak / 2**10  # bytes there, KiB here
    return (f"{JOB_CPU_PREFIX}{seconds:.2f} s (user + system, this process and its children); "
            f"peak memory {peak_mb:.0f} MB")


def benchmark_job_cost(benchmark_tsv: Path) -> dict[str, float | None] | None:
    """:func:`logged_job_cost` of the job whose Snakemake benchmark file this is (its log has the
    same name under ``logs/``: ``<method>/benchmarks/<job>.tsv``, ``<method>/logs/<job>.log``)."""
    return logged_job_cost(benchmark_tsv.parent.parent / "logs" / f"{benchmark_tsv.stem}.log")


def logged_job_cost(log: Any) -> dict[str, float | None] | None:
    """``{"cpu_s", "peak_mb"}`` from a stage log's last :func:`job_cpu_line` (``peak_mb`` None on
    a line without it), or ``None`` when the log has none (a shell job, a failed or older run)."""
    try:
        text = open(log, encoding="utf-8", errors="replace").read()
    except OSError:
        return None
    found = _JOB_COST.findall(text)
    if not found:
        return None
    cpu, peak = found[-1]
    return {"cpu_s": float(cpu), "peak_mb": float(peak) if peak else None}
