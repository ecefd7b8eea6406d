"""What a stage is handed: :class:`Run`, the typed config of one job and where it writes.

Its own module so that ``cli`` (which builds a Run), ``method`` (whose stages take one) and
``report`` import it without importing each other.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from repro26.core.config import UsageError
from repro26.core.method import format_variant


@dataclasses.dataclass(frozen=True)
class Run:
    """Everything a stage needs: the typed config for the scale, where to write, which job."""

    method: str
    stage: str
    scale: str
    cfg: Any
    cfg_hash: str
    out: Path
    seed: int | None = None
    variant: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # declared --variant keys
    inputs: tuple[Path, ...] = ()
    progress: bool = True

    def meta(self, **extra: Any) -> dict[str, Any]:
        """Provenance for a results file (JAX version, git commit, config hash, job)."""
        from repro26.core.io import run_metadata

        job = {"method": self.method, "stage": self.stage, "scale": self.scale}
        if self.seed is not None:
            job["seed"] = self.seed
        if self.variant:
            job["variant"] = format_variant(**self.variant)
        return run_metadata(self.cfg_hash, **job, **extra)

    @property
    def job_tag(self) -> str:
        """Identity of this job's result: checkpoints from any other job are not resumed."""
        from repro26.core.jobs import job_tag

        return job_tag(method=self.method, stage=self.stage, scale=self.scale,
                       config=self.cfg_hash, variant=self.variant, seed=self.seed, out=str(self.out))

    def input(self, name: str) -> Path:
        """The ``--input`` whose file name is ``name`` (or ends with it)."""
        for path in self.inputs:
            if path.name == name or str(path).endswith(name):
                return path
        raise UsageError(f"--input: stage '{self.stage}' needs a file named {name}")
