"""The probe scale and `repro26 probe`: paper shapes with the probe's overrides, and the outcome
of a Snakemake run read off its own output and its jobs' logs."""

import shutil

import pytest

from repro26.core.config import resolve_section
from repro26.core.probe import Outcome, parse_log, table

needs_prlimit = pytest.mark.skipif(shutil.which("prlimit") is None,
                                   reason="util-linux's prlimit sets the probe's memory cap")

SECTION = {
    "common": {"steps": 10, "sizes": [1, 2]},
    "smoke": {"seeds": [0, 1]},
    "small": {"seeds": [0, 1, 2]},
    "paper": {"seeds": [0, 1, 2, 3], "steps": 10000, "sizes": [100, 1000], "width": 512},
    "probe": {"seeds": [0], "steps": 1, "sizes": [1000]},
}


def test_probe_is_paper_with_its_overrides():
    assert resolve_section(SECTION, "probe", "m") == {
        "steps": 1, "sizes": [1000], "seeds": [0], "width": 512}


def test_a_stage_slice_of_the_probe_resolves_to_itself():
    """A stage's config slice stores the merged probe values alone, under ``probe``."""
    merged = resolve_section(SECTION, "probe", "m")
    assert resolve_section({"probe": merged}, "probe", "m") == merged


SNAKEMAKE_OUTPUT = """\
Job stats:
job              count
-------------  -------
m_data               1
m_train              2
total                3

Error in rule m_train:
    jobid: 2
    log: {log_mem} (check log file(s) for error details)
2 of 3 steps (67%) done
Error in rule m_train:
    jobid: 3
    log: {log_err} (check log file(s) for error details)
"""


def test_the_outcome_is_read_off_snakemakes_output_and_the_job_logs(tmp_path):
    log_mem, log_err = tmp_path / "mem.log", tmp_path / "err.log"
    log_mem.write_text("compiling\nrepro26: error: train: one compiled chunk of 1 steps needs "
                       "about 90.1 GB of memory; this machine has 20 GB available (lower it)\n")
    log_err.write_text("Traceback (most recent call last):\n  ...\nValueError: shapes differ\n\n")
    text = SNAKEMAKE_OUTPUT.format(log_mem=log_mem, log_err=log_err)
    outcome = parse_log("m", text, root=tmp_path)
    assert (outcome.planned, outcome.done) == (3, 2)
    assert outcome.refused == [("m_train", "repro26: error: train: one compiled chunk of 1 steps "
                                "needs about 90.1 GB of memory; this machine has 20 GB "
                                "available (lower it)")]
    assert outcome.failed == [("m_train", "ValueError: shapes differ")]
    assert outcome.status == "fails"
    report = table([outcome, Outcome("n", planned=4, done=4)])
    assert "| m | 2 of 3 | fails | 0 | none |" in report and "| n | 4 of 4 | every job ran |" in report
    assert "- m `m_train`: failed: ValueError: shapes differ" in report


@needs_prlimit
def test_a_job_that_outgrows_the_probes_memory_limit_fails_on_its_allocation_and_is_refused(tmp_path):
    """Under the probe's address-space limit a too-large allocation raises in the job (it does not
    swap or take down its neighbours), and the parser files it under "needs a bigger machine"."""
    import subprocess
    import sys

    from repro26.core.probe import capped

    log = tmp_path / "job.log"
    with log.open("w") as out:
        code = subprocess.call(capped([sys.executable, "-c", "import numpy; numpy.ones(2**31)"],
                                      2**30), stdout=out, stderr=subprocess.STDOUT)
    assert code != 0
    outcome = parse_log("m", f"total 1\nError in rule m_data:\n    log: {log}\n", root=tmp_path)
    assert [rule for rule, _ in outcome.refused] == ["m_data"] and not outcome.failed


def test_a_job_stopped_by_the_time_limit_is_not_a_failure(tmp_path):
    log = tmp_path / "eval.log"
    log.write_text("Traceback (most recent call last):\n  ...\nKeyboardInterrupt\n")
    text = f"total 2\n1 of 2 steps (50%) done\nError in rule m_evaluate:\n    log: {log}\n"
    stopped = parse_log("m", text, root=tmp_path, interrupted=True)
    assert not stopped.failed and stopped.status == "stopped at the time limit"
    assert parse_log("m", text, root=tmp_path).failed == [("m_evaluate", "KeyboardInterrupt")]


def test_a_run_with_nothing_left_is_up_to_date_and_one_that_never_planned_fails():
    assert parse_log("m", "Building DAG of jobs...\nNothing to be done (all requested files are "
                          "present and up to date).\n").status == "every job had run before"
    stopped = parse_log("m", "repro26: config error: m.steps: must be >= 1, got 0\n")
    assert stopped.failed == [("snakemake", "repro26: config error: m.steps: must be >= 1, got 0")]


@needs_prlimit
def test_the_memory_pre_check_sees_the_address_space_limit():
    """Under the probe's cap, ``memory.available_bytes`` is at most what the cap leaves, so a
    stage's pre-check says "needs about N GB" instead of failing on the allocation."""
    import subprocess
    import sys

    from repro26.core.probe import capped

    code = ("from repro26.core import memory; import jax; "
            "print(memory.available_bytes() / memory.GB)")
    out = subprocess.run(capped([sys.executable, "-c", code], 6 * 2**30), capture_output=True,
                         text=True, check=True).stdout
    assert 0 < float(out) < 6
