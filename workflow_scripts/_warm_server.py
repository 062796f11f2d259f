"""The warm job server of ``_warm`` (read its doc first): what runs in the server process,
in each job forked from it, and the Snakefile's handle that starts and stops it.

    python workflow_scripts/_warm_server.py SOCKET SNAKEMAKE_PID LOG [SCRIPTS_DIR]
"""

from __future__ import annotations

import _warm

import ast
import atexit
import importlib
import os
import pkgutil
import resource
import runpy
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

# ---- the server -----------------------------------------------------------------------------
# imported besides the scripts' imports: every library module (kinds and claims modules are
# loaded by name at run time), and what a job calls to take its threads (run_job)
PRELOAD_PACKAGES = ("ibrobust",)
PRELOAD_MODULES = ("threadpoolctl",)


def preload(scripts_dir: str) -> list[str]:
    """Import every module the workflow scripts in ``scripts_dir`` import at top level (and
    each ``from m import x`` whose x is a submodule), every module of
    :data:`PRELOAD_PACKAGES` and :data:`PRELOAD_MODULES`; the modules that failed to import
    (an optional dependency) are returned, not raised: a job needing one imports it itself."""

    modules: set[str] = set(PRELOAD_MODULES)
    maybe: set[str] = set()  # from m import x: x may be a submodule or a name
    for script in sorted(Path(scripts_dir).glob("*.py")):
        for node in ast.parse(script.read_text()).body:
            if isinstance(node, ast.Import):
                modules.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module)
                maybe.update(f"{node.module}.{a.name}" for a in node.names)
    failed = []
    for name in sorted(modules - {"__future__"}):
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001
            failed.append(name)
    for name in sorted(maybe - modules):
        parent = sys.modules.get(name.rpartition(".")[0])
        if parent is not None and hasattr(parent, "__path__"):  # a package: x may be a module
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001  (a name, not a module)
                pass
    for package in PRELOAD_PACKAGES:
        pkg = sys.modules.get(package)
        for info in pkgutil.walk_packages(getattr(pkg, "__path__", []), f"{package}."):
            try:
                importlib.import_module(info.name)
            except Exception:  # noqa: BLE001
                failed.append(info.name)
    return failed


def serve(path: str, watch: int, log_path: str, scripts_dir: str | None = None) -> None:
    """The warm server's life: import what the scripts in ``scripts_dir`` (default: this
    module's folder) import, then fork a job per connection until stopped (SIGTERM/SIGINT)
    or until its parent is no longer ``watch``; its log ends with its ``phases`` line."""
    _warm.ROLE = "server"
    with open(log_path, "a", buffering=1) as log:
        server = _Server(path, watch, log)
        server.load(scripts_dir or os.path.dirname(os.path.abspath(__file__)))
        server.listen()
        server.close()


class _Server:
    def __init__(self, path: str, watch: int, log) -> None:
        self.path, self.watch, self.log = path, watch, log
        self.jobs: dict[int, socket.socket] = {}  # pid -> connection to its client
        self.served = 0
        self.stop = False
        self.say(f"start warm_start - @shared threads=1 pid={os.getpid()} watching={watch}")

    def say(self, msg: str, when: str | None = None) -> None:

        when = when or time.strftime("%Y-%m-%d %H:%M:%S")
        self.log.write(f"{when} INFO ibrobust.warm_start: {msg}\n")

    def load(self, scripts_dir: str) -> None:

        t0 = time.monotonic()
        failed = preload(scripts_dir)
        self.ready = time.monotonic() - t0
        self.ready_at = time.strftime("%Y-%m-%d %H:%M:%S")
        left = f"; not importable here, left to their jobs: {', '.join(failed)}" if failed else ""
        self.say(f"imports ready in {self.ready:.2f} s ({len(sys.modules)} modules{left})")

    def listen(self) -> None:

        self.wake = wake_r, wake_w = os.pipe()  # SIGCHLD/SIGTERM wake the select at once
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGTERM, self._on_stop)
        signal.signal(signal.SIGINT, self._on_stop)
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.path)
        listener.listen(64)
        while not self.stop and os.getppid() == self.watch:
            try:
                readable, _, _ = select.select([listener, wake_r], [], [], 1.0)
            except InterruptedError:
                readable = []
            if wake_r in readable:
                os.read(wake_r, 512)
            if listener in readable:
                self._fork(listener)
            self._reap()
        listener.close()
        try:  # the socket and its private folder (WarmServer.start made it for the server)
            os.unlink(self.path)
            os.rmdir(os.path.dirname(self.path))
        except OSError:
            pass

    def _on_stop(self, signum, frame) -> None:
        self.stop = True

    def _fork(self, listener: socket.socket) -> None:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        for stream in (sys.stdout, sys.stderr, self.log):
            stream.flush()
        pid = os.fork()
        if pid == 0:
            try:  # nothing of the server's may run on in the job, whatever happens
                for fd in (listener, *self.jobs.values(), *self.wake):
                    os.close(fd if isinstance(fd, int) else fd.detach())
                run_job(conn, self.log)  # exits
            finally:
                os._exit(1)
        self.jobs[pid] = conn
        self.served += 1

    def _reap(self) -> None:
        """Send each ended job's status to its client (exit code, or minus the signal)."""
        while self.jobs:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.jobs.pop(pid, None)
            if conn is None:
                continue
            try:
                conn.sendall(f"status {os.waitstatus_to_exitcode(status)}\n".encode())
            except OSError:  # the client is gone (killed): nobody to tell
                pass
            conn.close()

    def close(self) -> None:

        self._reap()
        use = resource.getrusage(resource.RUSAGE_SELF)
        cpu = use.ru_utime + use.ru_stime
        reason = "stopped" if self.stop else f"its snakemake process ({self.watch}) is gone"
        self.say(f"{reason}: served {self.served} jobs; {len(self.jobs)} still running")
        # the profile's phases line: the server's CPU over its whole life (imports and forks),
        # stamped when its imports were ready, so that its busy interval is its start-up
        phases = {"wall": self.ready, "cpu": cpu, "startup": self.ready, "startup_cpu": cpu}
        phases.update(dict.fromkeys(("data", "compute", "tracking", "write"), 0.0))
        self.say(_warm.phases_line(phases), when=self.ready_at)


# ---- a job, forked from the server ------------------------------------------------------------
def _recv_exactly(conn: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("the client went away during the hand-off")
        buf += chunk
    return buf


def run_job(conn: socket.socket, server_log) -> None:
    """In the forked child: become the client's job, run its script, exit with its status.
    A failure before the job exists (its pid not yet sent) ends the child with no word to
    the client, which then runs the script itself; the server's log says why (the
    exception's type only: the request holds the job's environment)."""
    try:
        _take_over(conn)
    except BaseException as exc:  # noqa: BLE001
        server_log.write(f"a hand-off failed before its job started: {type(exc).__name__}\n")
        server_log.flush()
        os._exit(1)
    server_log.close()
    _watch_client(conn)
    for fn in _warm.JOB_START_HOOKS:
        fn()
    os._exit(_run_script(sys.argv[0]))


def _take_over(conn: socket.socket) -> None:
    """The client's process state, as a fresh interpreter started in its place would have
    it: streams, directory, environment, umask, argv, signals, process group, threads."""

    _warm.ROLE = "job"
    signal.set_wakeup_fd(-1)
    head, fds, _, _ = socket.recv_fds(conn, _warm.HEADER.size, 3)
    req = ast.literal_eval(_recv_exactly(conn, _warm.HEADER.unpack(head)[0]).decode())
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"])
    os.umask(req["umask"])
    sys.argv = req["argv"]
    sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))
    sys.stdout.reconfigure(line_buffering=os.isatty(1))
    tempfile.tempdir = None  # TMPDIR of the job's environment
    for sig in (signal.SIGTERM, signal.SIGCHLD, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for sig in req.get("ignored", []):  # e.g. SIGHUP under nohup
        signal.signal(sig, signal.SIG_IGN)
    os.setpgid(0, 0)  # a group of its own: the client signals the job and what it starts
    _threads(os.environ.get("OMP_NUM_THREADS"))
    np = sys.modules.get("numpy")
    if np is not None:  # random state as a fresh interpreter has it (``random`` reseeds at fork)
        np.random.seed()
    _warm.CLIENT_STARTUP = tuple(req["startup"])
    conn.sendall(f"pid {os.getpid()}\n".encode())  # from here on the job exists


def _threads(value: str | None) -> None:
    """The job's thread count (Snakemake sets OMP_NUM_THREADS & co. to the rule's threads)
    for the thread pools the server's imports loaded before the job's environment existed:
    numpy's BLAS, OpenMP (torch reads its own at ``Job()``, ``_job.set_threads``)."""
    if not (value and value.isdigit()):
        return
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # the `workflow` extra brings it; without it the pools stay as loaded
        return
    threadpool_limits(int(value))


def _watch_client(conn: socket.socket) -> None:
    """A daemon thread: the client closing the connection before the job ends means it was
    killed (SIGKILL after the stop's grace, or by the system): the job is killed with it."""

    def watch() -> None:
        try:
            while conn.recv(1):
                pass
        except OSError:
            pass
        os.killpg(0, signal.SIGKILL)  # the job's group: the job and what it started

    threading.Thread(target=watch, name="ibrobust-warm-client", daemon=True).start()


def _run_script(path: str) -> int:
    """Run ``path`` as ``__main__`` and end the way the interpreter would: non-daemon
    threads joined, exit handlers run, an uncaught exception's traceback printed (status 1),
    KeyboardInterrupt ending the process by SIGINT. Returns the exit status."""

    status = 0
    interrupted = False
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit as exc:
        status = _exit_status(exc.code)
    except KeyboardInterrupt as exc:
        _set_last(exc)
        sys.excepthook(type(exc), exc, exc.__traceback__)
        interrupted = True
    except BaseException as exc:  # noqa: BLE001  (the interpreter's last resort, as in a fresh one)
        _set_last(exc)
        sys.excepthook(type(exc), exc, exc.__traceback__)
        status = 1
    threading._shutdown()  # noqa: SLF001  (what the interpreter does before the exit handlers)
    atexit._run_exitfuncs()  # noqa: SLF001
    _warm.flush_std_streams()
    if interrupted:
        _warm.end_with(-signal.SIGINT)
    return status


def _set_last(exc: BaseException) -> None:
    sys.last_type, sys.last_value, sys.last_traceback = type(exc), exc, exc.__traceback__
    sys.last_exc = exc


def _exit_status(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


# ---- the Snakefile's side -------------------------------------------------------------------
class WarmServer:
    """``onstart`` starts it (local runs with ``warm_start: true``), ``onsuccess``/``onerror``
    and ``atexit`` stop it. It exports the socket to the jobs through the environment."""

    def __init__(self) -> None:
        self.proc = None
        self.dir = None

    def start(self, log_path: str) -> bool:

        if self.proc is not None or not sys.platform.startswith("linux"):
            return False  # fork after these imports is safe on Linux only (not macOS)
        os.makedirs(os.path.dirname(log_path) or ".", exist_ok=True)
        # a short path: a Unix socket's is limited to ~107 bytes; 0700, this user only
        self.dir = tempfile.mkdtemp(prefix="ibrobust-warm-")
        path = os.path.join(self.dir, "s")
        open(log_path, "w").close()  # this run's log only
        with open(log_path, "a") as log:  # a crash's traceback goes there too
            self.proc = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), path, str(os.getpid()), log_path],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                start_new_session=True,  # not in the terminal's group; _signals skips it
            )
        os.environ.update(
            {
                _warm.ENV_SOCKET: path,
                _warm.ENV_PYTHON: _warm.interpreter(),
                _warm.ENV_HOST: socket.gethostname(),
            }
        )
        atexit.register(self.stop)
        return True

    def stop(self, timeout: float = 5.0) -> None:

        for var in (_warm.ENV_SOCKET, _warm.ENV_PYTHON, _warm.ENV_HOST):
            os.environ.pop(var, None)
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None


SERVER = WarmServer()

if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]), sys.argv[3], *sys.argv[4:5])
