"""``repro26 probe``: every stage of every method at the paper's shapes, one step each.

The ``probe`` scale is ``paper`` with each method's ``probe`` overrides: one seed (two where the
claims refuse fewer), one optimiser step, generation, iteration or rollout per stage, and the
largest size of a grid of sizes. Its verdicts mean nothing; what it shows is that the paper's
shapes compile, fit and step. The probe runs the pipeline method by method
(``snakemake --keep-going --config scale=probe <method>``) and writes ``results/probe/probe.md``:
for each method the jobs that ran, the jobs the memory pre-checks refused (they need a bigger
machine: the line says how much), and the jobs that failed, each with its log's last line.
Every job runs under an address-space limit (``--memory-limit``, by default 80% of the memory
available when the probe starts), so a stage without a pre-check that outgrows the machine fails
on its own allocation (and is listed as needing a bigger machine) instead of swapping or taking
down the processes beside it. Each method's outcome is kept in ``results/probe/<method>/probe.json``, so the table gathers every
method probed so far, one run or several.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from repro26.core import io, memory
from repro26.core.config import PROBE, UsageError
from repro26.core.registry import implemented_methods

RESULTS = Path("results") / PROBE
_MEMORY = re.compile(r"needs about [\d.e+-]+ GB of memory|MemoryError|RESOURCE_EXHAUSTED|"
                     r"[Oo]ut of memory|std::bad_alloc|Cannot allocate memory")
_ERROR = re.compile(r"^Error in rule (\S+):")
_LOG = re.compile(r"^\s*log: (\S+)")
_PROGRESS = re.compile(r"^(\d+) of (\d+) steps")
_TOTAL = re.compile(r"^total\s+(\d+)")


@dataclass
class Outcome:
    """What one method's probe run did: ``done`` of ``planned`` jobs; the refused (memory) and
    failed jobs as ``(rule, reason)``; ``stopped`` when the time limit ended it."""

    method: str
    planned: int = 0
    done: int = 0
    refused: list[tuple[str, str]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    stopped: bool = False
    cpu_seconds: float = 0.0
    memory_limit_gb: float | None = None  # each job's address-space cap (None: none)
    up_to_date: bool = False  # every job had run before

    @property
    def status(self) -> str:
        if self.failed:
            return "fails"
        if self.refused:
            return "needs a bigger machine for some jobs"
        if self.up_to_date:
            return "every job had run before"
        if self.planned and self.done == self.planned:
            return "every job ran"
        return "stopped at the time limit" if self.stopped else "incomplete"


def _last_line(path: Path) -> str:
    lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()] \
        if path.is_file() else []
    return lines[-1][:240] if lines else "(empty log)"


def parse_log(method: str, log_text: str, root: Path = Path("."),
              interrupted: bool = False) -> Outcome:
    """The outcome of one ``snakemake --keep-going`` run from its own output: planned jobs (the
    first job-stats total), finished jobs (the last "k of n steps" line), and for each "Error in
    rule" the rule's log: a memory refusal if it says "needs about N GB of memory", else a
    failure with the log's last line. With ``interrupted`` (the probe sent SIGINT at its time
    limit) a job whose log ends in ``KeyboardInterrupt`` was stopped, not failed."""
    outcome = Outcome(method, stopped=interrupted)
    rule = None
    for line in log_text.splitlines():
        if not outcome.planned and (m := _TOTAL.match(line.strip())):
            outcome.planned = int(m.group(1))
        if m := _PROGRESS.match(line.strip()):
            outcome.done = int(m.group(1))
        if m := _ERROR.match(line.strip()):
            rule = m.group(1)
        elif rule and (m := _LOG.match(line)):
            log_path = root / m.group(1)
            text = log_path.read_text(errors="replace") if log_path.is_file() else ""
            refusal = next((ln for ln in text.splitlines() if _MEMORY.search(ln)), None)
            if refusal is not None:
                outcome.refused.append((rule, refusal.strip()[:240]))
            elif not (interrupted and _last_line(log_path).startswith("KeyboardInterrupt")):
                outcome.failed.append((rule, _last_line(log_path)))
            rule = None
    if not outcome.planned:
        if "Nothing to be done" in log_text:
            outcome.up_to_date = True
        else:  # Snakemake stopped before planning: a config error, a lock
            lines = [ln.strip() for ln in log_text.splitlines() if ln.strip()]
            outcome.failed.append(("snakemake", lines[-1][:240] if lines else "(no output)"))
    return outcome


def _default_limit() -> int | None:
    """80% of the host memory available now; none on an accelerator, whose runtime reserves far
    more address space than it uses (there the device's own memory check applies)."""
    import jax

    return int(0.8 * memory.available_bytes()) if jax.default_backend() == "cpu" else None


def capped(cmd: list[str], nbytes: int | None) -> list[str]:
    """``cmd`` under an address-space limit of ``nbytes`` (``prlimit --as``, inherited by every
    process it starts); unchanged without a limit or without util-linux's ``prlimit``. An
    external program sets it so that nothing runs between ``fork`` and ``exec`` of a JAX
    process."""
    if nbytes is None or shutil.which("prlimit") is None:
        return cmd
    return ["prlimit", f"--as={nbytes}", "--", *cmd]


def run_method(method: str, cores: int, time_limit: float | None,
               memory_limit: int | None) -> Outcome:
    """One method's pipeline at ``probe`` scale, each process capped at ``memory_limit`` bytes of
    address space; its Snakemake output goes to ``results/probe/<method>/snakemake.log``. At the
    time limit Snakemake gets SIGINT (it stops its jobs and removes their partial outputs)."""
    log_path = RESULTS / method / "snakemake.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    cmd = capped([sys.executable, "-m", "snakemake", "--cores", str(cores), "--keep-going",
                  "--config", f"scale={PROBE}", "--", method], memory_limit)
    stopped = False
    start = os.times()
    with log_path.open("w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            proc.wait(timeout=time_limit)
        except subprocess.TimeoutExpired:
            stopped = True
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    end = os.times()
    outcome = parse_log(method, log_path.read_text(errors="replace"), interrupted=stopped)
    capped_here = memory_limit is not None and shutil.which("prlimit") is not None
    outcome.memory_limit_gb = round(memory_limit / memory.GB, 1) if capped_here else None
    outcome.cpu_seconds = (end.children_user - start.children_user
                           + end.children_system - start.children_system)
    io.write_json(RESULTS / method / "probe.json", dataclasses.asdict(outcome))
    return outcome


def gather(methods: Sequence[str]) -> list[Outcome]:
    """The recorded outcome of every method in ``methods`` that has been probed."""
    outcomes = []
    for method in methods:
        path = RESULTS / method / "probe.json"
        if path.is_file():
            record = io.read_json(path)
            for key in ("refused", "failed"):
                record[key] = [tuple(job) for job in record[key]]
            outcomes.append(Outcome(**record))
    return outcomes


def table(outcomes: Sequence[Outcome]) -> str:
    """``probe.md``: one row per method, then every refused or failed job with its reason."""
    rows = ["| method | jobs run | status | CPU s | memory cap per job |", "|---|---|---|---|---|"]
    rows += [f"| {o.method} | {o.done} of {o.planned} | {o.status} | {o.cpu_seconds:.0f} | "
             f"{'none' if o.memory_limit_gb is None else f'{o.memory_limit_gb:g} GB'} |"
             for o in outcomes]
    notes = [f"- {o.method} `{rule}`: {kind}: {reason}"
             for o in outcomes
             for kind, jobs in (("needs a bigger machine", o.refused), ("failed", o.failed))
             for rule, reason in jobs]
    return "\n".join(["# Paper shapes, one step each (`repro26 probe`)", "", *rows, "",
                      *(notes or ["Every job that ran finished."]), ""])


def main(argv: Sequence[str]) -> int:
    from repro26.core.cli import _Parser

    parser = _Parser(
        prog="repro26 probe",
        description="Run every stage of the given methods (default: all) at the paper's shapes "
                    "for one step and one seed; write results/probe/probe.md.")
    parser.add_argument("methods", nargs="*", help="methods to probe (default: every method)")
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                        help="stop each method's run after this many seconds")
    parser.add_argument("--memory-limit", type=float, default=None, metavar="GB",
                        help="address-space limit of each job (default: 80%% of the memory "
                             "available now)")
    args = parser.parse_args(argv)
    known = implemented_methods()
    for method in args.methods:
        if method not in known:
            raise UsageError(f"{method}: not a method; use one of {', '.join(known)}")
    if args.cores < 1:
        raise UsageError(f"--cores: at least 1, got {args.cores}")
    if args.time_limit is not None and args.time_limit <= 0:
        raise UsageError(f"--time-limit: a positive number of seconds, got {args.time_limit:g}")
    if args.memory_limit is not None and args.memory_limit <= 0:
        raise UsageError(f"--memory-limit: a positive number of GB, got {args.memory_limit:g}")
    limit = _default_limit() if args.memory_limit is None else int(args.memory_limit * memory.GB)
    if not Path("Snakefile").is_file():
        raise UsageError("run repro26 probe in the repository's root (no Snakefile here)")
    failed = False
    for method in args.methods or known:
        t0 = time.monotonic()
        outcome = run_method(method, args.cores, args.time_limit, limit)
        failed |= bool(outcome.failed)
        print(f"probe {method}: {outcome.done} of {outcome.planned} jobs, {outcome.status} "
              f"({time.monotonic() - t0:.0f} s)", file=sys.stderr)
    text = table(gather(known))
    io.atomic_write_text(RESULTS / "probe.md", text)
    print(text)
    return 1 if failed else 0
