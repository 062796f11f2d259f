"""workflow_scripts/_scheduler.py: the run's scheduler keeps at most one re-evaluation timer
pending (as shipped, every pass of Snakemake 9's loop starts one more, for good), and the
patch is still needed on the installed Snakemake."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import snakemake

SCRIPTS = Path(__file__).resolve().parents[2] / "workflow_scripts"
sys.path.insert(0, str(SCRIPTS))
import _scheduler  # noqa: E402
from snakemake.scheduling.job_scheduler import JobScheduler  # noqa: E402


class FakeScheduler:
    """What the method uses of a JobScheduler: the semaphore its loop waits on, and
    Snakemake's own method (unpatched unless the instance is patched)."""

    def __init__(self) -> None:
        self._open_jobs = threading.Semaphore(0)

    def _schedule_reevalutation(self, delay: float) -> None:
        JobScheduler._schedule_reevalutation(self, delay)


def releases(sem: threading.Semaphore, within: float) -> int:
    """How many releases of ``sem`` arrive within ``within`` seconds."""
    n, end = 0, time.monotonic() + within
    while sem.acquire(timeout=max(0.0, end - time.monotonic())):
        n += 1
    return n


def timers() -> int:
    return sum(isinstance(t, threading.Timer) and t.is_alive() for t in threading.enumerate())


def test_upstream_still_starts_a_timer_per_pass():
    """The installed Snakemake's own method, 20 passes within one timespan: 20 timers. When
    this fails, upstream has fixed the defect: remove workflow_scripts/_scheduler.py and its
    call in rules/common.smk."""
    s = FakeScheduler()
    before = timers()
    for _ in range(20):
        s._schedule_reevalutation(0.3)
    started = timers() - before
    assert started == 20, (
        f"Snakemake {snakemake.__version__} started {started} timers for 20 passes: the "
        "scheduler defect workflow_scripts/_scheduler.py works around is gone upstream; "
        "remove the patch"
    )
    assert releases(s._open_jobs, 2.0) == 20


def test_the_patch_covers_the_installed_release():
    """The patch applies only to the releases it was verified on. When this fails, a newer
    Snakemake (still with the defect, per the test above) is installed: read its
    JobScheduler._schedule_reevalutation, then add the release to _scheduler.VERIFIED."""
    assert _scheduler.needed(), (
        f"Snakemake {snakemake.__version__} is not in _scheduler.VERIFIED {_scheduler.VERIFIED}"
    )
    assert not _scheduler.needed("8.30.0") and not _scheduler.needed("9.28.0")


def test_many_passes_start_one_timer_that_releases_once():
    s = FakeScheduler()
    assert _scheduler.coalesce_reevaluations(s)
    before = timers()
    for _ in range(50):  # 50 passes of the loop before the timespan ends
        s._schedule_reevalutation(0.2)
    assert timers() - before == 1  # shipped: 50 timer threads
    assert releases(s._open_jobs, 3.0) == 1  # shipped: 50 releases, then 50 a timespan
    # once it fired, the next pass may start a new one
    s._schedule_reevalutation(0.05)
    assert releases(s._open_jobs, 3.0) == 1


def test_the_patch_is_per_scheduler_and_leaves_the_class_alone():
    a, b, untouched = FakeScheduler(), FakeScheduler(), FakeScheduler()
    original = JobScheduler._schedule_reevalutation
    assert _scheduler.coalesce_reevaluations(a) and _scheduler.coalesce_reevaluations(b)
    assert JobScheduler._schedule_reevalutation is original
    a._schedule_reevalutation(0.1)
    b._schedule_reevalutation(0.1)  # another scheduler's pending timer does not block it
    live = [t for t in threading.enumerate() if isinstance(t, threading.Timer)]
    assert live and all(t.daemon for t in live)  # never delays Snakemake's exit
    assert releases(a._open_jobs, 3.0) == 1
    assert releases(b._open_jobs, 3.0) == 1
    before = timers()
    for _ in range(3):
        untouched._schedule_reevalutation(0.1)
    assert timers() - before == 3  # a scheduler that was not patched keeps Snakemake's method
    assert releases(untouched._open_jobs, 2.0) == 3


def test_a_scheduler_without_the_method_is_left_alone():
    assert not _scheduler.coalesce_reevaluations(object())
