"""Where to see an invocation's runs: the lines the end of every run prints.

A run's page is ``<base>/#/experiments/<experiment id>/runs/<run id>`` (its *Child runs*
field lists the jobs); MLflow 3 takes the view (GenAI or Model training) from the URL's
``workflowType``, so the URL names it. The command that serves the store is ``mlflow ui``
on the store the runs went to, or none for a tracking server (MLFLOW_TRACKING_URI=http...).
No password is printed: a URI that holds one is given as ``"$MLFLOW_TRACKING_URI"``.
"""

from __future__ import annotations

import shlex

from .masking import mask_secrets

UI_BASE = "http://127.0.0.1:5000"  # where `mlflow ui` answers by default
VIEW = "workflowType=machine_learning"  # the "Model training" view, not GenAI's
PREFIX = "ibrobust: MLflow"


def run_url(base: str, experiment_id: str, run_id: str) -> str:
    return f"{base.rstrip('/')}/#/experiments/{experiment_id}/runs/{run_id}?{VIEW}"


def open_command(uri: str) -> str:
    """``mlflow ui --backend-store-uri <store> --workers 1`` (one worker is enough for one
    browser and starts fastest)."""
    shown = '"$MLFLOW_TRACKING_URI"' if mask_secrets(uri) != uri else shlex.quote(uri)
    return f"mlflow ui --backend-store-uri {shown} --workers 1"


def hint_lines(url: str, command: str | None) -> list[str]:
    """The end-of-run lines: the command that serves the store (None for a server), then
    the URL of the invocation's parent run."""
    lines = [f"{PREFIX}: open the store with: {command}"] if command else []
    return [*lines, f"{PREFIX}: this invocation's parent run: {url}"]
