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

The patch keeps the rate limiter's intent (the loop is re-evaluated at least once per
timespan while jobs wait) with at most one pending timer: a pass that finds a timer already
pending starts none. The timer is a daemon thread, so it never delays Snakemake's exit.
Applied by ``rules/common.smk`` in the Snakemake process; a Snakemake without the method
is left alone.
"""

from __future__ import annotations

import threading

MARK = "_ibrobust_coalesced"


def coalesce_reevaluations() -> bool:
    """Patch ``JobScheduler._schedule_reevalutation`` (Snakemake's spelling) to start a timer
    only when none is pending. Returns whether the patch is (now) in place."""
    try:
        from snakemake.scheduling import job_scheduler
    except ImportError:  # another Snakemake layout: nothing to patch
        return False
    cls = getattr(job_scheduler, "JobScheduler", None)
    original = getattr(cls, "_schedule_reevalutation", None)
    if original is None:
        return False
    if getattr(original, MARK, False):
        return True
    lock = threading.Lock()
    pending: set[int] = set()  # id() of schedulers with a timer pending

    def _schedule_reevalutation(self, delay) -> None:
        key = id(self)
        with lock:
            if key in pending:
                return
            pending.add(key)

        def fire() -> None:
            with lock:
                pending.discard(key)
            self._open_jobs.release()

        timer = threading.Timer(delay, fire)
        timer.daemon = True
        timer.start()

    setattr(_schedule_reevalutation, MARK, True)
    cls._schedule_reevalutation = _schedule_reevalutation
    return True
