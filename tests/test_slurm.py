"""A method's `smoke` target through `--workflow-profile profiles/slurm` on a running SLURM
cluster (CI stands one up with .ci/slurm-up). Skipped where no SLURM answers."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
METHOD = "srgw"  # 15 jobs at smoke: data, fits, POT, real networks, evaluation, figures, claims


def _slurm_is_up() -> bool:
    if shutil.which("sinfo") is None:
        return False
    result = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True)
    return result.returncode == 0 and "idle" in result.stdout.split()


def _job_ids() -> set[str]:
    out = subprocess.run(["sacct", "-X", "-n", "-P", "-o", "JobID"], capture_output=True,
                         text=True, check=True).stdout
    return set(out.split())


@pytest.mark.slurm
@pytest.mark.skipif(not _slurm_is_up(), reason="no SLURM cluster reachable (sinfo)")
def test_a_method_runs_through_the_slurm_profile(tmp_path):
    """In a copy of the repository (so local results stay untouched): every job is submitted
    with sbatch, completes in accounting, and the method's claims and figures are written."""
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True,
                           check=True).stdout.split()
    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, tmp_path / name)
    before = _job_ids()
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "--workflow-profile", "profiles/slurm", METHOD,
         "--config", "scale=smoke"],
        cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    submitted = result.stdout.count("has been submitted with SLURM jobid") + \
        result.stderr.count("has been submitted with SLURM jobid")
    new_jobs = _job_ids() - before
    assert submitted >= 10 and len(new_jobs) >= submitted
    states = subprocess.run(["sacct", "-X", "-n", "-P", "-o", "JobID,State,Partition",
                             "-j", ",".join(sorted(new_jobs))],
                            capture_output=True, text=True, check=True).stdout.split()
    assert all(line.split("|")[1] == "COMPLETED" and line.split("|")[2] == "cpu"
               for line in states), states
    results = tmp_path / "results" / "smoke" / METHOD
    assert (results / "claims.json").stat().st_size > 0
    assert len(list((results / "figures").glob("*.png"))) >= 4
    assert len(list((results / "benchmarks").glob("*.tsv"))) >= submitted
