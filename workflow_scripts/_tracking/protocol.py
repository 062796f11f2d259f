"""What the job side and the writer side share: environment variables, the stream's
message format (JSON lines: ``start``, ``metrics``, ``artifact``, ``tags``, ``input``, ``end``;
the collector's answer to ``end``: ``received`` or ``error <reason>``), MLflow key rules, a
run's identity, and the spool file a job writes when no writer takes its run (the
collector's journal of a run it has received and not yet logged is the same file).

Messages after ``start``: ``{"op": "metrics", "items": [[key, value, ms, step], ...]}``,
``{"op": "artifact", "path": abs path, "folder": str | None}``, ``{"op": "tags", "tags":
{key: value}}`` (tags known only once the job has run, e.g. its model file's),
``{"op": "input", "name", "digest", "source", "context"}`` (a dataset file the job read:
MLflow's dataset input, see :func:`input_message`), ``{"op": "end", "status", "t"}``.

Standard library only: jobs import this, and they never import MLflow.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

from .masking import mask_secrets

ENV_ENABLED = "IBROBUST_MLFLOW"
ENV_URI = "IBROBUST_TRACKING_URI"
ENV_EXPERIMENT = "IBROBUST_EXPERIMENT_ID"
ENV_PARENT = "IBROBUST_PARENT_RUN_ID"
ENV_COMMIT = "IBROBUST_GIT_COMMIT"
ENV_CONFIG_HASH = "IBROBUST_CONFIG_HASH"
ENV_COLLECTOR = "IBROBUST_COLLECTOR"  # the Collector's Unix socket
ENV_SPOOL = "IBROBUST_SPOOL_DIR"  # where a job spools a run no writer took
ENV_TIMEOUT = "IBROBUST_TRACKING_TIMEOUT"  # seconds a job waits for its writer
ENV_MODEL_MAX_MB = "IBROBUST_MODEL_ARTIFACT_MAX_MB"  # config mlflow.model_artifact_max_mb

DEFAULT_TIMEOUT = 30.0  # s; a writer that takes no write for this long: the job spools
RECEIVED = "received"  # the collector's answer to ``end``: it holds the run (journaled)
DEFAULT_SPOOL_DIR = "results/mlflow/spool"
RUN_KEY_TAG = "ibrobust.run_key"
MAX_PARAM_LEN = 6000  # MLflow's limit on a param value
MAX_DIGEST_LEN = 36  # MLflow's limit on a dataset digest (its SQL column)
DEFAULT_MODEL_MAX_MB = 50.0  # the schema's default of mlflow.model_artifact_max_mb
METRICS_PER_BATCH = 900  # MLflow's log_batch takes at most 1000 metrics ...
PARAMS_PER_BATCH = 100  # ... and at most 100 params
_BAD_KEY_CHARS = re.compile(r"[^A-Za-z0-9_\-. /]")


def mlflow_key(key: str) -> str:
    """MLflow allows alphanumerics, _ - . space and / in names; map anything else to _."""
    return _BAD_KEY_CHARS.sub("_", key)


def batches(items: list, size: int):
    """``items`` in consecutive slices of at most ``size``."""
    for lo in range(0, len(items), size):
        yield items[lo : lo + size]


def run_key(outputs: list[str], code_hash: str) -> str:
    """A job's run identity: its output paths (as the rule names them) and code hash.

    A rerun of the same job for the same result has the same key, so the store keeps one
    run per key (the newest) and a replay recognises a run that is already there.
    """
    text = json.dumps({"outputs": sorted(map(str, outputs)), "code": code_hash})
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def now_ms() -> int:
    return int(time.time() * 1000)


def start_message(name: str, tags: dict[str, Any], params: dict[str, Any]) -> dict:
    """The ``start`` message: secrets masked, keys made valid, values cut to MLflow's limit."""
    return {
        "op": "start",
        "name": mask_secrets(name),
        "tags": {mlflow_key(k): mask_secrets(str(v))[:MAX_PARAM_LEN] for k, v in tags.items()},
        "params": {mlflow_key(k): mask_secrets(str(v))[:MAX_PARAM_LEN] for k, v in params.items()},
        "t": now_ms(),
    }


def tags_message(tags: dict[str, Any]) -> dict:
    """The ``tags`` message: tags set after the start (secrets masked, keys made valid)."""
    return {
        "op": "tags",
        "tags": {mlflow_key(k): mask_secrets(str(v))[:MAX_PARAM_LEN] for k, v in tags.items()},
    }


def input_message(name: str, digest: str, source: str, context: str) -> dict:
    """The ``input`` message: a dataset the job read, as MLflow's ``log_input`` records it
    (name, digest, source; ``context`` e.g. ``training`` or ``evaluation``)."""
    return {
        "op": "input",
        "name": mask_secrets(name),
        "digest": digest[:MAX_DIGEST_LEN],
        "source": mask_secrets(source),
        "context": context,
    }


def model_max_mb() -> float:
    """The size cap of a model file logged as an artifact, in MB (config
    ``mlflow.model_artifact_max_mb``, exported by the workflow; else the schema's default)."""
    return float(os.environ.get(ENV_MODEL_MAX_MB) or DEFAULT_MODEL_MAX_MB)


def timeout() -> float:
    """Seconds a job waits for its writer (``IBROBUST_TRACKING_TIMEOUT``, else the default)."""
    return float(os.environ.get(ENV_TIMEOUT) or DEFAULT_TIMEOUT)


def spool_dir() -> Path:
    return Path(os.environ.get(ENV_SPOOL) or DEFAULT_SPOOL_DIR)


def spool_path(start: dict) -> Path:
    """``<spool dir>/<run key or name>-<start ms>.jsonl``: one file per spooled run."""
    key = start["tags"].get(RUN_KEY_TAG) or mlflow_key(start["name"]).replace("/", "_")
    return spool_dir() / f"{key}-{start['t']}.jsonl"


def spool_header(
    problem: str, experiment_id: str | None = None, tracking_uri: str | None = None
) -> dict:
    """The first line of a spool file: where the run was meant to go (default: what the
    environment says), and why it is not there."""
    if experiment_id is None:
        experiment_id = os.environ.get(ENV_EXPERIMENT, "")
    if tracking_uri is None:
        tracking_uri = os.environ.get(ENV_URI, "")
    return {
        "op": "spool",
        "experiment_id": experiment_id,
        "tracking_uri": mask_secrets(tracking_uri),
        "problem": mask_secrets(problem),
    }


def write_spool(
    lines: list[str],
    start: dict,
    problem: str,
    experiment_id: str | None = None,
    tracking_uri: str | None = None,
) -> Path:
    """Write a run's stream (JSON lines) atomically to its spool file; its path. A job and
    the collector may both write one run's file (a job that gave up waiting for its receipt):
    each through a temporary file of its own, the stream the same."""
    path = spool_path(start)
    path.parent.mkdir(parents=True, exist_ok=True)
    header = spool_header(problem, experiment_id, tracking_uri)
    _replace(path, json.dumps(header) + "\n" + "".join(lines))
    return path


def respool(path: Path, problem: str) -> None:
    """Put a new reason in a spool file's header (the stream unchanged)."""
    header, rest = path.read_text().split("\n", 1)
    _replace(
        path, json.dumps({**json.loads(header), "problem": mask_secrets(problem)}) + "\n" + rest
    )


def _replace(path: Path, text: str) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}-{threading.get_ident()}.part")
    tmp.write_text(text)
    os.replace(tmp, path)
