"""The scheduler fix (core/scheduling.py): one pending wake-up, released once, never blocking exit."""

import threading
import time

from snakemake.scheduling.job_scheduler import JobScheduler

from repro26.core import scheduling


class _Loop:
    """The part of a JobScheduler the wake-up touches: the semaphore its loop waits on."""

    def __init__(self):
        self._open_jobs = threading.Semaphore(0)


def _releases(sem: threading.Semaphore) -> int:
    n = 0
    while sem.acquire(blocking=False):
        n += 1
    return n


def test_many_requests_start_one_daemon_timer_and_release_once():
    loop = _Loop()
    before = threading.active_count()
    for _ in range(50):
        scheduling._schedule_one_wakeup(loop, 0.05)
    timers = [t for t in threading.enumerate() if isinstance(t, threading.Timer)]
    assert threading.active_count() - before == 1 and all(t.daemon for t in timers)
    assert loop._open_jobs.acquire(timeout=10)  # it fires (waiting, not a fixed sleep: load-proof)
    time.sleep(0.1)
    assert _releases(loop._open_jobs) == 0  # and only once
    # after it fired, the next request schedules a new one
    scheduling._schedule_one_wakeup(loop, 0.01)
    assert loop._open_jobs.acquire(timeout=10)


def test_the_installed_snakemake_is_patched():
    original = JobScheduler._schedule_reevalutation
    try:
        assert scheduling.keep_one_wakeup_timer()
        assert JobScheduler._schedule_reevalutation is scheduling._schedule_one_wakeup
    finally:
        JobScheduler._schedule_reevalutation = original
