"""A job and the snakemake process that started it.

``kill -9`` of snakemake runs none of its handlers. Its local jobs are its children but,
unless snakemake leads its process group (a terminal's job control, not a script), nothing
signals them when it dies, so each job watches it (:func:`watch_invocation`, started by
``_job.Job``): a job whose snakemake is gone ends itself within about a second (SIGTERM,
SIGKILL :data:`ORPHAN_GRACE` s later). A SLURM job on another node cannot see the process and
is left to finish. What the dead invocation leaves: Snakemake's own lock, which
``snakemake --unlock`` removes (Snakemake's error says so), and run records without an
``end`` line, which the next sync (the next run, or ``ibrobust sync``) ends ``KILLED``.

:func:`end_interrupted_job` lets a job that Ctrl-C interrupted die at once.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time

from _tracking.record import process_start

ENV_INVOCATION = "IBROBUST_INVOCATION"  # host:pid:start of the snakemake process, for jobs
WATCH_INTERVAL = 1.0  # s between a job's looks at its snakemake process
ORPHAN_GRACE = 5.0  # s from SIGTERM to SIGKILL when a job outlives its snakemake


def export() -> str:
    """``onstart``: tell the jobs which process is their snakemake (:data:`ENV_INVOCATION`)."""
    token = f"{socket.gethostname()}:{os.getpid()}:{process_start(os.getpid()) or ''}"
    os.environ[ENV_INVOCATION] = token
    return token


def watch_invocation(interval: float = WATCH_INTERVAL) -> threading.Thread | None:
    """In a job: a daemon thread that ends this process once its snakemake is gone. None
    where there is nothing to watch (no invocation exported, or it runs on another host)."""
    token = os.environ.get(ENV_INVOCATION)
    if not token:
        return None
    host, pid, start = token.rsplit(":", 2)
    if host != socket.gethostname() or int(pid) == os.getpid():
        return None

    def alive() -> bool:
        now = process_start(int(pid))
        return now is not None and (not start or not now or now == start)

    def watch() -> None:
        while alive():
            time.sleep(interval)
        print(f"ibrobust: the snakemake process of this job (pid {pid} on {host}) is gone: "
              "ending the job", file=sys.stderr, flush=True)  # fmt: skip
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(ORPHAN_GRACE)
        os.kill(os.getpid(), signal.SIGKILL)

    thread = threading.Thread(target=watch, name="ibrobust-invocation-watch", daemon=True)
    thread.start()
    return thread


def flush_std_streams() -> None:
    """Flush stdout and stderr before the process ends without the interpreter's teardown."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):  # closed, broken or None
            pass


def end_interrupted_job() -> None:
    """In a job that Ctrl-C interrupted (KeyboardInterrupt), once its log and record are
    closed: die by SIGINT at once, as Python would after its interpreter teardown - which
    for a job that imported torch takes seconds on a busy machine (4.6-4.9 s measured at
    load 35), seconds Snakemake waits before it can stop."""
    flush_std_streams()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
    os.kill(os.getpid(), signal.SIGINT)
    os._exit(128 + signal.SIGINT)  # not reached: SIGINT's default action ends the process
