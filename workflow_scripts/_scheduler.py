"""One pending scheduler re-evaluation at a time (a work-around for Snakemake 9's scheduler).

Snakemake's ``JobScheduler.schedule`` loop waits on a semaphore that every finished job
releases. With a job rate limiter (``--max-jobs-per-timespan``, default ``100/1s``, which
cannot be switched off), each pass of the loop also starts a ``threading.Timer`` that
releases the semaphore once more after the timespan. Every pass starts one timer, whether
a timer or a finished job woke it, so each finished job adds one more timer chain for good:
after N jobs the loop runs about N times a second. Each pass validates every ready job and
stats every input file of every ready job (``update_input_sizes``), even when no core is
free. On this project's ``reproduce`` target (538 jobs, 2 cores) the Snakemake process
itself used ~40 % of a core after 250 jobs, with 200 timer threads
(``benchmarks/bench_scheduler.py`` measures it).

:func:`coalesce_reevaluations` keeps the rate limiter's intent (the loop is re-evaluated at
least once per timespan while jobs wait) with at most one pending timer: a pass that finds a
timer already pending starts none. The timer is a daemon thread, so it never delays
Snakemake's exit. It patches one scheduler, the run's own (``onstart`` in
``rules/common.smk``: only runs that schedule jobs; a dry run, ``--lint`` or a report does
not get it), and only on the Snakemake releases :data:`VERIFIED` holds, the ones whose
method was read and measured: another release keeps its own method, and
``tests/unit/test_scheduler_patch.py`` says when the installed Snakemake no longer starts a
timer per pass (remove this module then) or is a newer release with the same defect (add
it to :data:`VERIFIED`).
"""

from __future__ import annotations

import threading
import types
from typing import Any

# releases whose JobScheduler._schedule_reevalutation starts one timer per call (read and
# measured); the patch applies to these only
VERIFIED = ("9.27.1",)


def needed(version: str | None = None) -> bool:
    """Whether the installed (or the given) Snakemake release is one the patch is for."""
    if version is None:
        import snakemake

        version = snakemake.__version__
    return version in VERIFIED


def coalesce_reevaluations(scheduler: Any) -> bool:
    """Give ``scheduler`` (the run's ``JobScheduler``) a ``_schedule_reevalutation``
    (Snakemake's spelling) that starts a timer only when none of its own is pending.
    Returns whether the patch is in place: False on a release not in :data:`VERIFIED` or a
    scheduler without the method."""
    if not needed() or not hasattr(scheduler, "_schedule_reevalutation"):
        return False
    lock = threading.Lock()
    pending = threading.Event()  # a timer of this scheduler is pending

    def _schedule_reevalutation(self, delay) -> None:
        with lock:
            if pending.is_set():
                return
            pending.set()

        def fire() -> None:
            pending.clear()
            self._open_jobs.release()

        timer = threading.Timer(delay, fire)
        timer.daemon = True
        timer.start()

    scheduler._schedule_reevalutation = types.MethodType(_schedule_reevalutation, scheduler)
    return True
