"""The Snakemake side: :class:`WorkflowTracking`, the object the Snakefile holds.

``start`` (``onstart``) writes the invocation's parent record
(``results/logs/workflow/<time>-<host>-<pid>.mlflow.jsonl``: the parent run's name, params,
tags, and the masked config as the artifact ``config.yaml`` in the folder of that name), tells the jobs its id
(:data:`record.ENV_PARENT`), takes ``MLFLOW_TRACKING_URI`` out of the jobs' environment (they
never talk to the store) and starts the :class:`~_tracking.sync.Syncer` thread. Nothing here
waits for the store: it is first touched by that thread, while jobs run.

``end`` (``onsuccess``/``onerror``, and at exit if neither ran) ends the parent record and
runs the last sync, at most :data:`END_TIMEOUT` s, then prints one line if runs are not in
the store (how many, and the command that syncs them) and where to see the runs (``ui``).
It never raises: the jobs' results never depend on the store.
"""

from __future__ import annotations

import atexit
import os
import socket
import sys
import time
from pathlib import Path

from . import ui
from .invocation import Invocation
from .masking import mask_secrets, mask_value
from .record import ENV_PARENT, RunRecord

END_TIMEOUT = 20.0  # s the end of a run waits for its last sync
STOP_TIMEOUT = 5.0  # ... of a run stopped by a signal
PARENT_DIR = Path("results") / "logs" / "workflow"


class WorkflowTracking:
    """One invocation's tracking; no MLflow import in this process's main thread."""

    def __init__(self, config: dict, config_hash: str, basedir: str):
        self.config, self.config_hash, self.basedir = config, config_hash, basedir
        self.record: RunRecord | None = None
        self.syncer = None

    @property
    def settings(self) -> dict:
        return self.config["mlflow"]

    def start(self, invocation: Invocation | None = None) -> None:
        from ibrobust.provenance import git_commit

        from .sync import Syncer, Target

        os.environ.pop(ENV_PARENT, None)
        if not self.settings["enabled"]:
            return
        target = Target.of(self.settings)
        os.environ.pop("MLFLOW_TRACKING_URI", None)  # jobs never write to the store
        inv = invocation or Invocation()
        studies = ",".join(inv.studies)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path = PARENT_DIR / f"{stamp}-{socket.gethostname()}-{os.getpid()}.mlflow.jsonl"
        tags = {"ibrobust.kind": "workflow", "ibrobust.config_hash": self.config_hash,
                "mlflow.source.git.commit": git_commit(self.basedir), "ibrobust.studies": studies}  # fmt: skip
        params = {"studies": studies, "targets": ",".join(inv.targets),
                  "config_hash": self.config_hash, "experiment": self.settings["experiment"]}  # fmt: skip
        self.record = RunRecord(path, inv.run_name(), tags, params)
        if self.record.problem:
            print(f"ibrobust: MLflow: WARNING: no parent run record ({self.record.problem}); "
                  "the jobs' runs are tracked without it", file=sys.stderr, flush=True)  # fmt: skip
        self._log_config(path.with_name(path.name.replace(".mlflow.jsonl", "")) / "config.yaml")
        os.environ[ENV_PARENT] = self.record.id
        self.syncer = Syncer(target, self.record.id)
        atexit.register(self.end, "FAILED")  # an exception that skips onerror

    def _log_config(self, path: Path) -> None:
        import yaml

        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(yaml.safe_dump(mask_value(self.config), sort_keys=False))
            self.record.artifact(path)
        except OSError as err:
            print(f"ibrobust: MLflow: WARNING: config.yaml not recorded ({err})", file=sys.stderr)

    def log_parent_artifacts(self, files: dict[str, str], since: float) -> None:
        """Record ``files`` (path -> artifact folder) this invocation wrote (modified at or
        after ``since``) on the parent run, e.g. the claims ledger."""
        if self.record is None:
            return
        for p, folder in files.items():
            if Path(p).exists() and os.path.getmtime(p) >= since:
                self.record.artifact(p, folder)

    def end(self, status: str) -> None:
        """End the parent record, sync for the last time (bounded), say what is not synced."""
        if self.record is None or self.syncer is None:
            return
        record, self.record = self.record, None
        try:
            record.end(status)
            report = self.syncer.finish(STOP_TIMEOUT if status == "KILLED" else END_TIMEOUT)
            if report.summary():
                print(report.summary(), file=sys.stderr, flush=True)
            self._hint(record.id)
        except Exception as err:  # noqa: BLE001 - tracking never fails the run
            print(f"ibrobust: MLflow: {mask_secrets(str(err))}", file=sys.stderr, flush=True)

    def _hint(self, record_id: str) -> None:
        store = self.syncer.store
        run = (
            store.find(record_id) if store is not None and self.syncer.last.error is None else None
        )
        uri = self.syncer.target.uri
        if run is None:
            return
        if uri.startswith(("http://", "https://")):
            url, command = ui.run_url(uri, store.experiment_id, run.info.run_id), None
        else:
            url = ui.run_url(ui.UI_BASE, store.experiment_id, run.info.run_id)
            command = ui.open_command(uri)
        for line in ui.hint_lines(url, command):
            print(line, file=sys.stderr, flush=True)
