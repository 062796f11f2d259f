"""Where to see an invocation's runs: the lines the end of every run prints.

MLflow's UI opens on its GenAI home at ``/``; a run's page is
``<base>/#/experiments/<experiment id>/runs/<run id>`` (its *Child runs* field lists the
jobs). MLflow 3.17 takes the view of that page (GenAI or Model training) from the URL's
``workflowType`` or the browser's last choice, not from the experiment's
``mlflow.experimentKind`` tag, so the URL names it. The command that serves the store is ``mlflow ui`` on the store the run wrote to
(with the artifacts folder its server used, when the workflow started one), or nothing
when the run logged to a server that outlives it (MLFLOW_TRACKING_URI=http://...).
No password is printed: a URI that holds one is given as the environment variable it came
from, else masked.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from .secrets import StoreURI

UI_BASE = "http://127.0.0.1:5000"  # where `mlflow ui` answers by default
VIEW = "workflowType=machine_learning"  # the "Model training" view, not GenAI's
PREFIX = "ibrobust: MLflow"


def run_url(base: str, experiment_id: str, run_id: str) -> str:
    return f"{base.rstrip('/')}/#/experiments/{experiment_id}/runs/{run_id}?{VIEW}"


def open_command(store: StoreURI, artifacts: str | None = None) -> str:
    """``mlflow ui --backend-store-uri <store> [--artifacts-destination <dir>] --workers 1``
    (one worker is enough for one browser and starts fastest)."""
    cmd = f"mlflow ui --backend-store-uri {store.for_shell()}"
    if artifacts:
        dest = artifacts if "://" in artifacts else str(Path(artifacts).resolve())
        cmd += f" --artifacts-destination {shlex.quote(dest)}"
    return cmd + " --workers 1"


def hint_lines(url: str, command: str | None) -> list[str]:
    """The end-of-run lines: the command that serves the store (None: the run logged to a
    server that is still up), then the URL of the invocation's parent run."""
    lines = [f"{PREFIX}: open the store with: {command}"] if command else []
    return [*lines, f"{PREFIX}: this invocation's parent run: {url}"]
