"""Progress: long jobs write readable lines (no carriage-return bars) and stream metrics to
MLflow while they run, so curves grow in the UI before the job ends."""

from __future__ import annotations

import os
import re
import subprocess
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
        output=[str(tmp_path / "model.pt")],
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


def test_run_name_puts_what_tells_runs_apart_first():
    wc = {"study": "fa", "dataset": "tiny@k=2", "model": "m", "seed": "0", "grid": "main"}
    assert _job.run_name("attack", wc) == "attack main/seed0/m/tiny@k=2 @fa"
    no_study = {"dataset": "d", "seed": "1"}
    assert _job.run_name("dataset", no_study) == f"dataset seed1/d @{_job.NO_STUDY}"
    assert _job.run_name("price_train", {"study": "p", "dataset": "r", "n": "16"}) == (
        "price_train n16/r @p"
    )
    assert _job.run_name("fa_figures", {"study": "fa"}) == "fa_figures - @fa"


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A fresh SQLite store with a parent run, exported to JobRuns as a workflow would."""
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp_id = client.create_experiment("collector", artifact_location=(tmp_path / "a").as_uri())
    parent = client.create_run(exp_id, run_name="workflow test")
    env = {
        _tracking.ENV_ENABLED: "1",
        _tracking.ENV_URI: uri,
        _tracking.ENV_EXPERIMENT: exp_id,
        _tracking.ENV_PARENT: parent.info.run_id,
        _tracking.ENV_SPOOL: str(tmp_path / "spool"),
    }
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return SimpleNamespace(client=client, exp_id=exp_id, parent=parent.info.run_id, uri=uri)


@pytest.mark.parametrize("via", ["collector", "process"])
def test_job_run_streams_metrics_while_the_job_runs(via, store, tmp_path, monkeypatch):
    """A JobRun flushes buffered metrics every ``flush_every`` seconds: they are in the store
    (as a UI would read them) while the run is still RUNNING - through the workflow's
    collector and through a job's own writer process alike."""
    client, exp_id, uri = store.client, store.exp_id, store.uri
    collector = _tracking.Collector(client, exp_id) if via == "collector" else None
    if collector is not None:
        monkeypatch.setenv(_tracking.ENV_COLLECTOR, collector.address)
    run = _tracking.JobRun(
        "p/train/x", {"ibrobust.rule": "train"}, {"a": 1}, str(tmp_path / "j.log")
    )
    assert run.via == via

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
    try:
        run.end("FINISHED")
    finally:
        if collector is not None:
            collector.close(60)  # the run received is in the store
    r, hist = history()
    assert r.info.status == "FINISHED" and len(hist) == step
    assert os.environ[_tracking.ENV_URI] == uri


def _runs(store, name):
    return store.client.search_runs([store.exp_id], f"attributes.run_name = '{name}'")


def test_collector_logs_whole_runs_for_parallel_jobs(store, tmp_path, monkeypatch):
    """Jobs stream to the workflow's collector (no MLflow import, no writer process):
    four concurrent runs each land once, complete, under the parent."""
    import threading

    collector = _tracking.Collector(store.client, store.exp_id)
    monkeypatch.setenv(_tracking.ENV_COLLECTOR, collector.address)
    art = tmp_path / "table.csv"
    art.write_text("a,b\n1,2\n")
    errors = []

    def job(i: int) -> None:
        try:
            run = _tracking.JobRun(f"p/train/x{i}", {"ibrobust.rule": "train"}, {"seed": i})
            assert run.via == "collector"
            for step in range(50):
                run.metrics({"train.loss": 1.0 / (step + 1), "train.acc": i}, step=step)
                if step % 10 == 0:
                    run.flush()
            run.artifact(art, "tables")
            run.end("FINISHED")
        except Exception as err:  # noqa: BLE001 - re-raised in the test thread
            errors.append(err)

    threads = [threading.Thread(target=job, args=(i,)) for i in range(4)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        collector.close(60)
    assert not errors, errors
    assert not os.path.exists(collector.address)
    for i in range(4):
        (r,) = _runs(store, f"p/train/x{i}")
        assert r.info.status == "FINISHED"
        assert r.data.tags["mlflow.parentRunId"] == store.parent
        assert r.data.params == {"seed": str(i)}
        hist = store.client.get_metric_history(r.info.run_id, "train.loss")
        assert sorted(m.step for m in hist) == list(range(50))
        assert r.data.metrics["train.acc"] == i
        arts = [a.path for a in store.client.list_artifacts(r.info.run_id, "tables")]
        assert arts == ["tables/table.csv"]


def _final_status(store, name, timeout=60.0):
    """The run's status once it has left RUNNING (or RUNNING after ``timeout`` s)."""
    deadline = time.monotonic() + timeout
    while True:
        runs = _runs(store, name)
        if (runs and runs[0].info.status != "RUNNING") or time.monotonic() > deadline:
            return runs[0].info.status if runs else None
        time.sleep(0.1)


@pytest.fixture
def collector(store, monkeypatch):
    c = _tracking.Collector(store.client, store.exp_id)
    monkeypatch.setenv(_tracking.ENV_COLLECTOR, c.address)
    yield c
    c.close()


def test_collector_reports_a_failed_write_and_ends_that_run_failed(store, collector, tmp_path):
    """A write the store refuses (an artifact that does not exist) never fails the job: the
    run ends FAILED in the store and whole in one spool file that says why - the job's own,
    when the failure came before the run's end (the collector answers ``error``), else the
    collector's journal, kept after its receipt."""
    import json

    run = _tracking.JobRun("p/train/bad", {"ibrobust.rule": "train"}, {})
    run.artifact("/nonexistent/figure.png", "figures")
    spooled = run.end("FINISHED")
    if spooled is not None:
        assert run.problem.startswith("collector: error") and "figure.png" in run.problem
    assert _final_status(store, "p/train/bad") == "FAILED"
    (path,) = collector.close(30) or [spooled]
    header = json.loads(path.read_text().splitlines()[0])
    assert "figure.png" in header["problem"]
    assert list((tmp_path / "spool").glob("*.jsonl")) == [path]


def test_writer_process_reports_a_failed_write_in_the_job_log(store, tmp_path, monkeypatch):
    monkeypatch.setenv(_tracking.ENV_COLLECTOR, str(tmp_path / "gone.sock"))
    log = tmp_path / "job.log"
    run = _tracking.JobRun("p/train/bad", {"ibrobust.rule": "train"}, {}, str(log))
    assert run.via == "process"
    run.artifact("/nonexistent/figure.png", "figures")
    spooled = run.end("FINISHED")
    assert spooled is not None and spooled.is_file()
    assert run.problem == "writer exit code 1"
    assert "Traceback" in log.read_text() and "figure.png" in log.read_text()
    assert _final_status(store, "p/train/bad") == "FAILED"


def test_collector_drops_a_partial_last_line(store, collector):
    """A job killed in the middle of a write: the run ends KILLED, the fragment is not parsed."""
    import json
    import socket

    start = {"op": "start", "name": "p/train/cut", "tags": {}, "params": {}, "t": 0}
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(collector.address)
        sock.sendall((json.dumps(start) + '\n{"op": "metrics", "it').encode())
    assert _final_status(store, "p/train/cut") == "KILLED"


@pytest.mark.parametrize("via", ["collector", "process"])
def test_a_killed_job_leaves_its_run_killed(via, store, tmp_path, monkeypatch):
    """A job process that dies without end(): its collector connection or its writer's
    stdin closes, and the run ends KILLED instead of staying RUNNING."""
    collector = _tracking.Collector(store.client, store.exp_id) if via == "collector" else None
    address = collector.address if collector else str(tmp_path / "gone.sock")
    monkeypatch.setenv(_tracking.ENV_COLLECTOR, address)
    code = (
        f"import os, sys; sys.path.insert(0, {str(REPO / 'workflow_scripts')!r}); "
        "import _tracking; run = _tracking.JobRun('p/train/killed', {}, {}); "
        f"assert run.via == {via!r}; run.metrics({{'train.loss': 0.5}}); run.flush(); "
        "os._exit(9)"
    )
    try:
        assert subprocess.run([sys.executable, "-c", code], timeout=120).returncode == 9
        assert _final_status(store, "p/train/killed") == "KILLED"
    finally:
        if collector is not None:
            collector.close()


def test_job_run_without_a_reachable_collector_starts_its_own_writer(store, tmp_path, monkeypatch):
    """A SLURM job on another node cannot reach the collector's socket: it logs anyway."""
    monkeypatch.setenv(_tracking.ENV_COLLECTOR, str(tmp_path / "gone.sock"))
    run = _tracking.JobRun("p/train/far", {"ibrobust.rule": "train"}, {"a": 1}, None)
    assert run.via == "process"
    run.metrics({"train.loss": 0.25}, step=3)
    run.end("FINISHED")
    (r,) = _runs(store, "p/train/far")
    assert r.info.status == "FINISHED" and r.data.metrics["train.loss"] == 0.25
