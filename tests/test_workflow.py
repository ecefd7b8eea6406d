"""The Snakemake DAG: plans at every scale, lint-clean, profiles parse, bad config or target exits 2."""

import functools
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from repro26.core.registry import METHODS, implemented_methods

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]


def snakemake(*args, cwd=REPO):
    return subprocess.run([*SNAKEMAKE, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


@functools.cache
def plan(scale: str, *extra: str):
    """A dry run of the whole DAG at ``scale`` (every job forced), planned once per session:
    the tests below read the same plans."""
    return snakemake("-n", "--forceall", "--rerun-incomplete", *extra, "--config", f"scale={scale}")


def planned_jobs(stdout: str) -> dict[str, int]:
    """Parse the 'Job stats' table of a dry run into {rule: count}."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Job stats:"))
    jobs = {}
    for line in lines[start + 3:]:
        parts = line.split()
        if len(parts) != 2 or not parts[1].isdigit():
            break
        jobs[parts[0]] = int(parts[1])
    return jobs


@pytest.mark.parametrize("scale", ["smoke", "small", "paper", "probe"])
def test_dry_run_plans_every_built_method_and_the_report(scale):
    result = plan(scale)
    assert result.returncode == 0, result.stderr[-2000:]
    jobs = planned_jobs(result.stdout)
    assert jobs["all"] == 1 and jobs["report"] == 1
    methods = implemented_methods()
    for method in methods:
        assert f"results/{scale}/{method}/claims.json" in result.stdout, method
    assert jobs["claims"] == len(methods), "one claims job per method, from the protocol"
    assert jobs["figure"] >= len(methods)


def test_each_method_has_a_named_rule():
    methods = implemented_methods()
    result = plan("smoke", *methods)
    assert result.returncode == 0, result.stderr[-2000:]
    jobs = planned_jobs(result.stdout)
    assert all(jobs.get(m) == 1 for m in methods), jobs


def test_slurm_profile_parses_and_plans_every_job():
    profile = yaml.safe_load((REPO / "profiles/slurm/config.yaml").read_text())
    assert profile["executor"] == "slurm"
    assert {"jobs", "latency-wait", "retries", "default-resources"} <= set(profile)
    local = plan("paper")
    slurm = plan("paper", "--workflow-profile", "profiles/slurm")
    assert slurm.returncode == 0, slurm.stderr[-2000:]
    assert planned_jobs(slurm.stdout) == planned_jobs(local.stdout)


def test_default_profile_is_local():
    profile = yaml.safe_load((REPO / "profiles/default/config.yaml").read_text())
    assert profile["cores"] == "all" and "params" in profile["rerun-triggers"]


def test_lint_is_clean():
    result = snakemake("--lint")
    assert result.returncode == 0
    assert "Congratulations, your workflow is in a good condition!" in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("scale=huge", "repro26: config error: config.scale: 'huge' is not one of ['smoke', 'small', 'paper', 'probe']"),
        ("threads=0", "repro26: config error: config.threads: 0 is less than the minimum of 1"),
        ("kernel_bandit={smoke: {}}", "repro26: config error: kernel_bandit: unknown section (not a "
         "method or a global setting); did you mean 'kernel_bandits'?"),
        ("srgw={small: {max_iter: many}}",
         "repro26: config error: srgw.small.max_iter: expected an integer, got 'many'"),
    ],
)
def test_bad_config_is_one_line_and_exit_2(override, message):
    result = snakemake("-n", "--config", override)
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("repro26:")]
    assert errors == [message]
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("target", "reason"),
    [("kernel_bandit", "unknown target 'kernel_bandit'"),
     *[(m, f"method '{m}' is not built yet") for m in sorted(set(METHODS) - set(implemented_methods()))][:1]],
)
def test_misspelt_or_unbuilt_target_is_one_line_and_exit_2(target, reason):
    result = snakemake("-n", target)
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("repro26:")]
    assert len(errors) == 1 and errors[0].startswith(f"repro26: {reason}; targets are all, report")
    assert "Traceback" not in result.stderr and "MissingRuleException" not in result.stderr


def test_nested_command_line_values_are_typed():
    """Snakemake passes nested --config values as strings; they are read as the field's type."""
    result = snakemake("-n", "--forceall", "srgw", "--config", "scale=smoke",
                       "srgw={smoke: {max_iter: 50, tol_log10: -4.5, seeds: [0, 1, 2]}}")
    assert result.returncode == 0, result.stderr[-2000:]
    resolved = result.stdout[result.stdout.index('{"scale": "smoke", "srgw"'):]
    assert '"max_iter": 50,' in resolved and '"seeds": [0, 1, 2]' in resolved
    assert '"tol_log10": -4.5' in resolved


def _slices(*config):
    """The config slice hash in the planned command of each srgw stage, at smoke."""
    result = snakemake("-n", "-p", "--forceall", "srgw", "--config", "scale=smoke", *config)
    assert result.returncode == 0, result.stderr[-2000:]
    return dict(re.findall(r"repro26 srgw (\w+) --config \S+ --scale smoke "
                           r"--config-slice ([0-9a-f]{12})", result.stdout))


def test_a_config_change_reruns_only_the_stages_that_read_it():
    """srgw's data stage declares the fields it reads; max_iter is not one of them, k_scale is.
    A job's command carries its stage's slice hash, so Snakemake's code trigger reruns exactly
    the jobs whose slice changed (their config.json input is `ancient`)."""
    base = _slices()
    assert {"data", "fit", "evaluate"} <= set(base)
    solver = _slices("srgw={smoke: {max_iter: 7}}")
    assert solver["data"] == base["data"] and solver["fit"] != base["fit"]
    blocks = _slices("srgw={smoke: {k_scale: 2.5}}")
    assert blocks["data"] != base["data"] and blocks["fit"] != base["fit"]


def _copy_repo(dest):
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True,
                           check=True).stdout.split()
    for name in files:
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_bytes((REPO / name).read_bytes())


@pytest.mark.slow
def test_after_a_real_run_a_change_reruns_only_the_stages_reading_it(tmp_path):
    """nesyproact's data stage reads tasks_per_domain but not fault_scales: after a real run of
    it, changing fault_scales plans no data job (a Snakemake quirk made an earlier design miss
    every change, which only a real run shows), changing tasks_per_domain does."""
    _copy_repo(tmp_path)
    target = "results/smoke/nesyproact/data/tasks.csv"
    run = snakemake("--cores", "1", target, "--config", "scale=smoke", cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]

    def planned(override):
        result = snakemake("-n", target, "--config", "scale=smoke", override, cwd=tmp_path)
        assert result.returncode == 0, result.stderr[-2000:]
        return "rule nesyproact_data:" in result.stdout

    assert not planned("nesyproact={smoke: {fault_scales: [0.0, 1.0, 2.0]}}")
    assert planned("nesyproact={smoke: {tasks_per_domain: 3}}")


def test_every_rule_file_belongs_to_a_known_method():
    for smk in (REPO / "workflow/rules").glob("*.smk"):
        assert smk.stem in ("common", "protocol") or smk.stem in METHODS, smk


def test_paper_requests_are_sized_from_small_benchmarks(tmp_path):
    """With a small run's benchmark files in the folder, each paper rule asks for at least
    paper_time_factor x its longest small job and paper_memory_factor x its peak memory."""
    _copy_repo(tmp_path)
    bench = tmp_path / "results/small/srgw/benchmarks"
    bench.mkdir(parents=True)
    header = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
    (bench / "fit_n100.tsv").write_text(header + "2000\t0:33:20\t9000\t0\t0\t0\t0\t0\t0\t0\n")
    (bench / "data.tsv").write_text(header + "10\t0:00:10\t500\t0\t0\t0\t0\t0\t0\t0\n")
    result = snakemake("-n", "--forceall", "srgw", "--config", "scale=paper", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    blocks = result.stdout.split("\nrule ")
    fit = next(b for b in blocks if b.startswith("srgw_fit:"))
    data = next(b for b in blocks if b.startswith("srgw_data:"))
    assert "runtime=1000," in fit and "mem_mb=36000," in fit  # 30 x 2000 s; 4 x 9000 MB
    assert "runtime=5," in data and "mem_mb=2000," in data  # measured, above no own request
