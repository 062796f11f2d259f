"""Progress: long jobs write readable lines (no carriage-return bars), and their metrics
reach MLflow while they run (the run record, synced by the Snakemake process), so curves
grow in the UI before the job ends."""

from __future__ import annotations

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


def _fake_job(tmp_path, monkeypatch, tracked: bool = False):
    log = tmp_path / "results/logs/train/job.log"  # where the sync looks for run records
    log.parent.mkdir(parents=True, exist_ok=True)
    if not tracked:
        monkeypatch.delenv(_tracking.ENV_PARENT, raising=False)
    smk = SimpleNamespace(
        rule="train",
        wildcards={"study": "fa", "dataset": "d", "seed": "3"},
        threads=1,
        log=[str(log)],
        output=[str(tmp_path / "model.pt")],
        params=SimpleNamespace(items=lambda: [("code", "x")], get=lambda k, d=None: "x"),
    )
    return _job.Job(smk), log


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
    assert job.run is None  # tracking off: progress still logs


def test_run_name_puts_what_tells_runs_apart_first():
    wc = {"study": "fa", "dataset": "tiny@k=2", "model": "m", "seed": "0", "grid": "main"}
    assert _job.run_name("attack", wc) == "attack main/seed0/m/tiny@k=2 @fa"
    no_study = {"dataset": "d", "seed": "1"}
    assert _job.run_name("dataset", no_study) == f"dataset seed1/d @{_job.NO_STUDY}"
    assert _job.run_name("price_train", {"study": "p", "dataset": "r", "n": "16"}) == (
        "price_train n16/r @p"
    )
    assert _job.run_name("fa_figures", {"study": "fa"}) == "fa_figures - @fa"


def test_a_jobs_curve_reaches_the_store_while_it_runs(tmp_path, monkeypatch):
    """A Job's metrics go to its run record; the Snakemake process's sync thread makes them
    a RUNNING run's history before the job ends, then the whole run once it has."""
    from _tracking import sync

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sync, "PERIOD", 0.1)
    parent = _tracking.RunRecord("results/logs/workflow/p.mlflow.jsonl", "workflow t", {}, {})
    monkeypatch.setenv(_tracking.ENV_PARENT, parent.id)
    target = sync.Target(f"sqlite:///{tmp_path / 'mlflow.db'}", "ibrobust", str(tmp_path / "a"))
    syncer = sync.Syncer(target, parent.id, tmp_path)
    job, log = _fake_job(tmp_path, monkeypatch, tracked=True)
    with job:
        for step in range(3):
            job.metrics({"train.loss": 1.0 / (step + 1)}, step=step)
        job.run.flush()
        deadline = time.monotonic() + 120  # a liveness bound on a busy machine, not a goal
        while time.monotonic() < deadline:
            store = syncer.store
            found = store and store.client.search_runs(
                [store.experiment_id], "tags.`ibrobust.rule` = 'train'"
            )
            if found and "train.loss" in found[0].data.metrics:
                break
            time.sleep(0.2)
        (live,) = found
        assert live.info.status == "RUNNING"
        curve = store.client.get_metric_history(live.info.run_id, "train.loss")
        assert [m.step for m in curve] == [0, 1, 2]
    parent.end("FINISHED")
    assert syncer.finish(60).error is None
    run = syncer.store.client.get_run(live.info.run_id)
    assert run.info.status == "FINISHED" and "job.cpu_s" in run.data.metrics
    assert "mlflow=record" in log.read_text()
