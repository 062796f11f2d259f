"""Stopping a run: SIGINT or SIGTERM to the snakemake process alone stops its jobs.

A terminal's Ctrl-C signals the whole foreground process group: every local job gets
SIGINT and dies at once (``_job.Job`` ends its run record FAILED, then
``_lifecycle.end_interrupted_job``), and Snakemake, interrupted too, exits. A signal sent
to the snakemake pid alone (``kill -INT PID``, a process supervisor, a batch system)
reaches no job: Snakemake 9 then waits for the running jobs to finish, on SIGINT
(``KeyboardInterrupt`` -> ``executor.cancel()`` joins the job threads) and on SIGTERM
(its ``exit_gracefully``) alike - minutes - and a job that finishes meanwhile is never
post-processed, so its outputs stay marked incomplete.

:func:`stop_jobs_on_signal` (``onstart``, local execution, main process) makes both
signals take the Ctrl-C path for the jobs and Snakemake's own orderly exit for the rest:

1. every process of the local jobs (:func:`job_processes`) gets SIGINT, as a group
   Ctrl-C would; what is still alive :data:`KILL_GRACE` s later gets SIGKILL;
2. Snakemake's scheduler is told to stop (``JobScheduler.exit_gracefully``, its own
   SIGTERM handler): it schedules nothing more, post-processes every job as it ends - an
   interrupted job's outputs are removed, a job that finished keeps its outputs and is
   marked complete - and exits once none runs (``onerror`` closes the parent run).

Both steps run in a thread, not in the handler: the handler interrupts the main thread
wherever it is, possibly holding the scheduler's (non-reentrant) lock. In a job,
:func:`interrupt_once` makes a second SIGINT (the group's and the forwarded one, or
Ctrl-C twice) harmless while the first one's run is being closed, and
:func:`ignore_interrupts` keeps a job whose outputs are written from failing.

The grace covers the job alone: tracking runs in the snakemake process, and a job ends its
run record with one append to a local file.

Under a remote executor (``--profile profiles/slurm``) nothing is installed: Snakemake's
own handling (SIGINT cancels the SLURM jobs with ``scancel``) stays as it is.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from _lifecycle import ENV_INVOCATION, flush_std_streams

KILL_GRACE = 5.0  # s from a job's SIGINT to SIGKILL of what is left of it
POLL = 0.2  # s between looks at the jobs while they end (a scan of /proc each)
SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _say(msg: str) -> None:
    print(f"ibrobust: {msg}", file=sys.stderr, flush=True)


def _processes() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, session id) of every live process (zombies left out)."""
    out = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if fields[0] not in ("Z", "X"):
            out[int(stat.parent.name)] = (int(fields[1]), int(fields[3]))
    return out


def job_processes(root: int | None = None) -> list[int]:
    """The processes of the local jobs of the snakemake process ``root`` (default: this
    one): its children and all their descendants, except children that lead a session of
    their own (a server a rule started on purpose)."""
    root = os.getpid() if root is None else root
    procs = _processes()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    todo = [pid for pid in children.get(root, []) if procs[pid][1] != pid]
    found = []
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return sorted(found)


def _signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


class Stopper:
    """What :func:`stop_jobs_on_signal` installs: the first signal starts :meth:`stop` in
    a thread; a later one only says that the run is stopping."""

    def __init__(self, scheduler: Any, grace: float = KILL_GRACE):
        self.scheduler = scheduler
        self.grace = grace
        self.signal: str | None = None  # name of the first signal received
        self.thread: threading.Thread | None = None

    def handle(self, signum: int, frame: Any = None) -> None:
        name = signal.Signals(signum).name
        if self.signal is not None:
            _say(f"{name}: already stopping (since {self.signal})")
            return
        self.signal = name
        self.thread = threading.Thread(target=self.stop, name="ibrobust-stop", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        """Tell the scheduler to stop, then SIGINT every job process until none is left
        (a job the scheduler was starting meanwhile included), SIGKILL to one still alive
        :attr:`grace` s after its SIGINT."""
        _say(
            f"{self.signal}: stopping the run - SIGINT to the running jobs' processes, as "
            f"Ctrl-C in a terminal sends (SIGKILL to any left after {self.grace:g} s); "
            "Snakemake exits once they have ended"
        )
        # Snakemake's own stop: no new job; every job post-processed as it ends
        self.scheduler.exit_gracefully()
        sent: dict[int, float] = {}  # pid -> when it got SIGINT
        killed: set[int] = set()
        while jobs := job_processes():
            now = time.monotonic()
            new = [pid for pid in jobs if pid not in sent]
            _signal_all(new, signal.SIGINT)
            sent.update(dict.fromkeys(new, now))
            late = [pid for pid in jobs if now - sent[pid] >= self.grace and pid not in killed]
            if late:
                _say(f"{len(late)} job process(es) alive {self.grace:g} s after SIGINT: SIGKILL")
                _signal_all(late, signal.SIGKILL)
                killed.update(late)
            time.sleep(POLL)


STOPPER: Stopper | None = None  # this invocation's, once installed


def stop_jobs_on_signal(workflow: Any) -> bool:
    """``onstart``: SIGINT and SIGTERM to this snakemake process stop its local jobs (see
    the module's doc). Installed only in the main snakemake process of a local run with a
    scheduler, on a system with /proc; returns whether it was installed."""
    global STOPPER
    scheduler = getattr(workflow, "scheduler", None)
    if not (
        workflow.is_main_process
        and workflow.local_exec
        and hasattr(scheduler, "exit_gracefully")
        and Path("/proc/self/stat").exists()
        and threading.current_thread() is threading.main_thread()
    ):
        return False
    STOPPER = Stopper(scheduler)
    for sig in SIGNALS:  # replaces Snakemake's SIGTERM handler (exit_gracefully alone)
        signal.signal(sig, STOPPER.handle)
    return True


def stopped_by_signal() -> bool:
    """Whether this invocation is stopping because of a signal (``onerror``: the parent run
    ends KILLED rather than FAILED)."""
    return STOPPER is not None and STOPPER.signal is not None


def exit_without_teardown() -> bool:
    """``onerror`` of a run stopped by a signal: once Snakemake has done its own end
    (locks released, "Elapsed time", the error printed, every exit handler run), the
    process ends with Snakemake's status for it, 1, without the interpreter's teardown.
    That teardown frees everything the workflow and MLflow loaded: 4.6-10 s measured from
    "Elapsed time" to the exit on 2 busy cores (load 11-12), more than the stop itself.
    Returns whether it is set."""
    if stopped_by_signal():
        atexit.register(_exit_now, 1)
        return True
    return False


def _exit_now(status: int) -> None:
    atexit.unregister(_exit_now)
    atexit._run_exitfuncs()  # the other exit handlers (log files, temporary directories)
    flush_std_streams()
    os._exit(status)


# ---- the job side ---------------------------------------------------------------------------
# Only in a job of a recorded invocation (_lifecycle.ENV_INVOCATION): a test that builds a
# Job in its own process keeps its SIGINT handling.
def _in_job() -> bool:
    return bool(os.environ.get(ENV_INVOCATION)) and (
        threading.current_thread() is threading.main_thread()
    )


def die_on_interrupt() -> None:
    """In a job, until its ``Job`` exists (``import _job``, the first import of every job
    script): SIGINT ends the process at once. Nothing is open yet, and a KeyboardInterrupt
    in the middle of ``import torch`` would cost the interpreter's teardown, seconds on a
    busy machine (:data:`KILL_GRACE` then runs out)."""
    if _in_job():
        signal.signal(signal.SIGINT, signal.SIG_DFL)


_INTERRUPTED: list[float] = []  # in a job: when SIGINTs came that did not end it (monotonic)


def _note_interrupt(signum: int, frame: Any) -> None:
    _INTERRUPTED.append(time.monotonic())


def interrupt_once() -> None:
    """In a job (``Job()``): the first SIGINT raises KeyboardInterrupt, so the job's block
    ends and its run is closed FAILED; later ones are only noted, so a second SIGINT (a
    group's and the forwarded one, or Ctrl-C twice) cannot cut that closing short.
    ``_lifecycle.end_interrupted_job`` then ends the process by SIGINT."""

    def first(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGINT, _note_interrupt)
        _note_interrupt(signum, frame)
        raise KeyboardInterrupt

    if _in_job():
        signal.signal(signal.SIGINT, first)


def ignore_interrupts() -> None:
    """In a job whose block ended cleanly (every output written): SIGINT no longer
    interrupts (it is only noted), so a stop that comes now lets
    the job end with status 0 and Snakemake marks its outputs complete, rather than failing
    the job and removing them."""
    if _in_job():
        signal.signal(signal.SIGINT, _note_interrupt)
