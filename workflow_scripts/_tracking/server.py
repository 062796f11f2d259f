"""The workflow's own MLflow tracking server: started before any job, stopped at the end.

With ``mlflow.server.start: true`` (and no MLFLOW_TRACKING_URI in the environment) the
Snakefile's ``onstart`` calls :func:`start`, which

* checks the settings first and fails with the config key that is wrong (port in use,
  backend store unreachable, artifact destination not writable),
* runs ``mlflow server`` (backend store + proxied artifacts: jobs upload artifacts over
  HTTP, so a cluster node needs only to reach the server, not the store) under a small
  supervisor in a process group of its own,
* waits until ``/health`` answers and returns the server's http URI; ``_tracking``
  exports it to the jobs (local or SLURM) as IBROBUST_TRACKING_URI.

:func:`stop` (``onsuccess``/``onerror``, and ``atexit`` for anything else) terminates the
whole process group (the mlflow CLI, its uvicorn workers and job runner). If Snakemake
itself is killed outright (SIGKILL: no handler runs), the supervisor notices that its
parent is gone and takes the group down, so no server outlives the run.

Run as a script, this module *is* that supervisor:
``python _tracking/server.py --watch PID -- mlflow server ...``.
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

WILDCARD_HOSTS = ("0.0.0.0", "::", "")
STOP_TIMEOUT = 10.0  # s from SIGTERM to SIGKILL of the server's process group


class ServerError(ValueError):
    """The tracking server could not be started; the message names the config key."""


@dataclass
class ServerSettings:
    """``mlflow.server`` of the config (schemas/config.schema.yaml documents each key)."""

    host: str = "127.0.0.1"
    port: int = 0  # 0: any free port
    backend_store_uri: str = "sqlite:///results/mlflow/mlflow.db"
    # where backend_store_uri came from, for error messages (or IBROBUST_BACKEND_STORE_URI)
    backend_key: str = "config key mlflow.server.backend_store_uri"
    artifacts_destination: str = "results/mlflow/artifacts"
    workers: int = 1
    startup_timeout: float = 120.0
    log_file: str = "results/logs/mlflow_server.log"


def mask_password(uri: str) -> str:
    """``postgresql://user:secret@host/db`` -> ``postgresql://user:***@host/db`` (the one
    masking function of ``_tracking.masking``, also for ``?password=...``)."""
    from .masking import mask_secrets

    return mask_secrets(uri)


def absolute_store_uri(uri: str) -> str:
    """Relative sqlite paths -> absolute (and their folder created); other URIs as given."""
    from .uri import absolute_store_uri as absolute

    return absolute(uri)


def _check_port(host: str, port: int) -> int:
    """The port to use: ``port`` if it is free on ``host``, a free one if 0."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError as err:
            what = f"{host}:{port} is already in use" if port else f"cannot bind {host}"
            raise ServerError(
                f"config key mlflow.server.port: {what} ({err.strerror}); choose another "
                "port or 0 for any free one"
            ) from None
        return s.getsockname()[1]


def _check_backend(uri: str, key: str = ServerSettings.backend_key) -> None:
    """Fail early, naming the key (or variable), when the backend store cannot be reached."""
    scheme = uri.split(":", 1)[0].split("+", 1)[0]
    if scheme == "sqlite":
        path = Path(uri[len("sqlite:///") :])
        if not os.access(path.parent, os.W_OK):
            raise ServerError(f"{key}: {mask_password(uri)}: folder {path.parent} is not writable")
        return
    if scheme not in ("postgresql", "mysql", "mssql"):
        raise ServerError(
            f"{key}: {mask_password(uri)}: unsupported scheme {scheme!r} (use sqlite:///PATH "
            "or postgresql://USER:PASSWORD@HOST:PORT/DB)"
        )
    import sqlalchemy  # an MLflow dependency

    connect_args = {"connect_timeout": 10} if scheme == "postgresql" else {}
    try:
        engine = sqlalchemy.create_engine(uri, connect_args=connect_args)
        with engine.connect():
            pass
        engine.dispose()
    except Exception as err:  # noqa: BLE001 - drivers raise their own types
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ServerError(f"{key}: cannot connect to {mask_password(uri)}: {first}") from None


def _check_artifacts(dest: str) -> str:
    if "://" in dest:
        return dest
    path = Path(dest).resolve()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ServerError(
            f"config key mlflow.server.artifacts_destination: {dest}: {err.strerror}"
        ) from None
    if not os.access(path, os.W_OK):
        raise ServerError(f"config key mlflow.server.artifacts_destination: {path} is not writable")
    return str(path)


def advertised_host(host: str) -> str:
    """The host name jobs use: the bind address, or this machine's name for 0.0.0.0/::."""
    return socket.gethostname() if host in WILDCARD_HOSTS else host


def _tail(path: Path, n: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "(no server log)"


def healthy(uri: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(f"{uri}/health", timeout=timeout) as resp:
            return resp.status == 200
    except (urllib.error.URLError, OSError):
        return False


class TrackingServer:
    """One ``mlflow server`` (and its workers) in a process group of its own."""

    def __init__(self, settings: ServerSettings):
        self.settings = settings
        self.proc: subprocess.Popen | None = None
        self.uri = ""

    def start(self) -> str:
        s = self.settings
        backend = absolute_store_uri(s.backend_store_uri)
        _check_backend(backend, s.backend_key)
        artifacts = _check_artifacts(s.artifacts_destination)
        port = _check_port(s.host, int(s.port))
        public = advertised_host(s.host)
        log = Path(s.log_file).resolve()
        log.parent.mkdir(parents=True, exist_ok=True)
        # the store URI (it may hold a password) goes by environment, not on the command line
        env = {**os.environ, "MLFLOW_BACKEND_STORE_URI": backend}
        # MLflow 3's job runner (8 huey processes, for GenAI jobs this workflow never
        # submits) would slow the server's start and stop on a busy machine
        env.setdefault("MLFLOW_SERVER_ENABLE_JOB_EXECUTION", "false")
        cmd = [
            *(sys.executable, "-m", "mlflow", "server"),
            *("--artifacts-destination", artifacts),
            *("--host", s.host, "--port", str(port), "--workers", str(s.workers)),
        ]
        if s.host in WILDCARD_HOSTS:  # cluster nodes send Host: <this machine>:<port>
            names = dict.fromkeys([public, socket.getfqdn(), "localhost", "127.0.0.1"])
            cmd += ["--allowed-hosts", ",".join(f"{n},{n}:{port}" for n in names)]
        fh = log.open("w")
        fh.write(f"# MLFLOW_BACKEND_STORE_URI={mask_password(backend)} {' '.join(cmd)}\n")
        fh.flush()
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--watch", str(os.getpid()), "--", *cmd],
            stdin=subprocess.DEVNULL,
            env=env,
            stdout=fh,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group: Ctrl-C of snakemake does not hit it
        )
        fh.close()
        atexit.register(self.stop)
        host = f"[{public}]" if ":" in public else public
        self.uri = f"http://{host}:{port}"
        t0 = time.monotonic()
        while not healthy(self.uri):
            if self.proc.poll() is not None:
                self.stop()
                raise ServerError(
                    f"config key mlflow.server: mlflow server exited ({self.proc.returncode}) "
                    f"before answering; backend {mask_password(backend)}; last lines of "
                    f"{log}:\n{_tail(log)}"
                )
            if time.monotonic() - t0 > s.startup_timeout:
                self.stop()
                raise ServerError(
                    f"config key mlflow.server.startup_timeout: {self.uri}/health did not "
                    f"answer within {s.startup_timeout:g} s; last lines of {log}:\n{_tail(log)}"
                )
            time.sleep(0.3)
        return self.uri

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """Terminate the server's process group (idempotent): SIGTERM, then SIGKILL for
        whatever is left after ``timeout`` s."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        _kill_group(proc.pid, timeout, reap=proc.poll)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


def _group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` still runs. Zombies do not count: the
    supervisor is this process's child and stays a zombie until it is reaped, which a
    plain ``killpg(pgid, 0)`` would take for a live group (a 15 s wait on every stop)."""
    if Path("/proc/self/stat").exists():
        return bool(_others_in_group(pgid))
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _kill_group(pgid: int, timeout: float, reap=lambda: None) -> None:
    """SIGTERM to group ``pgid``, SIGKILL after ``timeout`` s; ``reap`` (a Popen's poll)
    is called while waiting, so a child among them does not linger as a zombie."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    t0 = time.monotonic()
    while _group_alive(pgid) and time.monotonic() - t0 < timeout:
        reap()
        time.sleep(0.1)
    if _group_alive(pgid):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass


_SERVER: TrackingServer | None = None


def start(settings: ServerSettings) -> str:
    global _SERVER
    stop()
    _SERVER = TrackingServer(settings)
    return _SERVER.start()


def stop() -> None:
    global _SERVER
    if _SERVER is not None:
        _SERVER.stop()
        _SERVER = None


def _others_in_group(pgid: int) -> list[int]:
    """Live (not zombie) processes of group ``pgid`` other than this one (Linux /proc)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(stat.parent.name)
        if int(fields[2]) == pgid and pid != os.getpid() and fields[0] != "Z":
            out.append(pid)
    return out


def _stop_others(pgid: int, timeout: float) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in _others_in_group(pgid):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        t0 = time.monotonic()
        while _others_in_group(pgid) and time.monotonic() - t0 < timeout:
            time.sleep(0.1)
        if not _others_in_group(pgid):
            return


def _supervise(parent: int, cmd: list[str]) -> int:
    """Run ``cmd`` in this process group; take the group down when ``parent`` is gone.

    The group's SIGTERM (:meth:`TrackingServer.stop`) reaches every member; the server
    processes shut down, and once none but the CLI is left, the CLI is killed: all it
    has left to do is its interpreter's teardown, seconds of garbage collection on a
    busy machine that :meth:`TrackingServer.stop` would otherwise wait for."""
    child = subprocess.Popen(cmd)
    me = os.getpgid(0)
    stopping: list[float] = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(time.monotonic()))
    while True:
        if child.poll() is not None:
            _stop_others(me, 5)  # the CLI ended: take its workers and job runner along
            return child.returncode
        if stopping:
            if not [pid for pid in _others_in_group(me) if pid != child.pid]:
                child.kill()  # the server is down; the CLI only tears down its interpreter
                child.wait()
                return 0
            time.sleep(0.1)
            continue
        try:
            os.kill(parent, 0)
            orphaned = os.getppid() != parent
        except ProcessLookupError:
            orphaned = True
        if orphaned:
            print(f"supervisor: workflow process {parent} is gone; stopping the server", flush=True)
            _stop_others(me, 10)
            return 0
        time.sleep(0.5)


if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) < 4 or args[0] != "--watch" or args[2] != "--":
        sys.exit("usage: server.py --watch PARENT_PID -- COMMAND...")
    sys.exit(_supervise(int(args[1]), args[3:]))
