"""Replay spooled runs into the MLflow store: ``python workflow_scripts/_tracking/replay.py``.

A job whose writer took no write within the timeout (the tracking server was down)
spooled its run to ``results/mlflow/spool/<run key>-<start ms>.jsonl``; the collector
leaves the same file (its journal) for a run it received but did not get into the store
before the workflow ended; an end-of-run handler that could not close the parent run
spooled that too. This command applies them to the store, then moves each file to
``spool/replayed/``. It is idempotent: a run is skipped when its key already has a FINISHED
run started at the same time or later, or when the store holds it whole (same start, end
and status), so replaying twice, or replaying a run the collector did log after all, adds
nothing; what the same job left half-written (same key and start, a collector cut off
mid-run) is replaced.

    python workflow_scripts/_tracking/replay.py [SPOOL_DIR] [--tracking-uri URI]
    python workflow_scripts/_tracking/replay.py --serve sqlite:///results/mlflow/mlflow.db

The store is ``--tracking-uri``, else MLFLOW_TRACKING_URI, else the one the run was meant
for (recorded in the spool file unless it held a password). Runs that were logged through
the run's own tracking server (``mlflow.server.start``) keep their artifacts behind one:
``--serve STORE_URI`` starts a tracking server on that store (artifacts in
``--artifacts-destination``, default ``results/mlflow/artifacts``) for the replay. Run from
the workflow's working directory. Exit status 1 if any run could not be replayed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make the package importable, and its own
    # folder no import root - Python put it first, where _tracking/secrets.py would stand in
    # for the standard library's secrets (pydantic imports it with MLflow)
    _here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _here]
    sys.path.insert(0, str(_here.parent))
    __package__ = "_tracking"  # noqa: A001

from .masking import MASK, mask_secrets  # noqa: E402
from .protocol import DEFAULT_SPOOL_DIR, RUN_KEY_TAG  # noqa: E402
from .uri import resolve_tracking_uri  # noqa: E402
from .writer import RunWriter, drain, retry, runs_with_key  # noqa: E402

REPLAYED = "replayed"


@dataclass
class ReplayReport:
    replayed: list[Path] = field(default_factory=list)
    present: list[Path] = field(default_factory=list)  # already in the store
    failed: dict[Path, str] = field(default_factory=dict)


def read_spool(path: Path) -> tuple[dict, list[str]]:
    """A spool file's header and its stream's lines (a partial last line dropped)."""
    lines = [ln for ln in path.read_text().splitlines(keepends=True) if ln.endswith("\n")]
    header = json.loads(lines[0])
    if header.get("op") != "spool":
        raise ValueError(f"{path}: not a spool file (no header line)")
    return header, lines[1:]


def store_uri(header: dict, given: str | None) -> str:
    uri = given or os.environ.get("MLFLOW_TRACKING_URI") or header["tracking_uri"]
    if MASK in uri:
        raise ValueError(
            f"the spooled run was meant for {uri} (password masked): pass --tracking-uri "
            "or set MLFLOW_TRACKING_URI"
        )
    return resolve_tracking_uri(uri)


def _terminate(client, msg: dict) -> bool:
    """Close a parent run the end-of-run handler could not; False if already closed."""
    run = retry(client.get_run, msg["run_id"])
    if run.info.status != "RUNNING":
        return False
    retry(client.set_terminated, msg["run_id"], status=msg["status"], end_time=msg["t"])
    return True


def _runs_of(client, experiment_id: str, start: dict) -> list:
    """The store's runs of a spooled run's key (of its name, for a run without a key)."""
    key = start["tags"].get(RUN_KEY_TAG)
    if key:
        return runs_with_key(client, experiment_id, key)
    name = start["name"].replace("'", "\\'")
    return retry(
        client.search_runs, [experiment_id], filter_string=f"attributes.run_name = '{name}'"
    )


def _already_logged(runs: list, start: dict, end: dict | None) -> bool:
    """Is there a FINISHED run of this key started no earlier than the spooled one, or the
    spooled run itself, whole (its start, end time and status)?"""
    return any(
        (r.info.status == "FINISHED" and r.info.start_time >= start["t"])
        or (
            end is not None
            and (r.info.start_time, r.info.end_time, r.info.status)
            == (start["t"], end.get("t"), end["status"])
        )
        for r in runs
    )


def replay_file(path: Path, tracking_uri: str | None = None) -> bool:
    """Apply one spool file to its store; False if it was there already."""
    from mlflow.tracking import MlflowClient

    header, lines = read_spool(path)
    client = MlflowClient(tracking_uri=store_uri(header, tracking_uri))
    first = json.loads(lines[0])
    if first["op"] == "terminate":
        return _terminate(client, first)
    end = json.loads(lines[-1])
    end = end if end["op"] == "end" else None
    runs = _runs_of(client, header["experiment_id"], first)
    if _already_logged(runs, first, end):
        return False
    for run in runs:  # the same job's run, half-written: replaced
        if run.info.start_time == first["t"]:
            retry(client.delete_run, run.info.run_id)
    error = drain(RunWriter(client, header["experiment_id"]), lines)
    if error is not None:
        raise RuntimeError(error)
    return True


def replay(spool_dir: Path, tracking_uri: str | None = None) -> ReplayReport:
    """Replay every spool file of ``spool_dir``; each done file moves to ``replayed/``."""
    report = ReplayReport()
    for path in sorted(spool_dir.glob("*.jsonl")):
        try:
            new = replay_file(path, tracking_uri)
        except Exception as err:  # noqa: BLE001 - reported per file
            report.failed[path] = mask_secrets(f"{type(err).__name__}: {err}")
            continue
        (report.replayed if new else report.present).append(path)
        done = spool_dir / REPLAYED
        done.mkdir(exist_ok=True)
        os.replace(path, done / path.name)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("spool_dir", nargs="?", default=DEFAULT_SPOOL_DIR, type=Path)
    parser.add_argument("--tracking-uri", help="the store (default: see above)")
    parser.add_argument("--serve", metavar="STORE_URI", help="replay through a server on it")
    parser.add_argument("--artifacts-destination", default="results/mlflow/artifacts")
    args = parser.parse_args(argv)
    if not args.spool_dir.is_dir():
        print(f"no spool folder {args.spool_dir}: nothing to replay")
        return 0
    if args.serve:
        from .server import ServerSettings, TrackingServer

        server = TrackingServer(
            ServerSettings(
                backend_store_uri=args.serve,
                artifacts_destination=args.artifacts_destination,
                log_file=str(args.spool_dir / "replay_server.log"),
            )
        )
        try:
            report = replay(args.spool_dir, server.start())
        finally:
            server.stop()
    else:
        report = replay(args.spool_dir, args.tracking_uri)
    for path, why in report.failed.items():
        print(f"FAILED {path}: {why}", file=sys.stderr)
    print(
        f"replayed {len(report.replayed)} run(s), {len(report.present)} already in the store, "
        f"{len(report.failed)} failed ({args.spool_dir})"
    )
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
