"""workflow_scripts/_scheduler.py: Snakemake's scheduler keeps at most one re-evaluation
timer pending (as shipped, every pass of its loop starts one more, for good)."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[2] / "workflow_scripts"
sys.path.insert(0, str(SCRIPTS))
import _scheduler  # noqa: E402
from snakemake.scheduling.job_scheduler import JobScheduler  # noqa: E402


class FakeScheduler:
    """What the method uses of a JobScheduler: the semaphore its loop waits on."""

    def __init__(self) -> None:
        self._open_jobs = threading.Semaphore(0)

    def _schedule_reevalutation(self, delay: float) -> None:  # Snakemake's, as patched now
        JobScheduler._schedule_reevalutation(self, delay)


def releases(sem: threading.Semaphore, within: float) -> int:
    """How many releases of ``sem`` arrive within ``within`` seconds."""
    n, end = 0, time.monotonic() + within
    while sem.acquire(timeout=max(0.0, end - time.monotonic())):
        n += 1
    return n


def test_patch_is_in_place_and_idempotent():
    assert _scheduler.coalesce_reevaluations()
    patched = JobScheduler._schedule_reevalutation
    assert getattr(patched, _scheduler.MARK)
    assert _scheduler.coalesce_reevaluations()
    assert JobScheduler._schedule_reevalutation is patched


def test_many_passes_start_one_timer_that_releases_once():
    _scheduler.coalesce_reevaluations()
    s = FakeScheduler()
    before = threading.active_count()
    for _ in range(50):  # 50 passes of the loop before the timespan ends
        s._schedule_reevalutation(0.2)
    assert threading.active_count() - before == 1  # shipped: 50 timer threads
    assert releases(s._open_jobs, 3.0) == 1  # shipped: 50 releases, then 50 a timespan
    # once it fired, the next pass may start a new one
    s._schedule_reevalutation(0.05)
    assert releases(s._open_jobs, 3.0) == 1


def test_timers_are_daemons_and_schedulers_independent():
    _scheduler.coalesce_reevaluations()
    a, b = FakeScheduler(), FakeScheduler()
    a._schedule_reevalutation(0.1)
    b._schedule_reevalutation(0.1)  # another scheduler's pending timer does not block it
    timers = [t for t in threading.enumerate() if isinstance(t, threading.Timer)]
    assert timers and all(t.daemon for t in timers)  # never delays Snakemake's exit
    assert releases(a._open_jobs, 3.0) == 1
    assert releases(b._open_jobs, 3.0) == 1
