"""Operations of the tracking package, without Snakemake: the store URI from the
environment (IBROBUST_BACKEND_STORE_URI over the config, taken out of the jobs'
environment) and the warning for a password given with --config."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "workflow_scripts"
sys.path.insert(0, str(SCRIPTS))
import _server  # noqa: E402
import _tracking  # noqa: E402
from _tracking.secrets import ENV_BACKEND_STORE, StoreURI, take_backend_store  # noqa: E402

SECRET = "s3cr3t-Pa55"
PG = f"postgresql://mlflow:{SECRET}@db.example.org:5432/mlflow"


def _ml(backend: str = "", tracking: str = "sqlite:///results/mlflow/mlflow.db") -> dict:
    return {"tracking_uri": tracking, "server": {"backend_store_uri": backend}}


# ---- the backend store: environment over config, in one place ------------------------------
def test_the_environment_variable_wins_over_the_config(monkeypatch):
    monkeypatch.setenv(ENV_BACKEND_STORE, PG)
    store = _tracking.backend_store(_ml("postgresql://other@h/db"))
    assert store == StoreURI(PG, f"environment variable {ENV_BACKEND_STORE}", ENV_BACKEND_STORE)


@pytest.mark.parametrize("env", [None, "", "   "])
def test_without_the_variable_the_config_decides(env, monkeypatch):
    if env is None:
        monkeypatch.delenv(ENV_BACKEND_STORE, raising=False)
    else:
        monkeypatch.setenv(ENV_BACKEND_STORE, env)
    store = _tracking.backend_store(_ml("postgresql://u@h/db"))
    assert (store.uri, store.source) == (
        "postgresql://u@h/db",
        "config key mlflow.server.backend_store_uri",
    )
    store = _tracking.backend_store(_ml(""))  # empty: the local store
    assert store == StoreURI("sqlite:///results/mlflow/mlflow.db", "config key mlflow.tracking_uri")


def test_taking_the_store_removes_the_variable_from_the_jobs_environment(monkeypatch):
    monkeypatch.setenv(ENV_BACKEND_STORE, PG)
    assert take_backend_store(_ml()).uri == PG
    assert ENV_BACKEND_STORE not in os.environ


def test_a_bad_store_from_the_environment_names_the_variable():
    key = f"environment variable {ENV_BACKEND_STORE}"
    with pytest.raises(_server.ServerError) as err:
        _server._check_backend(f"mongodb://u:{SECRET}@h/db", key)
    assert str(err.value).startswith(f"{key}: mongodb://u:***@h/db: unsupported scheme")
    assert SECRET not in str(err.value)
    settings = _tracking.server_settings(
        {**_ml(), "artifact_root": "a", "server": _server_block()},
        "log",
        StoreURI(PG, key, ENV_BACKEND_STORE),
    )
    assert (settings.backend_store_uri, settings.backend_key) == (PG, key)


def _server_block() -> dict:
    return {
        "start": False,
        "backend_store_uri": "",
        "host": "127.0.0.1",
        "port": 0,
        "artifacts_destination": "",
        "workers": 1,
        "startup_timeout": 5,
    }


# ---- a password on the command line -------------------------------------------------------
def test_no_warning_without_a_password_on_the_command_line():
    assert _tracking.command_line_warning(None) is None
    assert _tracking.command_line_warning({"mlflow": {"server": {"start": "true"}}}) is None
    clean = {"mlflow": {"server": {"backend_store_uri": "postgresql://u@h/db"}}}
    assert _tracking.command_line_warning(clean) is None


def test_the_warning_names_each_key_and_its_variable():
    given = {
        "mlflow": {"server": {"start": "true", "backend_store_uri": PG}, "tracking_uri": PG},
        "data_root": f"/data?password={SECRET}",
    }
    warning = _tracking.command_line_warning(given)
    assert warning.startswith("ibrobust: WARNING: a password given with --config is kept")
    assert ".snakemake/log/" in warning and "\n" not in warning
    assert (
        "Instead of --config mlflow.server.backend_store_uri, set the environment variable "
        "IBROBUST_BACKEND_STORE_URI; instead of --config mlflow.tracking_uri, set the "
        "environment variable MLFLOW_TRACKING_URI; instead of --config data_root, use a "
        "config file (--configfile)"
    ) in warning
    assert SECRET not in warning
