"""MLflow switches: tracking off, and MLFLOW_TRACKING_URI overriding the config."""

from __future__ import annotations

from collections import Counter

import pytest
from smk_helpers import TINY, base_env, finished_rules, snakemake, write_yaml

pytestmark = pytest.mark.workflow

DATA = "results/datasets/tiny_clusters/seed0/data.npz"  # one small job: dataset


def test_tracking_off_writes_no_store(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    # a --configfile overlay: `--config mlflow={enabled: false}` would reach the schema
    # as the *string* 'false' (Snakemake parses nested --config values as strings)
    off = write_yaml(tmp_path / "off.yaml", {"mlflow": {"enabled": False}})
    run = snakemake(work, "--cores", "1", DATA, configfiles=(TINY, off), timeout=300).check()
    assert finished_rules(run) == Counter(dataset=1)
    assert (work / DATA).is_file()
    assert not list(work.rglob("*.db")), list(work.rglob("*.db"))
    assert not (work / "results" / "mlflow").exists()
    assert not (work / "mlruns").exists()
    log = work / "results/logs/dataset/tiny_clusters/seed0.log"
    assert "mlflow=off" in log.read_text()


def test_tracking_uri_env_overrides_config(tmp_path):
    from mlflow.tracking import MlflowClient

    work = tmp_path / "work"
    work.mkdir()
    db = tmp_path / "elsewhere" / "other.db"  # its directory does not exist yet
    env = base_env(MLFLOW_TRACKING_URI=f"sqlite:///{db}")
    run = snakemake(work, "--cores", "1", DATA, env=env, timeout=300).check()
    assert finished_rules(run) == Counter(dataset=1)
    assert db.is_file()
    assert not (work / "results" / "mlflow" / "mlflow.db").exists()

    client = MlflowClient(tracking_uri=f"sqlite:///{db}")
    exp = client.get_experiment_by_name("ibrobust")
    runs = client.search_runs([exp.experiment_id])
    kinds = Counter(r.data.tags.get("ibrobust.kind") for r in runs)
    assert kinds == {"workflow": 1, "job": 1}
    parent = next(r for r in runs if r.data.tags["ibrobust.kind"] == "workflow")
    child = next(r for r in runs if r.data.tags["ibrobust.kind"] == "job")
    assert child.data.tags["ibrobust.rule"] == "dataset"
    assert child.data.tags["mlflow.parentRunId"] == parent.info.run_id
    assert {r.info.status for r in runs} == {"FINISHED"}
