"""What a job's run records about its files and what it cost: the model file (tags always,
the file under model/ within the size cap, the tag saying when and why it was skipped), the
dataset files it read (MLflow dataset inputs: name, digest, source, context), job.cpu_s and
job.peak_rss_mb; the new stream messages (``tags``, ``input``) applied by the collector and
by the replay of a spooled run, on a real SQLite store."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "workflow_scripts"
sys.path.insert(0, str(SCRIPTS))
import _tracking  # noqa: E402
from _job import eps_step, eps_steps  # noqa: E402
from _tracking import protocol, records  # noqa: E402
from _tracking import replay as replay_mod  # noqa: E402


# ---- the records, job side (no MLflow) -------------------------------------------------
def test_a_model_within_the_cap_is_an_artifact_and_a_larger_one_only_a_tag(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model = tmp_path / "results" / "fa" / "run" / "model.pt"
    model.parent.mkdir(parents=True)
    model.write_bytes(b"x" * 300_000)  # 0.29 MB
    small = records.model_record(model, max_mb=1)
    assert small.artifact and small.tags == {
        "ibrobust.model_path": "results/fa/run/model.pt",
        "ibrobust.model_artifact": "model/model.pt",
    }
    big = records.model_record(model, max_mb=0.25)
    assert not big.artifact and big.tags["ibrobust.model_path"] == "results/fa/run/model.pt"
    assert big.tags["ibrobust.model_artifact"].startswith(
        "not logged: 0.3 MB > 0.25 MB (mlflow.model_artifact_max_mb)"
    )
    assert not records.model_record(model, max_mb=0).artifact  # 0: no model file logged


def test_the_cap_default_is_the_schemas():
    schema = yaml.safe_load((ROOT / "schemas" / "config.schema.yaml").read_text())
    cap = schema["properties"]["mlflow"]["properties"]["model_artifact_max_mb"]
    assert cap["default"] == protocol.DEFAULT_MODEL_MAX_MB and cap["description"]


def test_a_dataset_is_named_by_its_path_and_digested_by_its_content(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "results" / "datasets" / "tiny_clusters" / "seed0" / "data.npz"
    data.parent.mkdir(parents=True)
    data.write_bytes(b"arrays")
    sha = hashlib.sha256(b"arrays").hexdigest()
    rec = records.dataset_record(data)
    assert (rec.name, rec.digest, rec.source) == ("tiny_clusters/seed0", sha[:16], str(data))
    # the dataset job's meta.json, written after the file, says the hash (no read of the data)
    meta = data.with_name("meta.json")
    meta.write_text(json.dumps({"sha256": "ab" * 32}))
    assert records.file_digest(data) == "ab" * 8
    # a meta.json older than the file is not trusted
    os.utime(meta, ns=(time.time_ns() - 10**10,) * 2)
    assert records.file_digest(data) == sha[:16]
    test = tmp_path / "results" / "price_linear" / "w2" / "data" / "test.npz"
    test.parent.mkdir(parents=True)
    test.write_bytes(b"t")
    assert records.dataset_name(test) == "price_linear/w2/data/test"


def test_eps_steps_are_eps_in_thousandths_and_clashing_radii_an_error():
    assert [eps_step(e) for e in (0.0, 0.025, 0.1, 1.2, 32.0)] == [0, 25, 100, 1200, 32000]
    assert eps_step(8 / 255) == 31 and eps_step(0.0005) == 0  # rounded to the nearest 1/1000
    assert eps_steps([0, 0.25, 2]) == {0.0: 0, 0.25: 250, 2.0: 2000}
    with pytest.raises(ValueError, match=r"radii 0.031 and 0.0312 share the MLflow step 31"):
        eps_steps([0.0, 0.031, 0.0312])


# ---- on a real store ---------------------------------------------------------------------
@pytest.fixture
def store(empty_store, tmp_path, monkeypatch):
    from mlflow.tracking import MlflowClient

    shutil.copy(empty_store, tmp_path / "mlflow.db")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("t", artifact_location=(tmp_path / "art").as_uri())
    parent = client.create_run(exp, run_name="workflow")
    env = {
        _tracking.ENV_ENABLED: "1",
        _tracking.ENV_URI: uri,
        _tracking.ENV_EXPERIMENT: exp,
        _tracking.ENV_PARENT: parent.info.run_id,
        _tracking.ENV_SPOOL: str(tmp_path / "spool"),
        _tracking.ENV_TIMEOUT: "30",
    }
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return client, exp, uri


def _job_run(client, exp):
    (run,) = client.search_runs([exp], "tags.`mlflow.parentRunId` != ''")
    return run


def _check_inputs(run, name: str, digest: str, source: str, context: str) -> None:
    (inp,) = run.inputs.dataset_inputs
    ds = inp.dataset
    assert (ds.name, ds.digest, ds.source_type) == (name, digest, "local")
    assert json.loads(ds.source)["uri"] == source
    assert {t.key: t.value for t in inp.tags} == {"mlflow.data.context": context}


def test_the_replay_applies_tags_and_dataset_inputs(store, tmp_path):
    client, exp, uri = store
    tags = {protocol.RUN_KEY_TAG: "kr", "mlflow.parentRunId": "p"}
    start = protocol.start_message("s/train/r", tags, {})
    msgs = [
        start,
        protocol.tags_message({"ibrobust.model_path": "results/x/model.pt"}),
        protocol.input_message("tiny/seed0", "0123456789abcdef", "/d/data.npz", "training"),
        {"op": "end", "status": "FINISHED", "t": start["t"] + 5},
    ]
    protocol.write_spool([json.dumps(m) + "\n" for m in msgs], start, "test")
    report = replay_mod.replay(tmp_path / "spool", uri)
    assert len(report.replayed) == 1, report
    run = _job_run(client, exp)
    assert run.data.tags["ibrobust.model_path"] == "results/x/model.pt"
    _check_inputs(run, "tiny/seed0", "0123456789abcdef", "/d/data.npz", "training")


JOB = """
import sys, types
from _job import Job
smk = types.SimpleNamespace(
    rule="train", wildcards={"seed": "0"}, threads=1, log=[sys.argv[1]],
    params={"code": "h"}, output=["results/run/model.pt"],
)
with Job(smk) as job:
    job.dataset("results/datasets/tiny/seed0/data.npz", "training")
    job.dataset("results/datasets/tiny/seed0/data.npz", "training")  # recorded once
    job.model("results/run/model.pt")
    if len(sys.argv) > 2:
        raise RuntimeError(sys.argv[2])
"""


def _run_job(work: Path, max_mb: str, fail: str = "") -> str:
    (work / "results" / "run").mkdir(parents=True)
    (work / "results" / "run" / "model.pt").write_bytes(b"m" * 200_000)
    data = work / "results" / "datasets" / "tiny" / "seed0" / "data.npz"
    data.parent.mkdir(parents=True)
    data.write_bytes(b"d")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(SCRIPTS)])}
    env[protocol.ENV_MODEL_MAX_MB] = max_mb
    log = work / "job.log"
    args = [sys.executable, "-c", JOB, str(log)] + [fail] * bool(fail)
    proc = subprocess.run(args, cwd=work, env=env, capture_output=True, timeout=120)
    assert proc.returncode == (1 if fail else 0), proc.stderr.decode()[-2000:]
    return log.read_text()


@pytest.mark.parametrize("max_mb", ["1", "0.1"])
def test_a_job_records_its_model_dataset_and_cost_through_the_collector(store, tmp_path, max_mb):
    client, exp, _ = store
    collector = _tracking.Collector(client, exp)
    os.environ[_tracking.ENV_COLLECTOR] = collector.address
    work = tmp_path / "work"
    try:
        log = _run_job(work, max_mb)
    finally:
        del os.environ[_tracking.ENV_COLLECTOR]
        assert collector.close(30) == []
    run = _job_run(client, exp)
    assert run.data.tags["ibrobust.model_path"] == "results/run/model.pt"
    arts = [a.path for a in client.list_artifacts(run.info.run_id, "model")]
    if max_mb == "1":
        assert arts == ["model/model.pt"]
        assert run.data.tags["ibrobust.model_artifact"] == "model/model.pt"
        path = client.download_artifacts(run.info.run_id, "model/model.pt", str(tmp_path))
        assert Path(path).read_bytes() == b"m" * 200_000
    else:
        assert (
            arts == [] and "not logged: 0.2 MB > 0.1 MB" in run.data.tags["ibrobust.model_artifact"]
        )
    digest = hashlib.sha256(b"d").hexdigest()[:16]
    source = str(work / "results" / "datasets" / "tiny" / "seed0" / "data.npz")
    _check_inputs(run, "tiny/seed0", digest, source, "training")
    cpu, peak = run.data.metrics["job.cpu_s"], run.data.metrics["job.peak_rss_mb"]
    assert 0 < cpu < 60 and 5 < peak < 4000 and run.data.metrics["job.seconds"] > 0
    done = [line for line in log.splitlines() if " done in " in line]
    assert len(done) == 1 and f"(cpu {cpu:.2f} s, peak {peak:.0f} MB)" in done[0]
    assert "model results/run/model.pt (0.19 MB): " in log


def test_a_failed_job_records_its_cost_but_no_duration(store, tmp_path):
    """job.cpu_s and job.peak_rss_mb at every run's end, also of a failed job; job.seconds
    only when it succeeded (a failed job's duration is no job's duration)."""
    client, exp, _ = store
    collector = _tracking.Collector(client, exp)
    os.environ[_tracking.ENV_COLLECTOR] = collector.address
    try:
        log = _run_job(tmp_path / "work", "1", fail="boom")
    finally:
        del os.environ[_tracking.ENV_COLLECTOR]
        assert collector.close(30) == []
    run = _job_run(client, exp)
    assert run.info.status == "FAILED" and "failed after" in log and "boom" in log
    assert run.data.metrics["job.cpu_s"] > 0 and run.data.metrics["job.peak_rss_mb"] > 5
    assert "job.seconds" not in run.data.metrics
