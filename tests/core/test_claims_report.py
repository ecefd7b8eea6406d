"""Claims are computed from numbers; the report is built from claims files."""

import json

import numpy as np
import pytest

from repro26.core import plotting
from repro26.core.claims import Claim, read_claims, write_claims
from repro26.core.report import browser_problems, build_report, chromium_binary
from repro26.core.stats import loglog_slope, loglog_slope_over_seeds, mean_ci, summary


def test_claim_verdict_is_the_predicate_value():
    measured = {"slope": summary([-0.98, -1.02, -1.0])}
    held = Claim.check("rate", "gap is O(1/n)", "slope -1", measured,
                       lambda m: -1.3 <= m["slope"]["mean"] <= -0.7, "slope in [-1.3, -0.7]",
                       ideal={"slope": summary([-1.0, -1.0])}, ideal_note="exact solver")
    missed = Claim.check("rate2", "gap is O(1/n^2)", "slope -2", measured,
                         lambda m: m["slope"]["mean"] < -1.7, "slope < -1.7",
                         ideal_note="a pure bound test: no ideal")
    assert held.holds is True and missed.holds is False


def test_stats_match_closed_forms():
    n = np.array([10, 100, 1000.0])
    assert abs(loglog_slope(n, 3.0 / n) + 1.0) < 1e-12
    per_seed = np.stack([2.0 * n**0.5, 5.0 * n**0.5])
    out = loglog_slope_over_seeds(n, per_seed)
    assert abs(out["mean"] - 0.5) < 1e-12 and out["ci95"][0] <= 0.5 <= out["ci95"][1]
    mean, half = mean_ci(np.array([1.0, 2.0, 3.0]))
    # t_{0.975, 2} = 4.3027; sem = 1/sqrt(3)
    assert mean == 2.0 and abs(half - 4.302652729911275 / np.sqrt(3)) < 1e-9


def _two_method_report(tmp_path):
    """claims and one figure for srgw (held) and kernel_bandits (not held), gathered by the
    report; returns the claims files and the report's two paths."""
    for method, slope in (("srgw", -0.9), ("kernel_bandits", 0.9)):
        folder = tmp_path / "small" / method
        claim = Claim.check("slope", "regret slope below 0.75", "0.5", {"slope": slope},
                            lambda m: m["slope"] < 0.75, "slope < 0.75",
                            ideal_note="a bound test")
        write_claims(folder / "claims.json", method, "small", [0, 1], [claim],
                     {"jax_version": "0.7.2", "git_commit": "abc", "config_hash": "h"})
        fig, axes = plotting.subplots()
        plotting.line_with_ci(axes[0, 0], np.arange(3), np.ones((2, 3)), label="x")
        axes[0, 0].set_xlabel("n")
        plotting.save(fig, folder / "figures" / "rate.png")
        assert (folder / "figures" / "rate.pdf").stat().st_size > 0
    files = sorted((tmp_path / "small").glob("*/claims.json"))
    assert read_claims(files[0])["method"] == "kernel_bandits"
    md, html = tmp_path / "small" / "report.md", tmp_path / "small" / "report.html"
    build_report(files, "small", md, html)
    return files, md, html


def test_report_tables_verdicts_and_figures(tmp_path):
    files, md, html = _two_method_report(tmp_path)
    text = md.read_text()
    assert "2 methods, 2 claims: 1 held, 1 not held, 0 inconclusive." in text
    assert text.index("## kernel_bandits") < text.index("## srgw")
    assert ("| **slope**: regret slope below 0.75 | 0.5 | slope: 0.9 | trivial: none<br>ideal: none "
            "(a bound test) | slope < 0.75 | **did not hold** |") in text
    assert "[rate](srgw/figures/rate.png)" in text
    assert "| [srgw](#srgw) | 1/1 | slope ✓ |" in text
    assert html.read_text().count("data:image/png;base64,") == 2
    from repro26.core.report import html_problems

    assert html_problems(html) == []  # every cell short, every figure a decodable PNG
    broken = tmp_path / "broken.html"
    broken.write_text(BROKEN_PAGE)
    found = html_problems(broken)
    assert len(found) == 2 and "2000 characters" in found[0] and "does not decode" in found[1]
    assert json.loads(files[1].read_text())["claims"][0]["holds"] is True


BROKEN_PAGE = ("<table><tr><td>" + "x" * 2000 + "</td></tr></table>"
               "<img src='data:image/png;base64,AAAA'>")


@pytest.mark.skipif(chromium_binary() is None, reason="no headless Chromium on this machine "
                    "(Debian: apt-get install chromium; .ci/run installs it)")
def test_report_renders_in_a_real_browser(tmp_path):
    """headless Chromium decodes both figures and no rendered cell is over the limit; a page with
    a 2,000-character cell and a PNG that does not decode gives exactly those two problems"""
    _, _, html = _two_method_report(tmp_path)
    assert browser_problems(html) == []
    broken = tmp_path / "broken.html"
    broken.write_text(BROKEN_PAGE)
    found = browser_problems(broken)
    assert found == ["a cell of 2000 characters as rendered", "figure 0: rendered at 0×0 pixels"]


def test_report_formats_summaries_compactly_and_bounds_cells():
    from repro26.core.report import MAX_CELL, _measured

    measured = {"slope": summary([1.0, 2.0, 3.0]) | {"per_seed": [1.0, 2.0, 3.0]},
                "by_family": {"a": {"b": {"c": 1.0}}}}
    text = _measured(measured)
    assert text.startswith("slope: 2 [-0.484, 4.48] (n=3)<br>")
    assert "by_family.a.b.c: 1" in text and "per_seed" not in text
    long = _measured({f"k{i}": summary([i, i + 1.0]) for i in range(100)})
    assert len(long) < MAX_CELL + 60 and long.endswith("(all numbers in claims.json)")


def test_positive_summary_is_the_log_scale_interval():
    values = np.array([0.01, 0.1, 1.0])  # a wide spread of an error: the linear CI crosses 0
    assert summary(values)["ci95"][0] < 0
    s = summary(values, positive=True)
    half = 4.302652729911275 * np.std(np.log(values), ddof=1) / np.sqrt(3)
    assert np.isclose(s["mean"], 0.1) and s["scale"] == "log"
    assert np.allclose(s["ci95"], [0.1 * np.exp(-half), 0.1 * np.exp(half)])


def test_report_shows_trivial_ideal_and_method_side_by_side(tmp_path):
    claim = Claim.check("beats", "ours beats B", "+5 pp", {"ours": 0.61234, "baseline": 0.6},
                        lambda m: m["ours"] > m["baseline"], "ours > baseline",
                        trivial={"ours": 0.5}, trivial_note="uniform",
                        ideal={"ours": 0.55}, ideal_note="exact optimum",
                        min_detectable_effect=0.04, effect=0.05,
                        budget={"ours": {"optimiser_steps": 100}, "B": {"optimiser_steps": 100}})
    folder = tmp_path / "small" / "m"
    write_claims(folder / "claims.json", "m", "small", [0, 1], [claim], {})
    (tmp_path / "small" / "other" / "benchmarks").mkdir(parents=True)
    (tmp_path / "small" / "other" / "benchmarks" / "j.tsv").write_text("s\tcpu_time\n1\t2\n")
    (folder / "benchmarks").mkdir()
    (folder / "benchmarks" / "j.tsv").write_text("s\tmax_rss\tcpu_time\n3.5\t10\t7.25\n")
    md = tmp_path / "small" / "report.md"
    build_report([folder / "claims.json"], "small", md, tmp_path / "small" / "report.html")
    text = md.read_text()
    assert "ours: 0.612" in text
    assert "trivial (uniform): ours: 0.5 → fails<br>ideal (exact optimum): ours: 0.55 → fails" in text
    assert "the task cannot show it" in text and "minimum detectable effect 0.04; the claim's effect 0.05" in text
    assert "Budget: ours = B: optimiser_steps 100." in text  # equal budgets listed once
    assert "| m | 1 | 7 | 4 | 4 | 10 |" in text and "| other |" not in text


def test_report_marks_claims_made_with_other_code_as_stale(tmp_path):
    from repro26.core import io

    claim = Claim.check("c", "s", "p", {"x": 1.0}, lambda m: True, "c", ideal_note="none")
    for method, code in (("srgw", io.code_hash("srgw")), ("poll", "0123456789ab")):
        write_claims(tmp_path / "small" / method / "claims.json", method, "small", [0, 1], [claim],
                     {"code_hash": code})
    md = tmp_path / "small" / "report.md"
    build_report(sorted((tmp_path / "small").glob("*/claims.json")), "small", md,
                 tmp_path / "small" / "report.html")
    text = md.read_text()
    poll, srgw = text.split("## poll")[1].split("## srgw")
    assert "**Stale:** these claims were computed with code 0123456789ab" in poll
    assert "Stale" not in srgw
    assert io.run_metadata("h", method="srgw")["code_hash"] == io.code_hash("srgw")


def test_job_cpu_line_counts_this_process_and_reads_back(tmp_path):
    """The line a stage writes reports at least the CPU it burned, and a peak memory; the report
    reads both back."""
    import time

    from repro26.core.jobs import job_cpu_line, logged_job_cost

    start = time.process_time()
    while time.process_time() - start < 0.2:
        pass
    log = tmp_path / "train.log"
    log.write_text("progress\n" + job_cpu_line() + "\n")
    cost = logged_job_cost(log)
    assert cost["cpu_s"] >= 0.2 and cost["peak_mb"] > 1
    assert logged_job_cost(tmp_path / "missing.log") is None


def test_job_costs_take_cpu_from_logs_before_sampled_benchmarks(tmp_path):
    """A job's CPU is the larger of its log's own count and Snakemake's sampled ``cpu_time``
    (the log misses the shell around the stage); without a log count, the sample alone, and a
    sampled job of 30 s or more is counted as possibly low."""
    from repro26.core.report import job_costs
    from repro26.core.jobs import JOB_CPU_PREFIX

    bench, logs = tmp_path / "m" / "benchmarks", tmp_path / "m" / "logs"
    bench.mkdir(parents=True)
    logs.mkdir()
    header = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
    jobs = (("train", 90.0, 37.8), ("old", 60.0, 20.0), ("config", 0.5, "-"), ("fig", 3.0, 3.4))
    for name, wall, sampled_cpu in jobs:
        (bench / f"{name}.tsv").write_text(header + f"{wall}\t0\t100\t1\t1\t1\t0\t0\t50\t{sampled_cpu}\n")
    (logs / "train.log").write_text(f"...\n{JOB_CPU_PREFIX}45.00 s (user + system); peak memory 900 MB\n")
    (logs / "fig.log").write_text(f"{JOB_CPU_PREFIX}3.00 s (user + system)\n")
    (cost,) = job_costs(tmp_path)
    assert cost["jobs"] == 4 and cost["sampled_jobs"] == 1
    assert cost["cpu_s"] == pytest.approx(45.0 + 20.0 + 3.4)
    assert cost["peak_rss_mb"] == 900  # the log's exact peak, above every sampled max_rss (100)


def test_paper_memory_request_uses_the_logged_peak(tmp_path):
    """SLURM's `paper` memory is sized from the larger of Snakemake's sampled ``max_rss`` and the
    peak the job logged (a peak after the last sample is missing from the first)."""
    from repro26.core.cluster import measured_cost
    from repro26.core.jobs import JOB_CPU_PREFIX

    bench = tmp_path / "results" / "small" / "m" / "benchmarks"
    logs = bench.parent / "logs"
    bench.mkdir(parents=True)
    logs.mkdir()
    header = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
    for seed, peak in ((0, 300), (1, 250)):
        (bench / f"train_{seed}.tsv").write_text(header + f"95\t0\t{peak}\t1\t1\t1\t0\t0\t50\t40\n")
    (logs / "train_1.log").write_text(f"{JOB_CPU_PREFIX}90.00 s (user + system); peak memory 1200 MB\n")
    assert measured_cost(tmp_path, "results/paper/m/benchmarks/train_{seed}.tsv",
                         "results/paper") == (95.0, 1200.0)
