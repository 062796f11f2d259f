"""Run records -> MLflow runs: the only module that imports MLflow.

Each record file (``record``) is one run. :func:`sync_file` applies the lines the store does
not have yet and stores its progress in the run itself: the tag ``ibrobust.record_lines``
(the lines applied) goes in the same ``log_batch`` as the metrics of those lines, so a sync
cut off anywhere and run again adds nothing twice. A run is found by its tag
``ibrobust.record_id``; once a run ends FINISHED the older runs of its ``ibrobust.run_key``
are deleted (one run per result). A record without an ``end`` line whose writer is gone
(or, at the end of its invocation, any of that invocation's) ends ``KILLED``.

The Snakemake process syncs its invocation's records in a daemon thread (:class:`Syncer`,
every :data:`PERIOD` s, so curves grow while jobs run) and once more at the end, bounded.
Logging after an outage is the same command as logging:

    python workflow_scripts/_tracking/sync.py [--tracking-uri URI] [--experiment NAME]
    ibrobust sync ...                      (the same, through the installed package)

run in the workflow's directory: every record under ``results/logs/`` that is not in the
store, or not whole, is synced (records of a running invocation are left to it).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):  # run as a file: import the package, not its folder's modules
    _here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _here]
    sys.path.insert(0, str(_here.parent))
    __package__ = "_tracking"  # noqa: A001

from .masking import MASK, mask_secrets  # noqa: E402
from .record import SUFFIX, project_path, writer_alive  # noqa: E402

RECORD_ID_TAG, LINES_TAG, RUN_KEY_TAG = (
    "ibrobust.record_id",
    "ibrobust.record_lines",
    "ibrobust.run_key",
)
RECORDS = Path("results") / "logs"  # record files: <log>.mlflow.jsonl under it
DEFAULT_URI = "sqlite:///results/mlflow/mlflow.db"
PERIOD = 5.0  # s between the live syncs of the Snakemake process
MAX_BATCH = 900  # metrics per log_batch (MLflow takes 1000 entries, tags included)
EXPERIMENT_KIND = ("mlflow.experimentKind", "custom_model_development")  # UI: training runs
INHERITED = ("mlflow.source.git.commit", "ibrobust.config_hash")  # parent tags on every child
COMMAND = "ibrobust sync (or python workflow_scripts/_tracking/sync.py)"
# MLflow's HTTP client retries 7 times with backoff 2 (~4 min per call); a few suffice here
os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "10")
os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")  # no line per run


@dataclass(frozen=True)
class Target:
    """Where runs go: MLFLOW_TRACKING_URI wins over the config's ``mlflow.tracking_uri``."""

    uri: str = DEFAULT_URI
    experiment: str = "ibrobust"
    artifact_root: str = "results/mlflow/artifacts"
    model_max_mb: float = 50.0

    @classmethod
    def of(cls, ml: dict) -> Target:
        uri = os.environ.get("MLFLOW_TRACKING_URI") or ml["tracking_uri"]
        experiment = os.environ.get("MLFLOW_EXPERIMENT_NAME") or ml["experiment"]
        return cls(absolute_uri(uri), experiment, ml["artifact_root"],
                   float(ml["model_artifact_max_mb"]))  # fmt: skip


def absolute_uri(uri: str) -> str:
    """Relative sqlite and plain paths made absolute (nothing is created here)."""
    if "://" not in uri:
        return Path(uri).resolve().as_uri()
    if uri.startswith("sqlite:///") and not uri.startswith("sqlite:////"):
        return f"sqlite:///{Path(uri[len('sqlite:///') :]).resolve()}"
    return uri


def new_sqlite_store(path: Path) -> None:
    """A missing SQLite store is made whole beside it and linked into place: a process
    killed while MLflow creates its tables leaves no half-made store (one it could not open
    again), and of two invocations making it at once, one store is kept."""
    if path.exists():
        return
    from mlflow.tracking import MlflowClient

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.new")
    try:
        MlflowClient(tracking_uri=f"sqlite:///{tmp}").search_experiments()
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        tmp.unlink(missing_ok=True)


def read_record(path: Path) -> list[dict]:
    """A record's whole lines, parsed (a line its writer is still writing is left out)."""
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.endswith("\n")]


def retry(fn, *args, tries: int = 6, **kwargs):
    """An MLflow call, retried while SQLite is locked (two invocations syncing at once)."""
    for i in range(tries):
        try:
            return fn(*args, **kwargs)
        except Exception as err:  # noqa: BLE001 - the stores raise many types
            if i == tries - 1 or not any(w in str(err).lower() for w in ("locked", "busy")):
                raise
            time.sleep(0.1 * 2**i)


class Store:
    """One experiment of one tracking URI (created, with its store, on first use)."""

    def __init__(self, target: Target):
        from mlflow.tracking import MlflowClient

        # its store errors are reported in one line each (Report.error); not its tracebacks
        logging.getLogger("mlflow.store.db.utils").setLevel(logging.CRITICAL)
        self.target = target
        if target.uri.startswith("sqlite:///"):
            new_sqlite_store(Path(target.uri[len("sqlite:///") :]))
        self.client = MlflowClient(tracking_uri=target.uri)
        self.experiment_id = self._experiment()
        self.runs: dict[str, object] = {}  # record id -> run (info, data), as last seen
        self.lines: dict[str, int] = {}  # record id -> lines in the store (this process wrote)

    def _experiment(self) -> str:
        c, name = self.client, self.target.experiment
        exp = retry(c.get_experiment_by_name, name)
        if exp is None:
            root = None if self.target.uri.startswith("http") else self.target.artifact_root
            location = root if root is None or "://" in root else Path(root).resolve().as_uri()
            exp_id = retry(c.create_experiment, name, artifact_location=location)
        else:
            exp_id = exp.experiment_id
        if (exp.tags if exp else {}).get(EXPERIMENT_KIND[0]) != EXPERIMENT_KIND[1]:
            retry(c.set_experiment_tag, exp_id, *EXPERIMENT_KIND)
        try:  # the Default experiment MLflow makes with a store, while it is empty
            if not c.search_runs(["0"], max_results=1) and c.get_experiment("0"):
                c.delete_experiment("0")
        except Exception:  # noqa: BLE001 - cosmetic
            pass
        return exp_id

    def find(self, record_id: str):
        """The run of a record id (deleted runs included: a run replaced by a newer one of its
        key is not brought back), None if the store has none."""
        from mlflow.entities import ViewType

        if record_id not in self.runs:
            found = retry(self.client.search_runs, [self.experiment_id],
                          filter_string=f"tags.`{RECORD_ID_TAG}` = '{record_id}'",
                          run_view_type=ViewType.ALL, max_results=1)  # fmt: skip
            if not found:
                return None
            self.runs[record_id] = found[0]
        return self.runs[record_id]

    def sync_file(self, lines: list[dict], abandoned: bool) -> bool:
        """Apply the lines the run lacks; end it KILLED when ``abandoned`` (no ``end`` line
        and its writer gone). Returns whether the run is complete in the store."""
        from mlflow.entities import Metric, RunTag

        start, c = lines[0], self.client
        rid = start["id"]
        run = self.find(rid)
        if run is None:
            run = self._create(start)
        if run.info.lifecycle_stage == "deleted":
            return True
        done = self.lines.get(rid, int(run.data.tags.get(LINES_TAG, "0")))
        run_id, metrics, n = run.info.run_id, [], max(done, 1)
        if done == 0:
            self._params(run_id, start["params"])

        def progress(i: int, batch: list | None = None) -> None:  # one atomic store write
            for lo in range(0, len(batch or [None]), MAX_BATCH):
                last = lo + MAX_BATCH >= len(batch or [None])
                retry(c.log_batch, run_id, metrics=(batch or [])[lo : lo + MAX_BATCH],
                      tags=[RunTag(LINES_TAG, str(i))] * last)  # fmt: skip
            self.lines[rid] = i

        for i, line in enumerate(lines[n:], n + 1):
            op = line["op"]
            if op == "metrics":
                items = [Metric(*m) for m in line["items"]]
                if metrics and len(metrics) + len(items) > MAX_BATCH:
                    progress(i - 1, metrics)
                    metrics = []
                metrics += items
                if i == len(lines):
                    progress(i, metrics)
                continue
            if metrics:  # what came before this line, with its progress
                progress(i - 1, metrics)
                metrics = []
            if op == "params":
                self._params(run_id, line["params"])
            elif op == "tags":
                retry(c.log_batch, run_id, tags=[RunTag(k, v) for k, v in line["tags"].items()])
            elif op == "artifact" and Path(line["path"]).is_file():
                retry(c.log_artifact, run_id, line["path"], artifact_path=line["folder"])
            elif op == "model":
                self._model(run_id, line["path"])
            elif op == "input":
                retry(c.log_inputs, run_id, [dataset_input(line)])
            elif op == "end":
                retry(c.set_terminated, run_id, status=line["status"], end_time=line["t"])
                if line["status"] == "FINISHED":
                    self._replace_older(run_id, start)
            progress(i)
        ended = lines[-1]["op"] == "end"
        if not ended and abandoned:
            retry(c.set_terminated, run_id, status="KILLED")
        return ended or abandoned

    def _create(self, start: dict):
        tags = {**start["tags"], RECORD_ID_TAG: start["id"], LINES_TAG: "0"}
        if start.get("parent"):
            parent = self.find(start["parent"])
            if parent is not None:
                tags["mlflow.parentRunId"] = parent.info.run_id
                tags.update({k: parent.data.tags[k] for k in INHERITED if k in parent.data.tags})
        run = retry(self.client.create_run, self.experiment_id, run_name=start["name"],
                    tags=tags, start_time=start["t"])  # fmt: skip
        self.runs[start["id"]] = run
        return run

    def _params(self, run_id: str, params: dict) -> None:
        from mlflow.entities import Param

        items = [Param(k, v) for k, v in params.items()]
        for lo in range(0, len(items), 100):
            retry(self.client.log_batch, run_id, params=items[lo : lo + 100])

    def _model(self, run_id: str, path: str) -> None:
        """Tags ``ibrobust.model_path``/``ibrobust.model_artifact``; the file under
        ``model/`` when at most ``mlflow.model_artifact_max_mb`` MB."""
        from mlflow.entities import RunTag

        cap = self.target.model_max_mb
        size_mb = Path(path).stat().st_size / 2**20 if Path(path).is_file() else float("inf")
        where = f"model/{Path(path).name}" if 0 < cap and size_mb <= cap else (
            f"not logged: {size_mb:.1f} MB > {cap:g} MB (mlflow.model_artifact_max_mb); "
            "the file stays at ibrobust.model_path")  # fmt: skip
        tags = {"ibrobust.model_path": project_path(path), "ibrobust.model_artifact": where}
        retry(self.client.log_batch, run_id, tags=[RunTag(k, v) for k, v in tags.items()])
        if where.startswith("model/"):
            retry(self.client.log_artifact, run_id, path, artifact_path="model")

    def close_children(self, record_id: str) -> None:
        """End KILLED the RUNNING runs under the parent run of ``record_id``."""
        parent = self.find(record_id)
        if parent is None:
            return
        running = retry(self.client.search_runs, [self.experiment_id],
                        filter_string=f"tags.`mlflow.parentRunId` = '{parent.info.run_id}' "
                        "and attributes.status = 'RUNNING'", max_results=1000)  # fmt: skip
        for run in running:
            retry(self.client.set_terminated, run.info.run_id, status="KILLED")

    def _replace_older(self, run_id: str, start: dict) -> None:
        key = start["tags"].get(RUN_KEY_TAG)
        if not key:
            return
        for run in retry(self.client.search_runs, [self.experiment_id],
                         filter_string=f"tags.`{RUN_KEY_TAG}` = '{key}'", max_results=1000):  # fmt: skip
            if run.info.run_id != run_id and run.info.start_time < start["t"]:
                retry(self.client.delete_run, run.info.run_id)


def dataset_input(line: dict):
    """MLflow's dataset input of an ``input`` line: metadata only (name, digest, the file as
    its source; never read) with the context tag."""
    from mlflow.data.dataset_source_registry import get_dataset_source_from_json
    from mlflow.data.meta_dataset import MetaDataset
    from mlflow.entities import DatasetInput, InputTag
    from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT

    source = get_dataset_source_from_json(json.dumps({"uri": line["source"]}), "local")
    dataset = MetaDataset(source, name=line["name"], digest=line["digest"])
    return DatasetInput(dataset._to_mlflow_entity(),
                        tags=[InputTag(MLFLOW_DATASET_CONTEXT, line["context"])])  # fmt: skip


@dataclass
class Report:
    """One pass: records complete in the store, records not (yet), the first error."""

    complete: list[Path] = field(default_factory=list)
    pending: list[Path] = field(default_factory=list)
    error: str | None = None

    def summary(self) -> str | None:
        """The one line for runs not in the store (None when every run is)."""
        if not self.pending:
            return None
        why = f" ({self.error})" if self.error else ""
        return (f"ibrobust: MLflow: {len(self.pending)} run(s) not yet in the store{why}; their "
                f"records are kept beside the job logs - sync them with: {COMMAND}")  # fmt: skip


def record_files(root: Path = Path()) -> list[Path]:
    """Every record under ``results/logs``, parent runs (``results/logs/workflow``) first."""
    files = sorted((root / RECORDS).rglob(f"*{SUFFIX}"))
    return sorted(files, key=lambda p: p.parent.name != "workflow")


def sync(store_or_target, files: list[Path], own: str | None = None, final: bool = False,
         seen: dict | None = None) -> Report:  # fmt: skip
    """Sync ``files``; ``own``: this invocation's parent record id (its records are synced
    while they grow, and at ``final`` the ones without end are KILLED); records of another
    invocation whose process still runs are left to it. ``seen``: path -> (size, mtime,
    complete) as last synced (skipped while unchanged; a live one again at ``final``).
    Stops at the first store error."""
    report, seen = Report(), {} if seen is None else seen
    live: dict[str, bool] = {own: not final} if own else {}  # invocation -> still running
    store, over = store_or_target, []  # over: invocations that ended, synced in this pass
    for path in files:
        try:
            stat = path.stat()
            key = (stat.st_size, stat.st_mtime_ns)
            if seen.get(path) == (*key, True):
                report.complete.append(path)
                continue
            if seen.get(path) == (*key, False) and not final:
                report.pending.append(path)  # a live record that has not grown
                continue
            lines = read_record(path)
            if not lines:
                continue
            start, ended = lines[0], lines[-1]["op"] == "end"
            inv = start["parent"] or start["id"]
            if inv not in live:  # a parent's record comes before its jobs' records; an
                # invocation whose snakemake still runs (its last sync, too) syncs its own
                live[inv] = start["parent"] is None and writer_alive(start)
            if inv != own and live[inv]:
                continue  # a running invocation's: its own Snakemake syncs it
            abandoned = not ended and not (live[inv] and writer_alive(start))
            if not isinstance(store, Store):
                store = Store(store)
            complete = store.sync_file(lines, abandoned)
            seen[path] = (*key, complete)
            if complete:
                report.complete.append(path)
                if start["parent"] is None and not live[inv]:
                    over.append(inv)
            else:
                report.pending.append(path)
        except Exception as err:  # noqa: BLE001 - reported; the rest waits for the next pass
            report.error = mask_secrets(f"{type(err).__name__}: {err}".splitlines()[0])[:300]
            report.pending += [p for p in files if p not in report.complete]
            return report
    for inv in over:  # runs of an ended invocation whose record is gone (a rerun replaced it)
        store.close_children(inv)
    return report


class Syncer:
    """The Snakemake process's sync: a daemon thread every :data:`PERIOD` s, and a final
    pass bounded in time (:meth:`finish`); never raises."""

    def __init__(self, target: Target, own: str, root: Path = Path()):
        self.target, self.own, self.root = target, own, root
        self.store: Store | None = None
        self.seen: dict = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.last = Report()
        self.warned = False
        self.thread = threading.Thread(target=self._loop, name="ibrobust-sync", daemon=True)
        self.thread.start()

    def _pass(self, final: bool = False) -> Report:
        with self.lock:
            try:
                self.store = self.store or Store(self.target)
            except Exception as err:  # noqa: BLE001
                files = record_files(self.root)
                self.last = Report(
                    pending=files,
                    error=mask_secrets(f"{type(err).__name__}: {err}".splitlines()[0])[:300],
                )
                return self.last
            self.last = sync(self.store, record_files(self.root), self.own, final, self.seen)
            return self.last

    def _loop(self) -> None:
        while not self.stop.wait(PERIOD if self.store else 0.0):
            report = self._pass()
            if report.error and not self.warned:
                self.warned = True
                print(f"ibrobust: MLflow: WARNING: sync failed ({report.error}); jobs go on, "
                      "their records are kept and synced again", file=sys.stderr, flush=True)  # fmt: skip
            if report.error:
                self.stop.wait(PERIOD)

    def finish(self, timeout: float) -> Report:
        """The last pass (records of this invocation without end: KILLED), at most
        ``timeout`` s; what is not in the store then is reported by :meth:`Report.summary`."""
        self.stop.set()
        result: list[Report] = []

        def last() -> None:
            if self.lock.acquire(timeout=timeout):
                self.lock.release()
                result.append(self._pass(final=True))

        worker = threading.Thread(target=last, name="ibrobust-sync-end", daemon=True)
        worker.start()
        worker.join(timeout)
        if not result:
            pending = [p for p in record_files(self.root) if not self.seen.get(p, (0, 0, 0))[2]]
            return Report(pending=pending, error=f"no answer within {timeout:g} s")
        return result[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Sync the run records under results/logs to MLflow.")
    ap.add_argument("--tracking-uri", help=f"default: MLFLOW_TRACKING_URI, else {DEFAULT_URI}")
    ap.add_argument("--experiment", default=os.environ.get("MLFLOW_EXPERIMENT_NAME", "ibrobust"))
    ap.add_argument("--artifact-root", default="results/mlflow/artifacts")
    ap.add_argument("--model-max-mb", type=float, default=50.0)
    args = ap.parse_args(argv)
    uri = args.tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_URI
    if MASK in uri:
        sys.exit("ibrobust sync: the tracking URI is masked: give it in MLFLOW_TRACKING_URI")
    target = Target(absolute_uri(uri), args.experiment, args.artifact_root, args.model_max_mb)
    report = sync(target, record_files())
    print(f"ibrobust sync: {len(report.complete)} run(s) in {mask_secrets(target.uri)}, "
          f"{len(report.pending)} not{f' ({report.error})' if report.error else ''}")  # fmt: skip
    return 1 if report.error else 0


if __name__ == "__main__":
    sys.exit(main())
