"""One invocation of the workflow, and what it leaves behind when it dies.

An *invocation* is one ``snakemake`` process that runs jobs. It is identified by its host,
pid and the process's start time (:class:`Invocation`; the start time tells a reused pid
from the original). ``kill -9`` of that process runs none of its handlers, so whatever
it held is cleaned up elsewhere:

* **its jobs** watch it (:func:`watch_invocation`, started by every job through
  ``_job.Job``): a job whose invocation's process is gone ends itself within about a
  second. Local jobs are children of snakemake but, unless snakemake leads its process
  group (a terminal's job control, not a script), nothing signals them when it dies, so
  the job watches rather than relying on the group (it also works for a SLURM job on
  the same host). A SLURM job on another node cannot see the process and is left to
  finish (the rerun redoes it: its outputs are incomplete).
* **its Snakemake locks** (``.snakemake/locks/``): :func:`record` (``onstart``) writes
  which lock files the invocation holds under ``.snakemake/ibrobust/invocations/``;
  :func:`clear_stale_locks`, run while the next invocation parses the workflow (before
  Snakemake checks its locks), removes those of a recorded invocation of this host whose
  process is gone, and says so: no ``--unlock``. Locks of another host's invocation, or
  of one killed before its ``onstart``, are left to ``--unlock``.
* **its MLflow parent run** (and the job runs under it) stays RUNNING: the parent run
  carries :func:`run_tags`; :func:`close_orphaned_runs` (``onstart``) ends those of a
  dead invocation of this host KILLED and says so. Runs of a live invocation (a
  concurrent run in another directory, or on another host) are never touched.

:func:`bounded` runs an end-of-run step with a deadline, so an unreachable tracking
server delays the end of an invocation by seconds, not by minutes of client retries;
:func:`end_interrupted_job` lets a job that Ctrl-C interrupted die at once.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENV_INVOCATION = "IBROBUST_INVOCATION"  # host:pid:start of the snakemake process, for jobs
RECORDS = Path(".snakemake") / "ibrobust" / "invocations"  # under the working directory
TAG_PREFIX = "ibrobust.invocation."  # parent-run tags: .host .pid .start
WATCH_INTERVAL = 1.0  # s between a job's looks at its invocation's process
KILL_GRACE = 5.0  # s from SIGTERM to SIGKILL when a job outlives its invocation


def _say(msg: str) -> None:
    from _tracking.masking import mask_secrets  # an MLflow error carries its URL

    print(f"ibrobust: {mask_secrets(msg)}", file=sys.stderr, flush=True)


def _process_start(pid: int) -> str | None:
    """The start time of a live process (clock ticks since boot, from /proc), "" where
    /proc is absent and the process exists, None if there is no such live process
    (zombies count as gone: a killed process its parent has not reaped yet)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        if Path("/proc/self/stat").exists():
            return None
        try:  # no /proc (macOS): existence only
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return ""
    except (OSError, IndexError):
        return None
    if fields[0] in ("Z", "X"):
        return None
    return fields[19]  # field 22 of stat: starttime


@dataclass(frozen=True)
class Invocation:
    """A snakemake process: host name, pid and start time (see :func:`_process_start`)."""

    host: str
    pid: int
    start: str

    @classmethod
    def current(cls) -> Invocation:
        return cls(socket.gethostname(), os.getpid(), _process_start(os.getpid()) or "")

    @classmethod
    def parse(cls, token: str) -> Invocation:
        """The inverse of :meth:`token` (``host:pid:start``)."""
        host, pid, start = token.rsplit(":", 2)
        return cls(host, int(pid), start)

    def token(self) -> str:
        return f"{self.host}:{self.pid}:{self.start}"

    def on_this_host(self) -> bool:
        return self.host == socket.gethostname()

    def alive(self) -> bool:
        """Whether the process still runs (True for another host's: it cannot be checked)."""
        if not self.on_this_host():
            return True
        start = _process_start(self.pid)
        return start is not None and (not self.start or not start or start == self.start)

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}"


# ---- the invocation's record and Snakemake's locks ---------------------------------------
def _record_path(inv: Invocation, root: Path) -> Path:
    return root / RECORDS / f"{inv.host}-{inv.pid}.json"


def record(workflow: Any, root: Path = Path()) -> Invocation:
    """``onstart``: record this invocation (pid, host, start, the lock files Snakemake
    holds for it) and export it to the jobs (:data:`ENV_INVOCATION`)."""
    inv = Invocation.current()
    os.environ[ENV_INVOCATION] = inv.token()
    # the file backend's own lock files (snakemake.persistence.file); none with --nolock
    held = getattr(getattr(workflow, "persistence", None), "_lockfile", None) or {}
    locks = {os.path.relpath(p, root.resolve()): _identity(Path(p)) for p in held.values()}
    path = _record_path(inv, root)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"invocation": inv.token(), "locks": locks, "t": time.time()}))
    tmp.replace(path)
    return inv


def _identity(path: Path) -> list[int] | None:
    """(inode, mtime) of a lock file: Snakemake reuses lock-file names (0.input.lock, ...),
    so a recorded name alone could point at a live invocation's lock."""
    try:
        st = path.stat()
    except OSError:
        return None
    return [st.st_ino, st.st_mtime_ns]


def forget(root: Path = Path()) -> None:
    """``onsuccess``/``onerror``: this invocation ended normally; its record goes."""
    _record_path(Invocation.current(), root).unlink(missing_ok=True)


# Snakemake command-line modes that run no job (their locks are not checked, or only warned
# about): a dry run, --lint, a report, --unlock, the summaries, listings and graphs
NO_JOBS = (
    "dryrun", "lint", "report", "unlock", "summary", "detailed_summary", "list_rules",
    "list_target_rules", "list_changes", "list_input_changes", "list_params_changes",
    "list_untracked", "list_conda_envs", "dag", "d3dag", "rulegraph", "filegraph",
    "cleanup_metadata", "cleanup_shadow", "containerize", "archive", "export_cwl",
    "generate_unit_tests", "print_compilation", "delete_all_output", "delete_temp_output",
)  # fmt: skip


def command_runs_jobs(argv: list[str] | None = None) -> bool:
    """Whether this snakemake command line (``sys.argv``) may run jobs, read with Snakemake's
    own argument parser (a workflow profile adds none of :data:`NO_JOBS`); False when it
    cannot be read (Snakemake's API rather than its command line: nothing is assumed)."""
    try:
        from snakemake.cli import get_argument_parser

        args, _ = get_argument_parser().parse_known_args(sys.argv[1:] if argv is None else argv)
    except (SystemExit, Exception):  # not a snakemake command line
        return False
    return not any(getattr(args, mode, None) for mode in NO_JOBS)


def clear_stale_locks(root: Path = Path()) -> list[str]:
    """Remove the Snakemake lock files of recorded invocations of this host whose process
    is gone (and their records); say which. Returns the removed files."""
    removed: list[str] = []
    for path in sorted((root / RECORDS).glob("*.json")):
        try:
            rec = json.loads(path.read_text())
            inv = Invocation.parse(rec["invocation"])
        except (OSError, ValueError, KeyError):
            continue  # being written, or not ours
        if inv.alive():
            continue
        gone = [
            lock
            for lock, ident in rec["locks"].items()
            if ident is not None and _identity(root / lock) == ident
        ]
        for lock in gone:
            (root / lock).unlink(missing_ok=True)
        path.unlink(missing_ok=True)
        removed += gone
        if gone:
            _say(
                f"removed the Snakemake locks of a dead invocation ({inv.describe()}, which "
                f"no longer runs): {', '.join(gone)}; no --unlock needed"
            )
    return removed


# ---- a job's watch on its invocation --------------------------------------------------------
def watch_invocation(interval: float = WATCH_INTERVAL) -> threading.Thread | None:
    """In a job: a daemon thread that ends this process (SIGTERM, then SIGKILL after
    :data:`KILL_GRACE` s) once the invocation that started it is gone. None where there
    is nothing to watch (no invocation recorded, or it runs on another host)."""
    token = os.environ.get(ENV_INVOCATION)
    if not token:
        return None
    inv = Invocation.parse(token)
    if not inv.on_this_host() or inv.pid == os.getpid():
        return None

    def watch() -> None:
        while inv.alive():
            time.sleep(interval)
        _say(f"the snakemake process of this job ({inv.describe()}) is gone: ending the job")
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(KILL_GRACE)
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
    """In a job that Ctrl-C interrupted (KeyboardInterrupt), once its log and run are
    closed: die by SIGINT at once, as Python would after its interpreter teardown - which
    for a job that imported torch takes seconds on a busy machine (4.6-4.9 s measured at
    load 35), seconds Snakemake waits before it can stop."""
    flush_std_streams()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
    os.kill(os.getpid(), signal.SIGINT)
    os._exit(128 + signal.SIGINT)  # not reached: SIGINT's default action ends the process


# ---- MLflow: the parent runs of dead invocations ----------------------------------------------
def run_tags(inv: Invocation | None = None) -> dict[str, str]:
    """Tags of a parent run that name its invocation (what :func:`close_orphaned_runs` reads)."""
    inv = inv or Invocation.current()
    return {
        f"{TAG_PREFIX}host": inv.host,
        f"{TAG_PREFIX}pid": str(inv.pid),
        f"{TAG_PREFIX}start": inv.start,
    }


def _tagged_invocation(tags: dict[str, str]) -> Invocation | None:
    try:
        return Invocation(
            tags[f"{TAG_PREFIX}host"], int(tags[f"{TAG_PREFIX}pid"]), tags[f"{TAG_PREFIX}start"]
        )
    except (KeyError, ValueError):
        return None  # a parent run of an older version: its invocation is unknown


def close_orphaned_runs(client: Any, experiment_id: str) -> list[str]:
    """End KILLED the RUNNING parent runs of ``experiment_id`` whose invocation (from
    :func:`run_tags`) is a process of this host that is gone, and their RUNNING job runs;
    say so. Returns the ids of the parent runs closed."""
    running = "attributes.status = 'RUNNING'"
    parents = client.search_runs(
        [experiment_id], filter_string=f"tags.`ibrobust.kind` = 'workflow' and {running}"
    )
    closed = []
    for parent in parents:
        inv = _tagged_invocation(parent.data.tags)
        if inv is None or inv.alive():
            continue
        pid = parent.info.run_id
        children = client.search_runs(
            [experiment_id], filter_string=f"tags.`mlflow.parentRunId` = '{pid}' and {running}"
        )
        for run in [*children, parent]:
            client.set_terminated(run.info.run_id, status="KILLED")
        closed.append(pid)
        _say(
            f"closed the parent run {parent.info.run_name!r} ({pid}) of a dead invocation "
            f"({inv.describe()}) as KILLED, with {len(children)} job run(s) it left RUNNING"
        )
    return closed


# ---- bounded end-of-run steps ---------------------------------------------------------------
def bounded(timeout: float, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> bool:
    """Run ``fn(*args, **kwargs)`` in a daemon thread and wait at most ``timeout`` s.
    Returns whether it finished; an error or an overrun is reported (stderr), not raised:
    the steps this bounds (closing runs, stopping threads) must never hold up an exit."""
    error: list[BaseException] = []

    def run() -> None:
        try:
            fn(*args, **kwargs)
        except BaseException as err:  # noqa: BLE001 - reported below
            error.append(err)

    thread = threading.Thread(target=run, name=f"ibrobust-{what}", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        _say(f"{what} did not finish within {timeout:g} s; going on without it")
        return False
    if error:
        _say(f"{what} failed: {type(error[0]).__name__}: {error[0]}")
        return False
    return True
