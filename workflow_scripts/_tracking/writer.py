"""The writer side: applies a run's stream (JSON lines from ``protocol``) to an MLflow store.

Used by the :class:`~_tracking.collector.Collector` (a thread of the Snakemake process),
by a job's own writer process (``main``: the stream on stdin) and by the replay of
spooled runs. MLflow is imported inside functions only.

One run per run key: a run that ends FINISHED deletes (MLflow's soft delete) the older
runs of its key (started before it), so a rerun of a job for the same result leaves one
run - also where the collector writes an older run's end after a newer one's.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import traceback

from .masking import mask_secrets
from .protocol import (
    ENV_EXPERIMENT,
    ENV_URI,
    METRICS_PER_BATCH,
    PARAMS_PER_BATCH,
    RUN_KEY_TAG,
    batches,
)


def retry(fn, *args, tries: int = 8, **kwargs):
    """Call an MLflow client method, retrying transient store errors (SQLite locks)."""
    for i in range(tries):
        try:
            return fn(*args, **kwargs)
        except Exception as err:  # noqa: BLE001 - the store raises many types
            transient = "locked" in str(err).lower() or "busy" in str(err).lower()
            if not transient or i == tries - 1:
                raise
            time.sleep(0.2 * 2**i)


def log_params(client, run_id: str, params: dict[str, str]) -> None:
    from mlflow.entities import Param

    items = [Param(k, mask_secrets(str(v))) for k, v in params.items()]
    for chunk in batches(items, PARAMS_PER_BATCH):
        retry(client.log_batch, run_id, params=chunk)


def runs_with_key(client, experiment_id: str, key: str) -> list:
    """The active runs of ``experiment_id`` tagged with run key ``key``."""
    return retry(
        client.search_runs,
        [experiment_id],
        filter_string=f"tags.`{RUN_KEY_TAG}` = '{key}'",
        max_results=1000,
    )


def dataset_input(msg: dict):
    """MLflow's dataset input of an ``input`` message: a metadata-only dataset
    (``mlflow.data.meta_dataset.MetaDataset``: name, digest, the file as its source - the
    writer never reads the data) with the context tag ``mlflow.data.context``."""
    from mlflow.data.dataset_source_registry import get_dataset_source_from_json
    from mlflow.data.meta_dataset import MetaDataset
    from mlflow.entities import DatasetInput, InputTag
    from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT

    # a local file (source type "local"); resolving the path instead warns on every job
    # that two registered sources claim it
    source = get_dataset_source_from_json(json.dumps({"uri": msg["source"]}), "local")
    dataset = MetaDataset(source, name=msg["name"], digest=msg["digest"])
    context = [InputTag(MLFLOW_DATASET_CONTEXT, msg["context"])] if msg.get("context") else []
    return DatasetInput(dataset._to_mlflow_entity(), tags=context)


class RunWriter:
    """Applies one run's messages (start, metrics, artifact, tags, input, end) to a store;
    :attr:`error` is the first failure (set by :func:`drain` as it happens)."""

    def __init__(self, client, experiment_id: str):
        self.client = client
        self.experiment_id = experiment_id
        self.run_id: str | None = None
        self.key: str | None = None
        self.start_time: int | None = None
        self.ended = False
        self.error: str | None = None

    def apply(self, msg: dict) -> None:
        from mlflow.entities import Metric, RunTag

        client, op = self.client, msg["op"]
        if op == "start":
            tags = {k: mask_secrets(str(v)) for k, v in msg["tags"].items()}
            self.key = tags.get(RUN_KEY_TAG)
            self.start_time = msg.get("t")
            run = retry(
                client.create_run,
                self.experiment_id,
                run_name=mask_secrets(msg["name"]),
                tags=tags,
                start_time=msg.get("t"),
            )
            self.run_id = run.info.run_id
            log_params(client, self.run_id, msg["params"])
        elif op == "metrics":
            items = [Metric(*m) for m in msg["items"]]
            for chunk in batches(items, METRICS_PER_BATCH):
                retry(client.log_batch, self.run_id, metrics=chunk)
        elif op == "artifact":
            retry(client.log_artifact, self.run_id, msg["path"], artifact_path=msg["folder"])
        elif op == "tags":
            tags = [RunTag(k, mask_secrets(str(v))) for k, v in msg["tags"].items()]
            retry(client.log_batch, self.run_id, tags=tags)
        elif op == "input":
            retry(client.log_inputs, self.run_id, [dataset_input(msg)])
        elif op == "end":
            retry(client.set_terminated, self.run_id, status=msg["status"], end_time=msg.get("t"))
            self.ended = True
            if msg["status"] == "FINISHED" and self.key:
                self._delete_older_runs_of_key()
        else:
            raise ValueError(f"unknown message op {op!r}")

    def _delete_older_runs_of_key(self) -> None:
        for run in runs_with_key(self.client, self.experiment_id, self.key):
            older = self.start_time is None or run.info.start_time < self.start_time
            if run.info.run_id != self.run_id and older:
                retry(self.client.delete_run, run.info.run_id)

    def abandon(self, failed: bool) -> None:
        """The job's stream ended without ``end``: the run ends KILLED (the job died) or
        FAILED (writing it failed), best effort, instead of staying RUNNING."""
        if self.run_id and not self.ended:
            try:
                retry(
                    self.client.set_terminated, self.run_id, status="FAILED" if failed else "KILLED"
                )
            except Exception:  # noqa: BLE001 - the store itself may be what failed
                pass


def whole_lines(stream):
    """The complete (newline-terminated) lines of a byte or text stream: a job killed in the
    middle of a write leaves a partial last line, which is dropped, not parsed."""
    for raw in stream:
        if raw.endswith(b"\n" if isinstance(raw, bytes) else "\n"):
            yield raw


class StoreDown(RuntimeError):
    """The tracking server does not answer: nothing is written until it does."""


class StoreGate:
    """A circuit breaker for a tracking server: after a failed write, if ``/health`` does
    not answer either, the store counts as down and every run is refused at once (its job
    spools it) instead of each write waiting through MLflow's retries; ``/health`` is
    asked again at most every ``recheck`` s. Stores that are not servers never close."""

    def __init__(self, uri: str | None, recheck: float = 10.0):
        self.uri = uri if uri and uri.startswith(("http://", "https://")) else None
        self.recheck = recheck
        self.down: str | None = None
        self._checked = 0.0

    def _probe(self) -> str | None:
        from .uri import TrackingUnreachable, probe

        self._checked = time.monotonic()
        try:
            probe(self.uri, timeout=2.0)
            return None
        except TrackingUnreachable as err:
            return err.short

    def check(self) -> None:
        """Raise :class:`StoreDown` while the store is down."""
        if self.down and time.monotonic() - self._checked > self.recheck:
            self.down = self._probe()
        if self.down:
            raise StoreDown(self.down)

    def failed(self) -> None:
        """A write failed: is the server down?"""
        if self.uri and not self.down:
            self.down = self._probe()


def drain(
    run: RunWriter, stream, lock=None, gate: StoreGate | None = None, stop=None
) -> str | None:
    """Apply a job's stream of JSON lines to its run until ``end`` or the end of the stream;
    the first failure (None if none), also in ``run.error`` from the moment it happens.
    After a failure the rest of the stream is read but not applied; a run left without
    ``end`` ends KILLED (FAILED after a failure). Store writes hold ``lock`` (if given);
    artifact copies do not. Tracebacks go to stderr; while ``gate`` says the store is down,
    nothing is attempted (one line, no traceback). Once ``stop`` (a threading.Event) is set,
    nothing more is written, not even the run's end: its writer is closing."""
    lock = lock or contextlib.nullcontext()
    gate = gate or StoreGate(None)
    for raw in whole_lines(stream):
        if stop is not None and stop.is_set():
            return run.error
        try:
            msg = json.loads(raw)
            if run.error is None:
                gate.check()
                with contextlib.nullcontext() if msg.get("op") == "artifact" else lock:
                    run.apply(msg)
        except StoreDown as err:
            run.error = f"tracking server down: {err}"
        except Exception as err:  # noqa: BLE001 - reported to the job
            if run.error is None:
                gate.failed()
                run.error = mask_secrets(f"{type(err).__name__}: {err}")
                print(
                    f"ibrobust: run {run.run_id}: {mask_secrets(traceback.format_exc())}",
                    file=sys.stderr,
                )
        if run.ended:
            break
    if not run.ended and not gate.down:
        with lock:
            run.abandon(failed=run.error is not None)
    sys.stderr.flush()
    return run.error


def main() -> None:
    """A job's own writer process: apply the stream on stdin to the store named by the
    environment; exit status 1 if that failed (the traceback is in the job log)."""
    from mlflow.tracking import MlflowClient

    run = RunWriter(MlflowClient(tracking_uri=os.environ[ENV_URI]), os.environ[ENV_EXPERIMENT])
    if drain(run, sys.stdin.buffer) is not None:
        sys.exit(1)
