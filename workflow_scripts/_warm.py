"""Start-up paid once: local jobs fork from one warm process that has already imported them.

Every workflow script is a fresh interpreter (Snakemake's ``script:``), and a job that uses
torch pays ~2 CPU-s importing it before it does anything (``benchmarks/bench_job_startup.py``;
~900 CPU-s over a ``reproduce``). With ``warm_start: true`` (config.yaml) a local run starts
one *warm server* in ``onstart``: a process that imports, once, every module the workflow
scripts import (torch, numpy, pandas, matplotlib, MLflow, the library), then listens on a
Unix socket. Each job's interpreter still starts - Snakemake starts it, measures it, kills it
- but its first import, ``import _warm``, hands the job over:

* **client** (the job process Snakemake started; :func:`hand_off`, this module, which
  imports nothing but the standard library's light modules): connects, sends its
  script path, argv, working directory, environment and umask, with its stdin/stdout/stderr
  as file descriptors, then waits. It forwards SIGINT, SIGTERM and SIGHUP to the job and
  ends with the job's status - its exit code, or death by the same signal - so Snakemake,
  its benchmark files and ``_signals``' stopper see one process that behaves as the job.
* **job** (``_warm_server.run_job``, a fork of the server): takes the client's streams, directory,
  environment and argv, resets signals and random state as a fresh interpreter has them, runs
  the functions registered with :func:`on_job_start` (import-time setup that reads the
  environment, e.g. ``_signals.die_on_interrupt``), and runs the script as ``__main__``. It
  is one process per job, so one MLflow run per job; the code hash is the Snakefile's, in
  ``params``. A job whose client vanishes (SIGKILL) is SIGKILLed too, as it would have been.
* **server** (``_warm_server.serve``): forks a job per connection, reaps it and sends its status to
  the client. It leads a session of its own (Ctrl-C in the terminal reaches the clients,
  which forward it once; ``_signals.job_processes`` skips it) and ends with its snakemake
  process: ``_warm_server.SERVER.stop`` in ``onsuccess``/``onerror``, ``atexit``, or - snakemake killed
  outright - when its parent is gone.

Any failure before the hand-off (no server yet, socket gone, another Python, another host)
makes the job start the ordinary way: the warm path is an optimisation, never a dependency.
It is local only: under a remote executor (the SLURM profile) no server is started and the
jobs start fresh on their nodes. The server's log, ``results/logs/warm_start.log``, ends
with a ``phases`` line (its imports' CPU and all the forking), so ``profile_workflow.py``
counts its cost beside the jobs'; each job's own ``phases`` line adds its client's start-up.
The library is imported when the server starts: edit ``src/`` during a run and the jobs
still run the code of the run's start (as Snakemake's code hashes, taken at its start, do).
"""

from __future__ import annotations

import os
import signal
import socket
import struct
import sys

ENV_SOCKET = "IBROBUST_WARM_SOCKET"  # the server's socket, exported to local jobs
ENV_PYTHON = "IBROBUST_WARM_PYTHON"  # the server's interpreter: a job in another one starts fresh
ENV_HOST = "IBROBUST_WARM_HOST"  # the server's host: a job elsewhere starts fresh
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
HEADER = struct.Struct("!I")  # length of the request that follows the descriptors

ROLE = "client"  # "server" in the warm server, "job" in a job forked from it
# (wall s, CPU s) the client had spent when it handed the job over; _job adds them to the
# job's start-up so the profile stays whole
CLIENT_STARTUP = (0.0, 0.0)
JOB_START_HOOKS: list = []


def on_job_start(fn):
    """Register ``fn()`` to run in every forked job once its environment is in place: what a
    module does at import that depends on the job's environment (run at import too)."""
    JOB_START_HOOKS.append(fn)
    fn()
    return fn


# ---- the client ---------------------------------------------------------------------------
def _server_address() -> str | None:
    """The socket of a warm server this process may hand its job to, else None: only a
    workflow script's interpreter (Snakemake's preamble put ``snakemake`` in ``__main__``),
    never a snakemake process or a tool that happens to import this module."""
    env = os.environ
    path = env.get(ENV_SOCKET)
    if ROLE != "client" or not path:
        return None
    main = sys.modules.get("__main__")
    if type(getattr(main, "snakemake", None)).__name__ != "Snakemake":
        return None
    if env.get(ENV_HOST) != socket.gethostname() or env.get(ENV_PYTHON) != interpreter():
        return None
    return path


def interpreter() -> str:
    """This interpreter and environment (two venvs of one base Python share the binary)."""
    return f"{os.path.realpath(sys.executable)}|{sys.prefix}"


def flush_std_streams() -> None:
    """Flush stdout and stderr before the process ends without the interpreter's teardown."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):  # closed, broken or None
            pass


def process_age() -> float:
    """Wall seconds since this process started (Linux /proc; 0.0 where unknown)."""
    try:
        with open("/proc/self/stat") as fh:
            start_ticks = int(fh.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as fh:
            uptime = float(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0
    return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))


def _own_startup() -> tuple[float, float]:
    import resource

    use = resource.getrusage(resource.RUSAGE_SELF)
    return process_age(), use.ru_utime + use.ru_stime


def request(startup: tuple[float, float]) -> bytes:
    """What the client sends (repr of a dict of str/int/float/list: parsed with literal_eval);
    ``ignored``: the signals this process ignores (``nohup``: SIGHUP), ignored by the job too."""
    umask = os.umask(0)
    os.umask(umask)
    return repr(
        {
            "argv": list(sys.argv),
            "cwd": os.getcwd(),
            "env": dict(os.environ),
            "umask": umask,
            "startup": startup,
            "ignored": [int(s) for s in FORWARDED if signal.getsignal(s) == signal.SIG_IGN],
        }
    ).encode()


def hand_off() -> None:
    """In a job's interpreter: run the job in a fork of the warm server and end with its
    status. Returns (the job then starts the ordinary way) when there is no server to take
    it; never returns once the server has it."""
    path = _server_address()
    if path is None or not sys.argv or not sys.argv[0]:
        return
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
        body = request(_own_startup())
        socket.send_fds(conn, [HEADER.pack(len(body))], [0, 1, 2])
        conn.sendall(body)
    except OSError:
        conn.close()
        return
    status = _Wait(conn).status()
    if status is not None:
        end_with(status)
    conn.close()  # the job never started (no pid came): it starts here, the ordinary way


class _Wait:
    """The client's wait for its job. Signals it does not ignore go to the job's process
    group (the job and what it started, as a terminal's Ctrl-C reaches them), queued until
    the job's pid is known. :meth:`status` is the job's status as the server reports it
    (exit code, or minus the signal that ended it); None when the connection ended before
    the job started (then nothing ran and the client may run the script itself)."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn, self.pid, self.pending, self.got = conn, None, [], []
        self.saved = {}
        for sig in FORWARDED:
            if signal.getsignal(sig) != signal.SIG_IGN:
                self.saved[sig] = signal.signal(sig, self.forward)

    def forward(self, signum, frame) -> None:
        self.got.append(signum)
        if self.pid is None:
            self.pending.append(signum)
        else:
            self._send(signum)

    def _send(self, signum: int) -> None:
        try:
            os.killpg(self.pid, signum)
        except (ProcessLookupError, PermissionError):  # already ended
            pass

    def status(self) -> int | None:
        reader = self.conn.makefile("rb")
        status = None
        while True:
            try:
                line = reader.readline()
            except InterruptedError:
                continue
            except OSError:  # reset: as an end of the connection
                line = b""
            if not line:
                break
            word, _, value = line.decode().partition(" ")
            if word == "pid":
                self.pid = int(value)
                while self.pending:  # signals that came before the job existed, in order
                    self._send(self.pending.pop(0))
            elif word == "status":
                status = int(value)
                break
        flush_std_streams()
        if status is None and self.pid is None:
            if self.got:  # stopped before its job existed: end as that signal would have
                return -self.got[0]
            for sig, handler in self.saved.items():
                signal.signal(sig, handler)
            return None
        if status is None:  # the server went away before the job ended
            print(
                "ibrobust: the warm job server ended before this job did; the job's status "
                "is unknown (see results/logs/warm_start.log)",
                file=sys.stderr,
                flush=True,
            )
            status = -self.got[-1] if self.got else 1
        return status


def phases_line(values: dict[str, float]) -> str:
    """``phases k=v ...`` (3 decimals): the last timing line of a job's log, and of the warm
    server's (benchmarks/profile_workflow.py parses it)."""
    return "phases " + " ".join(f"{k}={v:.3f}" for k, v in values.items())


def end_with(status: int) -> None:
    """End this process as the job ended: ``status`` >= 0 is an exit code, < 0 a signal."""
    if status < 0:
        sig = -status
        if sig not in (signal.SIGKILL, signal.SIGSTOP):  # those two have no handler to reset
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
        os.kill(os.getpid(), sig)
        status = 128 + sig  # a signal whose default action does not end the process
    os._exit(status)


if __name__ != "__main__":
    hand_off()
