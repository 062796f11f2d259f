"""Tracking for many machines: 8 parallel jobs against a fresh SQLite store (directly and
behind the run's own tracking server) and against PostgreSQL behind the server; the
server's lifecycle (stopped on success, failure, Ctrl-C and a killed snakemake); bad
server settings stop the run with the config key named."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
from ops_helpers import (
    SLOW_TRAIN_LOG,
    _server,
    free_port,
    max_running_jobs,
    postgres_server,
    record,
    server_uri_from_output,
    start_slow_run,
    wait_for_first_step,
    wait_until,
)
from smk_helpers import TINY, base_env, finished_rules, snakemake, write_yaml

pytestmark = pytest.mark.workflow

SEEDS = list(range(8))
RUN = "results/fa/tiny_clusters/two_layer_m2/gd_tiny/binary/seed{}"
# 8 independent data jobs, then 8 independent training jobs (each streaming train.loss)
TARGETS = [f"{RUN.format(s)}/model.pt" for s in SEEDS]
PAR8 = {"studies": {"fa": {"seeds": SEEDS}}}  # targets: the binary models only


def _overlay(tmp_path: Path, mlflow: dict) -> Path:
    return write_yaml(tmp_path / "par8.yaml", {**PAR8, "mlflow": mlflow})


def _max_overlap(intervals: list[tuple[int, int]]) -> int:
    events = sorted([(a, 1) for a, _ in intervals] + [(b, -1) for _, b in intervals])
    best = cur = 0
    for _, d in events:
        cur += d
        best = max(best, cur)
    return best


def _artifact(artifact_uri: str, results: Path, rel: str) -> Path:
    """The file behind a run's artifact: a file:// location, or (behind a server, proxied
    uploads: mlflow-artifacts:/<exp>/<run>/artifacts) the server's artifacts destination."""
    if artifact_uri.startswith("mlflow-artifacts:"):
        return results / "mlflow/artifacts" / artifact_uri.split(":", 1)[1].lstrip("/") / rel
    assert artifact_uri.startswith("file://"), artifact_uri
    return Path(artifact_uri[len("file://") :]) / rel


def _check_store(store_uri: str, run, results: Path) -> dict:
    """Runs logged == jobs run, none lost or duplicated, all under one parent, no errors."""
    from mlflow.tracking import MlflowClient

    ran = finished_rules(run)
    assert ran == Counter(dataset=8, train=8), run.describe()
    parallel = max_running_jobs(run.stderr)
    assert parallel == 8, f"at most {parallel} jobs ran at once"
    client = MlflowClient(tracking_uri=store_uri)
    exp = client.get_experiment_by_name("ibrobust")
    runs = client.search_runs([exp.experiment_id], max_results=1000)
    parents = [r for r in runs if r.data.tags.get("ibrobust.kind") == "workflow"]
    children = [r for r in runs if r.data.tags.get("ibrobust.kind") == "job"]
    assert len(parents) == 1 and len(parents) + len(children) == len(runs)
    parent = parents[0]
    assert parent.info.status == "FINISHED"
    assert Counter(r.data.tags["ibrobust.rule"] for r in children) == ran  # none lost
    names = [r.info.run_name for r in children]
    assert len(set(names)) == len(names), sorted(names)  # none duplicated
    for r in children:
        assert r.data.tags["mlflow.parentRunId"] == parent.info.run_id
        assert r.info.status == "FINISHED", r.info.run_name
        if r.data.tags["ibrobust.rule"] == "train":
            steps = {m.step for m in client.get_metric_history(r.info.run_id, "train.loss")}
            assert len(steps) >= 3, (r.info.run_name, steps)
            assert _artifact(r.info.artifact_uri, results, "train/history.csv").is_file()
    # zero errors: in snakemake's output, every job log and the server log
    assert "Error" not in run.output, run.describe()
    for log in (results / "logs").rglob("*.log"):
        text = log.read_text(errors="replace")
        for bad in ("Traceback", " ERROR ", "database is locked", '" 500'):
            assert bad not in text, f"{bad!r} in {log}:\n{text[-3000:]}"
    train = [r for r in children if r.data.tags["ibrobust.rule"] == "train"]
    overlap = _max_overlap([(r.info.start_time, r.info.end_time) for r in train])
    return {
        "jobs_run": sum(ran.values()),
        "runs_logged": len(children),
        "parent_runs": 1,
        "jobs_at_once": parallel,
        "train_bodies_overlapping": overlap,
    }


@pytest.mark.parametrize("store", ["sqlite-direct", "sqlite-server", "postgresql-server"])
def test_eight_parallel_jobs_log_every_run_once(store, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    env = base_env()
    if store == "postgresql-server":
        pytest.importorskip("psycopg2", reason='psycopg2 missing: pip install -e ".[cluster]"')
        ctx = postgres_server()
    else:
        from contextlib import nullcontext

        ctx = nullcontext("")
    with ctx as pg_uri:
        ml = {"server": {"start": store != "sqlite-direct", "backend_store_uri": pg_uri}}
        configs = (TINY, _overlay(tmp_path, ml))
        run = snakemake(work, "--cores", "8", *TARGETS, configfiles=configs, env=env, timeout=900)
        assert run.returncode == 0, run.describe()
        if store != "sqlite-direct":
            uri = server_uri_from_output(run.output)
            assert not _server.healthy(uri), f"the run's tracking server {uri} still answers"
            server_log = (work / "results/logs/mlflow_server.log").read_text()
            if pg_uri:
                assert "postgresql://postgres:***@" in server_log  # the password is masked
                assert "secret" not in server_log + run.output
        store_uri = pg_uri or f"sqlite:///{work / 'results/mlflow/mlflow.db'}"
        counts = _check_store(store_uri, run, work / "results")
    record(f"8 parallel jobs, {store}: {counts} in {run.seconds:.1f} s (--cores 8)")


def test_server_port_in_use_names_the_key(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        overlay = write_yaml(
            tmp_path / "o.yaml", {"mlflow": {"server": {"start": True, "port": port}}}
        )
        run = snakemake(work, "--cores", "1", TARGETS[0], configfiles=(TINY, overlay), timeout=300)
    assert run.returncode != 0
    assert f"config key mlflow.server.port: 127.0.0.1:{port} is already in use" in run.output, (
        run.describe()
    )
    assert not (work / RUN.format(0)).exists()  # nothing ran


def test_unreachable_backend_store_names_the_key(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    uri = f"postgresql://ibrobust:hunter2@127.0.0.1:{free_port()}/mlflow"  # nothing listens
    overlay = write_yaml(
        tmp_path / "o.yaml", {"mlflow": {"server": {"start": True, "backend_store_uri": uri}}}
    )
    run = snakemake(work, "--cores", "1", TARGETS[0], configfiles=(TINY, overlay), timeout=300)
    assert run.returncode != 0
    assert "config key mlflow.server.backend_store_uri: cannot connect to" in run.output, (
        run.describe()
    )
    assert "postgresql://ibrobust:***@127.0.0.1" in run.output
    assert "hunter2" not in run.output


def _terminal_sigint() -> None:
    """In the child, before exec: SIGINT as a terminal's foreground job has it. A test run
    started in the background of a non-interactive shell (``cmd &``, as CI harnesses and
    ``nohup`` loops do) inherits SIGINT *ignored*; an ignored signal stays ignored across
    exec, Python then never raises KeyboardInterrupt, and snakemake and its jobs sleep
    through the test's Ctrl-C (the hang of issue 17: no "Terminating processes" line,
    the job trains on, timeout after 180 s)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("how", ["job-fails", "ctrl-c", "kill-9"])
def test_server_stopped_when_the_run_fails_or_is_interrupted(how, tmp_path):
    """job-fails: the training job's process dies (onerror); ctrl-c: SIGINT to snakemake;
    kill-9: snakemake is killed outright (only the supervisor can clean up)."""
    from mlflow.tracking import MlflowClient

    work = tmp_path / "work"
    work.mkdir()
    proc, out, err = start_slow_run(
        work,
        TARGETS[:1],
        cores=1,
        config={"mlflow": {"server": {"start": True}}},
        preexec_fn=_terminal_sigint,
    )
    log = work / SLOW_TRAIN_LOG.format(0)
    try:
        wait_for_first_step(proc, [log], 300, err)
        uri = server_uri_from_output(out.read_text() + err.read_text())
        assert _server.healthy(uri)
        if how == "job-fails":  # the job's python (in our snakemake's process group)
            pids = subprocess.run(
                ["pgrep", "-g", str(proc.pid), "-f", r"scripts/tmp.*train\.py"],
                capture_output=True,
                text=True,
            ).stdout.split()
            assert pids, "the training job's process was not found"
            for pid in pids:
                os.kill(int(pid), signal.SIGKILL)
        elif how == "ctrl-c":  # a terminal's Ctrl-C: SIGINT to the foreground group
            os.killpg(proc.pid, signal.SIGINT)  # (snakemake + jobs; the server has its own)
        else:  # kill -9 of snakemake alone: no handler of it runs
            os.kill(proc.pid, signal.SIGKILL)
        t0 = time.monotonic()
        proc.wait(timeout=180)  # a hang's bound; the time it took is recorded below
        ended = time.monotonic() - t0
        assert proc.returncode != 0
        wait_until(lambda: not _server.healthy(uri), 60, f"the server {uri} to stop")
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the test's own snakemake group (jobs)
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)
    # nothing of the server's process group is left (its supervisor included)
    port = uri.rsplit(":", 1)[1]

    def server_processes() -> list[str]:
        pattern = f"--port {port}( |$)"
        res = subprocess.run(["pgrep", "-f", "--", pattern], capture_output=True, text=True)
        return res.stdout.split()

    wait_until(lambda: not server_processes(), 30, f"the server's processes (port {port}) to end")
    record(f"server run, {how}: snakemake exited {ended:.1f} s after it (load {_load()})")
    if how != "kill-9":  # the runs are ended (a killed run's are ended by the next one)
        client = MlflowClient(tracking_uri=f"sqlite:///{work / 'results/mlflow/mlflow.db'}")
        exp = client.get_experiment_by_name("ibrobust")
        runs = client.search_runs([exp.experiment_id])
        kinds = {r.data.tags["ibrobust.kind"]: r.info.status for r in runs}
        # a failed job ends the parent run FAILED; a stop by a signal ends it KILLED
        assert kinds["workflow"] == ("KILLED" if how == "ctrl-c" else "FAILED"), kinds
        running = [r.info.run_name for r in runs if r.info.status == "RUNNING"]
        assert not running, running


def _load() -> str:
    return " ".join(f"{v:.1f}" for v in os.getloadavg())
