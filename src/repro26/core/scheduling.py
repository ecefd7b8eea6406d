"""A fix for Snakemake's local job scheduler, applied by the Snakefile before any job runs.

Snakemake 9 (checked on 9.27) wakes its scheduling loop one second after every pass that leaves
jobs waiting, to re-check its job-rate limit (``--max-jobs-per-timespan``, default ``100/1s``),
by starting a new ``threading.Timer`` (``JobScheduler._schedule_reevalutation``). Each finished
job also wakes the loop, and that pass starts a timer of its own, so the timers form chains that
go on for as long as jobs wait: after n finished jobs the loop runs about n passes a second, each
over every ready job. Measured on the `small` run of all 19 methods at ``--cores 2``: 173 live
timer threads after 190 of 572 jobs, and the Snakemake process itself at a quarter of one core,
growing as the run goes on.

One pending wake-up is enough (any pass looks at every ready job), so the fix keeps at most one
timer per scheduler, as a daemon thread so that a pending one never delays Snakemake's exit.
"""

from __future__ import annotations

import threading

_LOCK = threading.Lock()
_PENDING = "_repro26_wakeup_pending"


def _schedule_one_wakeup(scheduler, delay: float) -> None:
    """Release the scheduler's loop once after ``delay`` seconds, unless a release is pending."""
    with _LOCK:
        if getattr(scheduler, _PENDING, False):
            return
        setattr(scheduler, _PENDING, True)

    def wake() -> None:
        with _LOCK:
            setattr(scheduler, _PENDING, False)
        scheduler._open_jobs.release()

    timer = threading.Timer(delay, wake)
    timer.daemon = True
    timer.start()


def keep_one_wakeup_timer() -> bool:
    """Replace ``JobScheduler._schedule_reevalutation`` by :func:`_schedule_one_wakeup`.
    Returns False (and changes nothing) on a Snakemake without that method."""
    from snakemake.scheduling import job_scheduler

    cls = job_scheduler.JobScheduler
    if not hasattr(cls, "_schedule_reevalutation"):
        return False
    cls._schedule_reevalutation = _schedule_one_wakeup
    return True
