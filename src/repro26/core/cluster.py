"""SLURM resources of the workflow's rules: partitions, the account, and `paper`-scale requests
sized from what the same rules cost at `small`.

Snakemake's SLURM executor reads ``slurm_partition``, ``slurm_account``, ``runtime`` (minutes),
``mem_mb`` and ``gpu`` from each rule's resources. Local runs ignore them.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from repro26.core.jobs import benchmark_job_cost

DEFAULTS = {"account": "", "cpu_partition": "cpu", "gpu_partition": "gpu", "paper_time_factor": 30,
            "paper_memory_factor": 4}


def settings(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The ``slurm:`` block of config/config.yaml over the defaults."""
    return {**DEFAULTS, **overrides}


def train_resources(scale: str, slurm: Mapping[str, Any], mem_mb_small: int = 2000,
                    mem_mb_paper: int = 32000, runtime_paper: int = 720) -> dict[str, Any]:
    """Resources of a training job: a GPU and more memory at `paper` scale."""
    if scale == "paper":
        return {"mem_mb": mem_mb_paper, "runtime": runtime_paper, "gpu": 1,
                "slurm_partition": slurm["gpu_partition"]}
    return {"mem_mb": mem_mb_small, "runtime": 60, "gpu": 0}


def measured_cost(root: Path, benchmark_pattern: str, results: str) -> tuple[float, float] | None:
    """``(longest wall time s, largest peak memory MB)`` over the benchmark files of a rule's
    jobs at `small` (its benchmark path with ``results`` swapped for results/small and the
    wildcards globbed), or None when there are none. A job's peak is the larger of Snakemake's
    sampled ``max_rss`` and the exact one its log reports (:func:`repro26.core.jobs.job_cpu_line`):
    a peak after Snakemake's last sample is missing from the first."""
    pattern = re.sub(r"\{[^}]+\}", "*", benchmark_pattern.replace(f"{results}/", "results/small/", 1))
    walls, peaks = [], []
    for tsv in Path(root).glob(pattern):
        lines = tsv.read_text().splitlines()
        if len(lines) < 2:
            continue
        record = dict(zip(lines[0].split("\t"), lines[-1].split("\t")))
        walls.append(float(record["s"]))
        with contextlib.suppress(KeyError, ValueError):
            peaks.append(float(record["max_rss"]))
        logged = benchmark_job_cost(tsv)
        if logged is not None and logged["peak_mb"] is not None:
            peaks.append(logged["peak_mb"])
    return (max(walls), max(peaks, default=0.0)) if walls else None


def size_from_small(rules: Iterable[Any], root: Path, results: str, slurm: Mapping[str, Any]) -> None:
    """Size each rule's `paper` request from its jobs' `small` benchmarks. Stated scaling rule:
    runtime = max(rule's own, ceil(paper_time_factor · longest small job / 60)) minutes and
    mem_mb = max(rule's own, paper_memory_factor · largest small peak). Rules without `small`
    benchmarks keep their own requests."""
    for rule in rules:
        if not rule.benchmark:
            continue
        cost = measured_cost(root, str(rule.benchmark), results)
        if cost is None:
            continue
        wall_s, peak_mb = cost
        runtime = math.ceil(slurm["paper_time_factor"] * wall_s / 60)
        mem_mb = math.ceil(slurm["paper_memory_factor"] * peak_mb)
        for names, measured in ((("runtime",), runtime), (("mem", "mem_mb"), mem_mb)):
            key = next((k for k in names if k in rule.resources), names[-1])
            own = getattr(rule.resources.get(key), "value", None)
            if own is None or (isinstance(own, int) and measured > own):
                rule.resources[key] = measured


def assign_partitions(rules: Iterable[Any], slurm: Mapping[str, Any]) -> None:
    """Every rule that does not choose its own partition runs on ``cpu_partition``, charged to
    ``account`` when one is set."""
    for rule in rules:
        if "slurm_partition" not in rule.resources:
            rule.resources["slurm_partition"] = slurm["cpu_partition"]
        if slurm["account"] and "slurm_account" not in rule.resources:
            rule.resources["slurm_account"] = slurm["account"]
