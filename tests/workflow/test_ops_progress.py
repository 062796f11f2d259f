"""Progress: long jobs write readable lines (no carriage-return bars) and stream metrics to
MLflow while they run, so curves grow in the UI before the job ends."""

from __future__ import annotations

import os
import re
import sys
import time
from types import SimpleNamespace

import pytest
from smk_helpers import REPO

pytestmark = pytest.mark.workflow

sys.path.insert(0, str(REPO / "workflow_scripts"))
import _job  # noqa: E402
import _tracking  # noqa: E402


def test_no_log_of_the_tiny_run_has_carriage_returns(tiny_run):
    logs = [*tiny_run.results.joinpath("logs").rglob("*.log")]
    logs += [*tiny_run.workdir.joinpath(".snakemake", "log").glob("*.log")]
    assert len(logs) > 30
    bad = [str(p) for p in logs if b"\r" in p.read_bytes()]
    assert not bad, bad
    train_logs = list(tiny_run.results.joinpath("logs", "train").rglob("*.log"))
    lines = [
        line for p in train_logs for line in p.read_text().splitlines() if " progress " in line
    ]
    # every trained model writes its first and its last step (Job.progress), at least
    assert len(lines) >= 2 * 6 and all("%)" in line for line in lines), lines[:4]


def _fake_job(tmp_path, monkeypatch):
    monkeypatch.setenv(_tracking.ENV_ENABLED, "0")
    smk = SimpleNamespace(
        rule="train",
        wildcards={"study": "fa", "dataset": "d", "seed": "3"},
        threads=1,
        log=[str(tmp_path / "job.log")],
        params=SimpleNamespace(items=lambda: [("code", "x")], get=lambda k, d=None: "x"),
    )
    return _job.Job(smk), tmp_path / "job.log"


def test_progress_writes_one_line_per_interval(tmp_path, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(_job.time, "monotonic", lambda: clock[0])
    job, log = _fake_job(tmp_path, monkeypatch)
    with job:
        written = []
        for step in range(0, 1001, 10):  # 101 calls, 0.5 s apart: 50 s in all
            written.append(job.progress(step, 1000, every=10.0, loss=1.0 / (step + 1), acc=0.5))
            clock[0] += 0.5
    lines = [ln for ln in log.read_text().splitlines() if " progress " in ln]
    # the first step, one line per 10 s (every 20 calls), and the last step
    assert sum(written) == len(lines) == 6, lines
    assert re.search(r"progress 0/1000 \(0\.0%\) loss=1 acc=0\.5 \| 0 s$", lines[0]), lines[0]
    assert re.search(r"progress 200/1000 \(20\.0%\) .* \| 10 s, ~40 s left$", lines[1]), lines[1]
    assert re.search(r"progress 1000/1000 \(100\.0%\) loss=9\.990e-04 .*\| 50 s$", lines[-1])
    assert b"\r" not in log.read_bytes()
    assert job.run.enabled is False  # tracking off: progress still logs


def test_run_name_puts_the_study_first():
    wc = {"study": "fa", "dataset": "tiny@k=2", "model": "m", "seed": "0", "grid": "main"}
    assert _job.run_name("attack", wc) == "fa/attack/tiny@k=2/m/seed0/main"
    no_study = {"dataset": "d", "seed": "1"}
    assert _job.run_name("dataset", no_study) == f"{_job.NO_STUDY}/dataset/d/seed1"
    assert _job.run_name("price_train", {"study": "p", "dataset": "r", "n": "16"}) == (
        "p/price_train/r/n16"
    )


def test_job_run_streams_metrics_while_the_job_runs(tmp_path, monkeypatch):
    """A JobRun flushes buffered metrics every ``flush_every`` seconds: they are in the store
    (as a UI would read them) while the run is still RUNNING."""
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp_id = client.create_experiment("progress", artifact_location=(tmp_path / "a").as_uri())
    parent = client.create_run(exp_id, run_name="workflow test")
    env = {
        _tracking.ENV_ENABLED: "1",
        _tracking.ENV_URI: uri,
        _tracking.ENV_EXPERIMENT: exp_id,
        _tracking.ENV_PARENT: parent.info.run_id,
    }
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    run = _tracking.JobRun(
        "p/train/x", {"ibrobust.rule": "train"}, {"a": 1}, str(tmp_path / "j.log")
    )

    def history():
        runs = client.search_runs([exp_id], "attributes.run_name = 'p/train/x'")
        if not runs:
            return None, []
        return runs[0], client.get_metric_history(runs[0].info.run_id, "train.loss")

    seen = []
    t0 = time.monotonic()
    step = 0
    while time.monotonic() - t0 < 60:
        run.metrics({"train.loss": 1.0 / (step + 1)}, step=step, flush_every=0.5)
        step += 1
        time.sleep(0.05)
        r, hist = history()
        if hist:
            seen.append((r.info.status, len(hist)))
        if len({n for _, n in seen}) >= 2:  # the curve grew twice while running
            break
    assert len({n for _, n in seen}) >= 2, seen
    assert all(status == "RUNNING" for status, _ in seen), seen
    run.end("FINISHED")
    r, hist = history()
    assert r.info.status == "FINISHED" and len(hist) == step
    assert os.environ[_tracking.ENV_URI] == uri
