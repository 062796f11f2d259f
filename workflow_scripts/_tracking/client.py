"""The job side of tracking: :class:`JobRun`, one job's run as a stream of JSON lines.

Standard library only (a job never imports MLflow). The stream goes to the workflow's
:class:`~_tracking.collector.Collector` over its Unix socket or, where that is out of reach
(a SLURM job on another node), to a writer process of its own (``_tracking.writer``).

Results first, tracking second. The collector answers a run's ``end`` with a *receipt* as
soon as it has the whole run on disk (its journal in the spool), before it writes the run to
the store: the job waits milliseconds for it, however slowly the store answers. A writer
process answers only once it has written the run. When no receipt comes within the timeout
(``IBROBUST_TRACKING_TIMEOUT``, default 30 s), when the writer fails or is gone, or when the
job is being stopped (``give_up``), :meth:`JobRun.end` writes the stream itself to a spool
file (``results/mlflow/spool/``) and returns its path instead of failing the job; the job's
outputs never depend on the tracking server. ``python workflow_scripts/_tracking/replay.py``
replays spooled runs later.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import protocol
from .protocol import ENV_COLLECTOR, ENV_COMMIT, ENV_CONFIG_HASH, ENV_ENABLED, ENV_PARENT

POLL = 0.1  # s between looks at give_up() while a job waits for its writer
GAVE_UP = "the job was stopped before its writer took the run"


class JobRun:
    """One job's MLflow run, streamed to a writer (a no-op when tracking is off).

    ``run_key`` (see :func:`protocol.run_key`) identifies the run across reruns and
    replays. ``end`` returns None when a writer took the run (the collector's receipt, or a
    writer process that logged it), else the spool file the run went to (the reason is in
    :attr:`problem`); it never raises for a tracking failure.
    """

    def __init__(
        self,
        run_name: str,
        tags: dict[str, str],
        params: dict[str, Any],
        log_file: str | None = None,
        run_key: str | None = None,
    ):
        self.enabled = os.environ.get(ENV_ENABLED) == "1"
        self.problem: str | None = None
        self._buffer: list = []
        self._last_flush = time.monotonic()
        self._lines: list[str] = []  # the whole stream, for the spool file
        if not self.enabled:
            return
        self._timeout = protocol.timeout()
        tags = {
            **tags,
            "mlflow.parentRunId": os.environ[ENV_PARENT],
            "mlflow.source.git.commit": os.environ.get(ENV_COMMIT, "unknown"),
            "ibrobust.config_hash": os.environ.get(ENV_CONFIG_HASH, "unknown"),
        }
        if run_key:
            tags[protocol.RUN_KEY_TAG] = run_key
        self._start = protocol.start_message(run_name, tags, params)
        self._writer = _connect(os.environ.get(ENV_COLLECTOR), self._timeout) or _WriterProcess(
            log_file, self._timeout
        )
        self._send(self._start)

    @property
    def via(self) -> str:
        """Which writer logs this run: ``collector``, ``process`` or ``off``."""
        if not self.enabled:
            return "off"
        return "collector" if isinstance(self._writer, _SocketWriter) else "process"

    def _send(self, msg: dict) -> None:
        line = json.dumps(msg) + "\n"
        self._lines.append(line)
        self._writer.send(line)

    def metrics(self, values: dict[str, float], step: int = 0, flush_every: float = 5.0) -> None:
        if not self.enabled:
            return
        ts = protocol.now_ms()
        key = protocol.mlflow_key
        self._buffer += [[key(k), float(v), ts, int(step)] for k, v in values.items()]
        if time.monotonic() - self._last_flush > flush_every or len(self._buffer) >= 900:
            self.flush()

    def flush(self) -> None:
        if self.enabled and self._buffer:
            self._send({"op": "metrics", "items": self._buffer})
            self._buffer = []
        self._last_flush = time.monotonic()

    def artifact(self, path: str | os.PathLike, folder: str | None = None) -> None:
        if self.enabled:
            self._send({"op": "artifact", "path": str(Path(path).resolve()), "folder": folder})

    def tags(self, tags: dict[str, Any]) -> None:
        """Tags known only once the job has run (e.g. its model file's)."""
        if self.enabled:
            self._send(protocol.tags_message(tags))

    def input(self, name: str, digest: str, source: str, context: str) -> None:
        """A dataset the job read (MLflow's dataset input, see ``protocol.input_message``)."""
        if self.enabled:
            self._send(protocol.input_message(name, digest, source, context))

    def end(self, status: str, give_up: Callable[[], bool] | None = None) -> Path | None:
        """Close the run: None if the writer took it, else the spool file it went to.
        ``give_up()`` (asked about ten times a second while the job waits for its writer)
        says that the job must wait no longer: a stop is ending it."""
        if not self.enabled:
            return None
        self.flush()
        self._send({"op": "end", "status": status, "t": protocol.now_ms()})
        self.problem = self._writer.close(give_up or _never)
        if self.problem is None:
            return None
        return protocol.write_spool(self._lines, self._start, self.problem)


class _SocketWriter:
    """Writer: a connection to the workflow's Collector. Every send and the receipt wait at
    most ``timeout`` s; after the first failure the connection counts as lost."""

    def __init__(self, sock: socket.socket, timeout: float):
        self._sock = sock
        self._timeout = timeout
        self._lost: str | None = None
        sock.settimeout(timeout)

    def send(self, line: str) -> None:
        if self._lost:
            return
        try:
            self._sock.sendall(line.encode())
        except OSError as err:
            self._lost = f"the collector took no write within {self._timeout:g} s ({err})"

    def close(self, give_up: Callable[[], bool]) -> str | None:
        """Wait for the collector's receipt: None, else why there is none."""
        try:
            if self._lost:
                return self._lost
            self._sock.shutdown(socket.SHUT_WR)
            self._sock.settimeout(POLL)
            deadline = time.monotonic() + self._timeout
            reply = b""
            while not reply.endswith(b"\n"):
                if give_up():
                    return GAVE_UP
                if time.monotonic() > deadline:
                    return f"the collector did not confirm the run within {self._timeout:g} s"
                try:
                    chunk = self._sock.recv(4096)
                except TimeoutError:
                    continue
                if not chunk:
                    break
                reply += chunk
            reply_text = reply.decode(errors="replace").strip()
            if reply_text == protocol.RECEIVED:
                return None
            return f"collector: {reply_text or 'no reply (the workflow process ended?)'}"
        except OSError as err:
            return f"the collector did not confirm the run within {self._timeout:g} s ({err})"
        finally:
            self._sock.close()


def _never() -> bool:
    return False


def _connect(address: str | None, timeout: float) -> _SocketWriter | None:
    """A connection to the collector at ``address``, or None where it cannot be reached."""
    if not address:
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(min(timeout, 5.0))
    try:
        sock.connect(address)
    except OSError:  # not on this node, or the workflow process is gone
        sock.close()
        return None
    return _SocketWriter(sock, timeout)


class _WriterProcess:
    """Writer: a child ``_tracking.writer`` process fed on stdin (its output goes to the job
    log). Writes never block the job: a pipe the writer does not drain counts as a stuck
    writer; the child is then stopped (its run ends KILLED) and the job spools the run."""

    STARTUP_GRACE = 60.0  # s: it imports MLflow first (seconds; tens on a busy node)

    def __init__(self, log_file: str | None, timeout: float):
        self._timeout = timeout
        self._lost: str | None = None
        self._log = open(log_file, "a") if log_file else None  # noqa: SIM115
        package_dir = str(Path(__file__).resolve().parents[1])
        self._proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                f"import sys; sys.path.insert(0, {package_dir!r}); "
                "from _tracking.writer import main; main()",
            ],
            stdin=subprocess.PIPE,
            stdout=self._log,
            stderr=self._log,
        )
        os.set_blocking(self._proc.stdin.fileno(), False)
        self._pending = b""

    def send(self, line: str) -> None:
        if self._lost:
            return
        self._pending += line.encode()
        self._drain(deadline=time.monotonic() + self._timeout)

    def _drain(self, deadline: float) -> None:
        """Write what is pending; wait (up to ``deadline``) only while the pipe is full."""
        while self._pending and not self._lost:
            try:
                n = os.write(self._proc.stdin.fileno(), self._pending)
                self._pending = self._pending[n:]
            except BlockingIOError:
                if time.monotonic() > deadline:
                    self._lost = f"the writer process took no write within {self._timeout:g} s"
                    self._proc.kill()
                    return
                time.sleep(0.05)
            except (BrokenPipeError, OSError) as err:
                self._lost = f"the writer process is gone ({err})"

    def close(self, give_up: Callable[[], bool]) -> str | None:
        """Wait for the writer process to log the run: None, else why it did not. (It is one
        of the job's processes: a stop's SIGINT reaches it too, and a writer it ends makes
        the job spool the run.)"""
        try:
            self._drain(deadline=time.monotonic() + self._timeout)
            try:
                self._proc.stdin.close()
            except OSError:
                pass
            wait = self._timeout + self.STARTUP_GRACE
            deadline = time.monotonic() + wait
            while (code := self._proc.poll()) is None:
                stopped = give_up()
                if stopped or time.monotonic() > deadline:
                    self._proc.kill()
                    self._proc.wait()
                    late = f"the writer process did not finish within {wait:g} s"
                    return self._lost or (GAVE_UP if stopped else late)
                time.sleep(POLL)
            if self._lost:
                return self._lost
            return f"writer exit code {code}" if code != 0 else None
        finally:
            if self._log:
                self._log.close()
