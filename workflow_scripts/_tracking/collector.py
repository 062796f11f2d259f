"""The collector: the workflow's one MLflow writer, a Unix-socket server in threads of the
Snakemake process.

Each connection is one job's run, read by a thread of its own as fast as the job sends it
and applied to the store by a second thread, message by message as it arrives (so metric
curves grow in the UI while a job trains). Store writes are serialised across connections
(the SQLite store takes one writer); artifact copies are not.

A job's wait at its end is a *receipt*, not the store write: once the reader has the run's
``end`` it journals the whole stream to the spool (``protocol.write_spool``, the file
``replay.py`` replays) and answers ``received`` at once, so the job exits within
milliseconds of its last output however slowly the store answers, and a stop's SIGKILL
can never fall on a job that is only waiting for MLflow. The applier deletes the journal
once the run is in the store. A journal stays, to be replayed, for a run whose writing
failed after its receipt (one warning line, on stderr: the Snakemake log), for one still
unwritten when :meth:`Collector.close` stops the writing (a killed job's run too, ending
KILLED), and for every run received before the Snakemake process died. A run whose writing had already failed when its
``end`` came, or that ends while the tracking server is down, is answered ``error
<reason>`` instead, and its job spools it (saying so in its log), as does a job that gets
no receipt in time. A connection that drops before ``end`` (a killed job) leaves its run
KILLED, one whose writes failed FAILED.
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import shutil
import socketserver
import sys
import tempfile
import threading
import time
from pathlib import Path

from . import protocol
from .masking import mask_secrets
from .writer import RunWriter, StoreGate, drain, whole_lines

JOURNALED = "the workflow's collector had received the run; it was not in the store yet"
CUT = "the job ended before its run did; the run was not in the store when the workflow ended"
REPLAY = "python workflow_scripts/_tracking/replay.py"


class _Stream:
    """One connection's run, shared by its reader and its applier thread."""

    def __init__(self, run: RunWriter):
        self.run = run
        self.read: list[str] = []  # every line read (the journal's stream)
        self.lines: queue.SimpleQueue[str | None] = queue.SimpleQueue()  # None: no more
        self.journal: Path | None = None  # set once the run is received


class Collector:
    """``uri``: the tracking URI, for the circuit breaker (:class:`~.writer.StoreGate`) that
    refuses runs at once while a tracking server is down, and for the journals' header."""

    def __init__(self, client, experiment_id: str, uri: str | None = None):
        # short: AF_UNIX paths are at most 107 bytes, and $TMPDIR can be long
        base = tempfile.gettempdir()
        self._dir = tempfile.mkdtemp(prefix="ibrobust-", dir=base if len(base) <= 60 else "/tmp")
        atexit.register(shutil.rmtree, self._dir, True)  # also when the workflow never ends
        self.address = os.path.join(self._dir, "collector.sock")
        self._client = client
        self._experiment_id = experiment_id
        self._uri = uri
        self._lock = threading.Lock()  # store writes
        self.gate = StoreGate(uri)
        self._closing = threading.Event()  # set by close(): no more store writes
        self._changed = threading.Condition()  # guards the two below
        self._active: set[_Stream] = set()  # runs being read or written
        self.kept: list[Path] = []  # journals of received runs that could not be written
        collector = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                collector._read(self.rfile, self.wfile)

        self._server = socketserver.ThreadingUnixStreamServer(self.address, Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="ibrobust-collector", daemon=True
        )
        self._thread.start()

    def _read(self, rfile, wfile) -> None:
        """The reader: queue each line for the applier; on ``end``, the receipt."""
        stream = _Stream(RunWriter(self._client, self._experiment_id))
        with self._changed:
            self._active.add(stream)
        threading.Thread(
            target=self._apply, args=(stream,), name="ibrobust-collector-apply", daemon=True
        ).start()
        try:
            for raw in whole_lines(rfile):
                line = raw.decode()
                stream.read.append(line)
                if _op(line) != "end":
                    stream.lines.put(line)
                    continue
                reply = self._receipt(stream)
                stream.lines.put(line)  # after the journal: the applier deletes it
                try:
                    wfile.write(reply.encode())
                except OSError:
                    pass  # the job is gone
                break
        finally:
            stream.lines.put(None)

    def _receipt(self, stream: _Stream) -> str:
        """Journal a run whose ``end`` has come and answer ``received``; or ``error ...``
        where it is known already that the run cannot be written (its job spools it)."""
        why = stream.run.error or self.gate.down
        if why:
            return f"error {why}\n"
        try:
            stream.journal = self._journal(stream.read, JOURNALED)
        except (OSError, ValueError, KeyError) as err:
            return f"error could not journal the run ({type(err).__name__}: {err})\n"
        return protocol.RECEIVED + "\n"

    def _journal(self, lines: list[str], problem: str) -> Path:
        start = json.loads(lines[0])
        return protocol.write_spool(lines, start, problem, self._experiment_id, self._uri)

    def _apply(self, stream: _Stream) -> None:
        """The applier: write the run to the store, then settle its journal."""

        def lines():
            while (line := stream.lines.get()) is not None:
                yield line

        run = stream.run
        drain(run, lines(), self._lock, self.gate, stop=self._closing)
        with self._changed:  # close() reads the journals of the runs still active
            self._active.discard(stream)
            self._changed.notify_all()
            journal = None if self._closing.is_set() else stream.journal
            logged = run.ended and run.error is None
            if journal is not None and not logged:
                self.kept.append(journal)
        if journal is None:
            return
        if logged:
            journal.unlink(missing_ok=True)
            return
        why = run.error or "the job's stream ended before its run did"
        try:
            protocol.respool(journal, why)
        except OSError:
            pass
        print(
            f"ibrobust: WARNING: MLflow run {mask_secrets(repr(_name(journal)))} not logged "
            f"({why}); kept in {journal} - replay it with {REPLAY}",
            file=sys.stderr,
            flush=True,
        )

    def close(self, timeout: float = 0.0) -> list[Path]:
        """Stop listening; wait up to ``timeout`` s for the runs being written to be in the
        store; then stop writing (each applier after the write it is in). A run still
        unwritten stays journaled; one whose job died before its end (never received) is
        journaled now, ending KILLED. Returns those journals and the ones of runs whose
        writing failed: the spool files to replay."""
        deadline = time.monotonic() + timeout
        self._server.shutdown()
        self._server.server_close()
        with self._changed:
            while self._active and (left := deadline - time.monotonic()) > 0:
                self._changed.wait(left)
            self._closing.set()
            unwritten = []
            for stream in self._active:
                if stream.journal is None and stream.read:
                    stream.journal = self._journal_cut(stream.read)
                if stream.journal is not None:
                    unwritten.append(stream.journal)
            kept = [*self.kept, *unwritten]
        shutil.rmtree(self._dir, ignore_errors=True)
        return kept

    def _journal_cut(self, read: list[str]) -> Path | None:
        """Journal the run of a job that died before its end, ending KILLED, as the
        applier would have ended it (an end being received meanwhile is kept)."""
        end = {"op": "end", "status": "KILLED", "t": protocol.now_ms()}
        lines = read if _op(read[-1]) == "end" else [*read, json.dumps(end) + "\n"]
        try:
            return self._journal(lines, CUT)
        except (OSError, ValueError, KeyError):
            return None


def _op(line: str) -> str | None:
    try:
        return json.loads(line).get("op")
    except (ValueError, AttributeError):
        return None


def _name(journal: Path) -> str:
    """The run name in a journal (its first stream line), else the file's name."""
    try:
        with journal.open() as fh:
            fh.readline()
            return json.loads(fh.readline())["name"]
    except (OSError, ValueError, KeyError):
        return journal.name


def start_collector(client, experiment_id: str, uri: str | None = None) -> Collector | None:
    """A :class:`Collector`, or None (with a warning) where none can listen here: jobs then
    start their own writer processes, as under SLURM on another node."""
    try:
        return Collector(client, experiment_id, uri)
    except OSError as err:
        print(
            f"ibrobust: no MLflow collector ({err}); each job starts its own writer process",
            file=sys.stderr,
            flush=True,
        )
        return None
