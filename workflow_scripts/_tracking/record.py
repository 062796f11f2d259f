"""The run record: what a job (or the Snakemake process, for its parent run) wants tracked,
appended as JSON lines to a file beside its log, ``<log>.mlflow.jsonl``. Standard library
only: jobs import this, and they never import MLflow; ``sync`` turns records into runs.

Lines (one JSON object each; a line is whole only once its newline is written):

* ``{"op": "start", "id", "name", "tags", "params", "t", "host", "pid", "pstart",
  "parent"}`` - first line; ``id`` names this attempt (the run's tag ``ibrobust.record_id``),
  ``parent`` the record id of the invocation's parent run (None for the parent itself),
  ``host``/``pid``/``pstart`` the writing process (is it still alive?);
* ``{"op": "metrics", "items": [[key, value, ms, step], ...]}``;
* ``{"op": "params", "params": {...}}``, ``{"op": "tags", "tags": {...}}``;
* ``{"op": "artifact", "path": absolute path, "folder": str | None}``;
* ``{"op": "model", "path": absolute path}`` (tags ``ibrobust.model_path`` and
  ``ibrobust.model_artifact``; the file under ``model/`` within the size cap);
* ``{"op": "input", "name", "digest", "source", "context"}`` (MLflow dataset input);
* ``{"op": "end", "status", "t"}`` - last line.

Secrets are masked and keys made valid as lines are written. Writing a record never fails
its writer: an OSError (e.g. a full disk) is kept in :attr:`RunRecord.problem` and the
record stops there.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import time
import uuid
from pathlib import Path
from typing import Any

from .masking import mask_secrets

SUFFIX = ".mlflow.jsonl"
ENV_PARENT = "IBROBUST_PARENT_RECORD"  # the invocation's parent record id, for its jobs
MAX_VALUE_LEN = 6000  # MLflow's limit on a param or tag value
MAX_DIGEST_LEN = 36  # MLflow's limit on a dataset digest
DATASETS_DIR = Path("results") / "datasets"
FLUSH_EVERY = 2.0  # s: buffered metric lines reach the file at least this often
MAX_ITEMS = 500  # ... or once this many metric values are buffered (one store batch)
_BAD_KEY_CHARS = re.compile(r"[^A-Za-z0-9_\-. /]")


def mlflow_key(key: str) -> str:
    """MLflow allows alphanumerics, _ - . space and / in names; map anything else to _."""
    return _BAD_KEY_CHARS.sub("_", key)


def clean(values: dict[str, Any]) -> dict[str, str]:
    """Keys made valid, values masked and cut to MLflow's limit."""
    return {mlflow_key(k): mask_secrets(str(v))[:MAX_VALUE_LEN] for k, v in values.items()}


def run_key(outputs: list[str], code_hash: str) -> str:
    """A job's run identity: its output paths and code hash. A rerun for the same result has
    the same key, and the store keeps one run per key (the newest FINISHED one)."""
    text = json.dumps({"outputs": sorted(map(str, outputs)), "code": code_hash})
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def record_path(log_file: str | os.PathLike) -> Path:
    return Path(f"{log_file}{SUFFIX}")


def process_start(pid: int) -> str | None:
    """A live process's start time (clock ticks since boot, /proc), None if it is gone or a
    zombie, "" where there is no /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return None if Path("/proc/self").exists() else ""
    except (OSError, IndexError):
        return None
    return None if fields[0] in ("Z", "X") else fields[19]


def writer_alive(start: dict) -> bool:
    """Whether the process that wrote a record's ``start`` line still runs (True for one on
    another host: it cannot be checked)."""
    if start.get("host") != socket.gethostname():
        return True
    now = process_start(int(start.get("pid", -1)))
    return now is not None and (not now or now == start.get("pstart"))


class RunRecord:
    """One run's record file, opened fresh (a rerun of the job is a new attempt)."""

    def __init__(self, path, name: str, tags: dict, params: dict, parent: str | None = None):
        self.path = Path(path)
        self.problem: str | None = None
        self.id = uuid.uuid4().hex
        self._buffer: list = []
        self._flushed = time.monotonic()
        self._fh = None
        pid = os.getpid()
        start = {"op": "start", "id": self.id, "name": mask_secrets(name), "tags": clean(tags),
                 "params": clean(params), "t": now_ms(), "host": socket.gethostname(),
                 "pid": pid, "pstart": process_start(pid) or "", "parent": parent}  # fmt: skip
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = self.path.open("w", encoding="utf-8")
        except OSError as err:
            self.problem = f"{type(err).__name__}: {err}"
        self._write(start)

    def _write(self, *lines: dict) -> None:
        if self._fh is None:
            return
        try:
            self._fh.write("".join(json.dumps(line) + "\n" for line in lines))
            self._fh.flush()
        except OSError as err:  # a full disk: the record stops, the writer goes on
            self.problem = f"{type(err).__name__}: {err}"
            self._fh = None

    def metrics(self, values: dict[str, float], step: int = 0) -> None:
        t = now_ms()
        self._buffer += [[mlflow_key(k), float(v), t, int(step)] for k, v in values.items()]
        if len(self._buffer) >= MAX_ITEMS or time.monotonic() - self._flushed >= FLUSH_EVERY:
            self.flush()

    def flush(self) -> None:
        if self._buffer:
            self._write({"op": "metrics", "items": self._buffer})
            self._buffer = []
        self._flushed = time.monotonic()

    def params(self, params: dict[str, Any]) -> None:
        self.flush()
        self._write({"op": "params", "params": clean(params)})

    def tags(self, tags: dict[str, Any]) -> None:
        self.flush()
        self._write({"op": "tags", "tags": clean(tags)})

    def artifact(self, path, folder: str | None = None) -> None:
        self.flush()
        self._write({"op": "artifact", "path": str(Path(path).resolve()), "folder": folder})

    def model(self, path) -> None:
        self.flush()
        self._write({"op": "model", "path": str(Path(path).resolve())})

    def input(self, path, context: str) -> None:
        """A dataset file the run read: MLflow's dataset input (name, digest, source)."""
        self.flush()
        self._write({"op": "input", "name": mask_secrets(dataset_name(path)),
                     "digest": file_digest(path)[:MAX_DIGEST_LEN],
                     "source": mask_secrets(str(Path(path).resolve())), "context": context})  # fmt: skip

    def end(self, status: str) -> None:
        self.flush()
        self._write({"op": "end", "status": status, "t": now_ms()})
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def now_ms() -> int:
    return int(time.time() * 1000)


def project_path(path: str | os.PathLike) -> str:
    """``path`` relative to the working directory where it is inside it; else absolute."""
    absolute = Path(path).resolve()
    try:
        return str(absolute.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(absolute)


def dataset_name(path: str | os.PathLike) -> str:
    """``tiny_clusters/seed0`` for ``results/datasets/tiny_clusters/seed0/data.npz``; other
    files: their project path without ``results/`` and the suffix."""
    rel = Path(project_path(path))
    if rel.parts[:2] == DATASETS_DIR.parts and len(rel.parts) > 3:
        return "/".join(rel.parts[2:-1])
    parts = rel.with_suffix("").parts
    return "/".join(parts[1:] if parts[0] == "results" else parts)


def file_digest(path: str | os.PathLike, hex_digits: int = 16) -> str:
    """The first 16 hex digits of the file's sha256: from the dataset job's ``meta.json``
    beside it (``sha256``) when that was written after the file, else hashed here."""
    path = Path(path)
    meta = path.with_name("meta.json")
    try:
        if meta.stat().st_mtime_ns >= path.stat().st_mtime_ns:
            sha = json.loads(meta.read_text()).get("sha256")
            if isinstance(sha, str) and len(sha) == 64:
                return sha[:hex_digits]
    except (OSError, ValueError):
        pass
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()[:hex_digits]
