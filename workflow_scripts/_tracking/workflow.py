"""The workflow side: :class:`WorkflowTracking`, the object the Snakefile holds.

``start`` (``onstart``) resolves the tracking URI (MLFLOW_TRACKING_URI wins over the
config; with ``mlflow.server.start`` it starts a tracking server for the run on the
backend store IBROBUST_BACKEND_STORE_URI or the config names, see ``secrets`` and
``server``), probes a remote one (a few seconds, one line if it is down), creates the
store and experiment once - before any job starts, so parallel jobs never race to create
a fresh SQLite store - opens the parent run (named after what the invocation runs, see
``invocation``; the config as a masked ``config.yaml`` artifact, a few params), starts
the collector and exports what jobs need through IBROBUST_* environment variables
(inherited by local and SLURM jobs alike).

``end`` (``onsuccess``/``onerror``) closes the collector: it waits a bounded time for the
runs the collector has received to be in the store (:data:`END_TIMEOUT`; :data:`STOP_WAIT`
for a run stopped by a signal), and says how many are not and stay journaled in the spool,
to replay. It then closes the parent run within a bounded time (else spools the closing,
for the replay), stops the server, if the run started one, and prints the command that
serves the store and the URL of the parent run (``ui``).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
from pathlib import Path

from . import protocol, ui
from .collector import Collector, start_collector
from .invocation import Invocation
from .masking import mask_secrets, mask_value
from .protocol import (
    ENV_COLLECTOR,
    ENV_COMMIT,
    ENV_CONFIG_HASH,
    ENV_ENABLED,
    ENV_EXPERIMENT,
    ENV_PARENT,
    ENV_SPOOL,
    ENV_URI,
    MAX_PARAM_LEN,
)
from .secrets import StoreURI, take_backend_store
from .uri import artifact_location, probe, resolve_tracking_uri
from .writer import log_params, retry

EXPERIMENT_KIND = ("mlflow.experimentKind", "custom_model_development")  # UI: training runs
END_TIMEOUT = 20.0  # s the end-of-run handler waits for the store (the runs, the parent)
STOP_WAIT = 5.0  # s a run stopped by a signal waits for the runs: they are journaled anyway
# MLflow's HTTP client retries 7 times with backoff 2 (~4 min per call); a few suffice here
HTTP_CLIENT_DEFAULTS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "3", "MLFLOW_HTTP_REQUEST_TIMEOUT": "20"}


def server_settings(ml: dict, log_file: str, store: StoreURI):
    """``server.ServerSettings`` from the config's ``mlflow`` block and the backend store
    (``secrets.backend_store``)."""
    from .server import ServerSettings

    srv = ml["server"]
    return ServerSettings(
        host=srv["host"],
        port=int(srv["port"]),
        backend_store_uri=store.uri,
        backend_key=store.source,
        artifacts_destination=srv["artifacts_destination"] or ml["artifact_root"],
        workers=int(srv["workers"]),
        startup_timeout=float(srv["startup_timeout"]),
        log_file=log_file,
    )


def delete_empty_default_experiment(client) -> None:
    """MLflow creates a ``Default`` experiment (id 0) with every new store; delete it while
    it holds no run, so the UI lists only the workflow's experiment."""
    from mlflow.entities import ViewType

    try:
        default = client.get_experiment("0")
        if default.lifecycle_stage != "active":
            return
        if not client.search_runs(["0"], run_view_type=ViewType.ALL, max_results=1):
            client.delete_experiment("0")
    except Exception:  # noqa: BLE001 - cosmetic; never fail a run for it
        pass


class WorkflowTracking:
    """One invocation's tracking: parent run, collector, server; no MLflow import until
    :meth:`start`, so parsing the workflow (and dry runs) do not pay for it."""

    def __init__(self, config: dict, config_hash: str, basedir: str):
        self.config = config
        self.config_hash = config_hash
        self.basedir = basedir
        self.uri: str | None = None
        self.experiment_id: str | None = None
        self.parent_run_id: str | None = None
        self.collector: Collector | None = None
        self.invocation = Invocation()
        self._server = None
        self._store: StoreURI | None = None  # what `mlflow ui` serves afterwards (None: a server)
        self._artifacts: str | None = None  # ... and the artifacts of the run's own server

    @property
    def settings(self) -> dict:
        return self.config["mlflow"]

    def start(self, invocation: Invocation | None = None) -> None:
        """``invocation``: what this ``snakemake`` runs (:meth:`Invocation.of` its workflow);
        it names the parent run."""
        from ibrobust.provenance import git_commit

        self.invocation = invocation or Invocation()
        backend = take_backend_store(self.settings)  # out of the jobs' environment
        os.environ[ENV_CONFIG_HASH] = self.config_hash
        os.environ[ENV_COMMIT] = git_commit(self.basedir)
        if not self.settings["enabled"]:
            os.environ[ENV_ENABLED] = "0"
            return
        for key, value in HTTP_CLIENT_DEFAULTS.items():
            os.environ.setdefault(key, value)
        self.uri = self._tracking_uri(backend)
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=self.uri)  # creating it creates/migrates the store
        exp_id = self.experiment_id = self._experiment(client)
        self.parent_run_id = self._parent_run(client, exp_id)
        os.environ.update(
            {
                ENV_ENABLED: "1",
                ENV_URI: self.uri,
                ENV_EXPERIMENT: exp_id,
                ENV_PARENT: self.parent_run_id,
                ENV_SPOOL: str(Path(protocol.DEFAULT_SPOOL_DIR).resolve()),
                protocol.ENV_MODEL_MAX_MB: str(
                    self.settings.get("model_artifact_max_mb", protocol.DEFAULT_MODEL_MAX_MB)
                ),
            }
        )
        self.collector = start_collector(client, exp_id, self.uri)
        if self.collector is not None:
            os.environ[ENV_COLLECTOR] = self.collector.address

    def _tracking_uri(self, backend: StoreURI) -> str:
        ml = self.settings
        from_env = os.environ.get("MLFLOW_TRACKING_URI")
        if backend.variable and (from_env or not ml["server"]["start"]):
            print(
                f"ibrobust: WARNING: {backend.variable} is set but not used: it is the backend "
                "store of the server the workflow starts (mlflow.server.start: true, and no "
                "MLFLOW_TRACKING_URI)",
                file=sys.stderr,
                flush=True,
            )
        if ml["server"]["start"] and not from_env:
            from . import server

            settings = server_settings(ml, "results/logs/mlflow_server.log", backend)
            uri = server.start(settings)
            self._server = server
            self._store = StoreURI(
                server.absolute_store_uri(backend.uri), backend.source, backend.variable
            )
            self._artifacts = settings.artifacts_destination
            print(
                f"MLflow tracking server for this run: {uri} (store "
                f"{mask_secrets(server.absolute_store_uri(settings.backend_store_uri))}, "
                f"artifacts {settings.artifacts_destination}; log {settings.log_file})",
                flush=True,
            )
            return uri
        uri = resolve_tracking_uri(ml["tracking_uri"])
        probe(uri)
        if not uri.startswith(("http://", "https://")):
            var = "MLFLOW_TRACKING_URI" if from_env else None
            where = f"environment variable {var}" if var else "config key mlflow.tracking_uri"
            self._store = StoreURI(uri, where, var)
        return uri

    def _experiment(self, client) -> str:
        ml = self.settings
        # Behind a server the server decides where artifacts go (proxied uploads): no location.
        location = None if self.uri.startswith(("http:", "https:")) else ml["artifact_root"]
        exp = retry(client.get_experiment_by_name, ml["experiment"])
        if exp and location and exp.artifact_location.startswith("mlflow-artifacts:"):
            raise ValueError(
                f"config key mlflow.experiment: experiment {ml['experiment']!r} in "
                f"{mask_secrets(self.uri)} keeps its artifacts behind a tracking server "
                f"({exp.artifact_location}); run with mlflow.server.start: true (or "
                "MLFLOW_TRACKING_URI=http://...) or use another experiment name"
            )
        if exp:
            exp_id = exp.experiment_id
        else:
            exp_id = retry(
                client.create_experiment,
                ml["experiment"],
                artifact_location=artifact_location(location) if location else None,
            )
        if (exp.tags if exp else {}).get(EXPERIMENT_KIND[0]) != EXPERIMENT_KIND[1]:
            retry(client.set_experiment_tag, exp_id, *EXPERIMENT_KIND)
        delete_empty_default_experiment(client)
        return exp_id

    def _parent_run(self, client, exp_id: str) -> str:
        inv = self.invocation  # the studies its jobs belong to, and what was asked for
        studies, targets = ",".join(inv.studies), ",".join(inv.targets)[:MAX_PARAM_LEN]
        tags = {
            "ibrobust.kind": "workflow",
            "ibrobust.config_hash": self.config_hash,
            "mlflow.source.git.commit": os.environ[ENV_COMMIT],
            "ibrobust.studies": studies,
        }
        if self._server is not None:
            tags["ibrobust.tracking_server"] = mask_secrets(self.uri)
        import _lifecycle  # this invocation's pid/host on its parent run; close dead ones' runs

        tags.update(_lifecycle.run_tags())
        _lifecycle.bounded(
            60, "closing orphaned runs", _lifecycle.close_orphaned_runs, client, exp_id
        )
        run = retry(client.create_run, exp_id, run_name=inv.run_name(), tags=tags)
        run_id = run.info.run_id
        # the config itself is the masked config.yaml artifact; params: what to filter by
        log_params(
            client,
            run_id,
            {
                "studies": studies,
                "targets": targets,
                "config_hash": self.config_hash,
                "experiment": self.settings["experiment"],
            },
        )
        self._log_config(client, run_id)
        return run_id

    def _log_config(self, client, run_id: str) -> None:
        import yaml

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "config.yaml"
            path.write_text(yaml.safe_dump(mask_value(self.config), sort_keys=False))
            retry(client.log_artifact, run_id, str(path))

    def log_parent_artifacts(self, files: dict[str, str], since: float) -> None:
        """Log ``files`` (path -> artifact folder) that this invocation wrote (modified at or
        after ``since``) to the parent run, e.g. the claims ledger. Never fails the run: a
        store error is one warning line."""
        if not self.parent_run_id:
            return
        fresh = {
            p: d for p, d in files.items() if Path(p).exists() and os.path.getmtime(p) >= since
        }
        if not fresh:
            return
        try:
            from mlflow.tracking import MlflowClient

            client = MlflowClient(tracking_uri=self.uri)
            for path, folder in fresh.items():
                retry(client.log_artifact, self.parent_run_id, path, folder)
        except Exception as err:  # noqa: BLE001 - reported, never fatal
            print(
                f"ibrobust: WARNING: could not log {sorted(fresh)} to the parent MLflow run "
                f"{self.parent_run_id}: {mask_secrets(str(err))}",
                file=sys.stderr,
                flush=True,
            )

    def end(self, status: str, timeout: float = END_TIMEOUT) -> None:
        """Close the collector (waiting up to ``timeout`` s, :data:`STOP_WAIT` s for a
        stopped run, ``KILLED``, for the runs it has received to be in the store), close
        the parent run (within ``timeout`` s, else spool the closing for the replay), stop
        the run's tracking server, then print where to see the runs."""
        try:
            down = None
            if self.collector is not None:
                down = self._close_collector(
                    min(timeout, STOP_WAIT) if status == "KILLED" else timeout
                )
            if self.parent_run_id:
                self._close_parent(status, timeout, down)
        finally:
            if self._server is not None:
                self._server.stop()
            self.print_ui_hint()

    def _close_collector(self, wait: float) -> str | None:
        """Close the collector; say how many received runs are not in the store (they stay
        journaled in the spool). Returns why the store is down, if it is."""
        import _lifecycle  # bounded: an unreachable server or Ctrl-C must not hang

        collector, self.collector = self.collector, None
        kept: list[Path] = []
        _lifecycle.bounded(
            wait + 10, "closing the MLflow collector", lambda: kept.extend(collector.close(wait))
        )
        os.environ.pop(ENV_COLLECTOR, None)
        if kept:
            print(
                f"ibrobust: WARNING: {len(kept)} MLflow run(s) of jobs that ended are not in the "
                f"store (not written within {wait:g} s, or refused); they are kept in "
                f"{kept[0].parent} - replay them with python workflow_scripts/_tracking/replay.py",
                file=sys.stderr,
                flush=True,
            )
        return collector.gate.down

    def print_ui_hint(self) -> None:
        """The command that serves the store (none for a server that outlives the run) and
        the URL of this invocation's parent run (``ui``)."""
        if not (self.parent_run_id and self.experiment_id and self.uri):
            return
        if self._store is None:  # a tracking server of its own (MLFLOW_TRACKING_URI=http...)
            url, command = ui.run_url(self.uri, self.experiment_id, self.parent_run_id), None
        else:
            url = ui.run_url(ui.UI_BASE, self.experiment_id, self.parent_run_id)
            command = ui.open_command(self._store, self._artifacts)
        for line in ui.hint_lines(url, command):
            print(line, file=sys.stderr, flush=True)

    def _close_parent(self, status: str, timeout: float, down: str | None) -> None:
        from mlflow.tracking import MlflowClient

        end = {"op": "terminate", "run_id": self.parent_run_id, "status": status}
        end["t"] = protocol.now_ms()
        errors: list[BaseException] = []

        def close() -> None:
            try:
                client = MlflowClient(tracking_uri=self.uri)
                retry(client.set_terminated, self.parent_run_id, status=status, end_time=end["t"])
            except Exception as err:  # noqa: BLE001 - reported below
                errors.append(err)

        thread = threading.Thread(target=close, name="ibrobust-end", daemon=True)
        if not down:  # a store known to be down is not waited for
            thread.start()
            thread.join(timeout)
        if down or thread.is_alive() or errors:
            why = down or (
                mask_secrets(str(errors[0])) if errors else f"no answer in {timeout:g} s"
            )
            start = {"name": "workflow", "tags": {}, "t": end["t"]}
            path = protocol.write_spool([json.dumps(end) + "\n"], start, why)
            print(
                f"ibrobust: WARNING: could not close the parent MLflow run {self.parent_run_id} "
                f"({why}); spooled to {path}",
                file=sys.stderr,
                flush=True,
            )
