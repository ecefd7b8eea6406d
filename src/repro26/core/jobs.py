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
