"""workflow_scripts/_lifecycle.py on real processes: which invocation is alive, stale
Snakemake locks, a job's watch on its snakemake, a dead invocation's MLflow runs."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "workflow_scripts"
sys.path.insert(0, str(SCRIPTS))
import _lifecycle  # noqa: E402
from _lifecycle import Invocation  # noqa: E402

LOCKS = Path(".snakemake/locks")


def _dead_pid() -> int:
    """The pid of a process that ran and was reaped."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _workflow(locks: dict[str, str]) -> SimpleNamespace:
    """What ``record`` reads of Snakemake's workflow: the file backend's lock files."""
    return SimpleNamespace(persistence=SimpleNamespace(_lockfile=locks))


def _run_record(cwd: Path, locks: dict[str, str]) -> Invocation:
    """A real process records itself holding ``locks`` (as at onstart), then exits."""
    code = (
        "import sys, types; sys.path.insert(0, sys.argv[1]); import _lifecycle; "
        "wf = types.SimpleNamespace(persistence=types.SimpleNamespace(_lockfile="
        f"{locks!r})); print(_lifecycle.record(wf).token())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(SCRIPTS)], cwd=cwd, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    return Invocation.parse(out.stdout.strip())


def test_this_process_is_alive_and_its_token_round_trips():
    me = Invocation.current()
    assert me.pid == os.getpid() and me.host == socket.gethostname()
    assert Invocation.parse(me.token()) == me
    assert me.alive()


def test_dead_zombie_reused_and_foreign_invocations():
    host = socket.gethostname()
    assert not Invocation(host, _dead_pid(), "").alive()
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 60
    while Path(f"/proc/{zombie.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
        assert time.monotonic() < deadline, "the child never exited"
        time.sleep(0.05)
    assert not Invocation(host, zombie.pid, "").alive()  # exited, not yet reaped
    zombie.wait()
    me = Invocation.current()
    assert not Invocation(host, me.pid, str(int(me.start) + 1)).alive()  # pid reused
    assert Invocation("another-host", _dead_pid(), "1").alive()  # cannot tell: kept


def test_stale_locks_of_a_dead_invocation_go_others_stay(tmp_path, capsys):
    (tmp_path / LOCKS).mkdir(parents=True)
    for name in ("0.input.lock", "0.output.lock", "1.input.lock", "2.input.lock"):
        (tmp_path / LOCKS / name).write_text("results/x\n")
    dead = _run_record(
        tmp_path,
        {"input": str(LOCKS / "0.input.lock"), "output": str(LOCKS / "0.output.lock")},
    )
    # a dead invocation whose lock file name was since reused by another invocation
    reused = _run_record(tmp_path, {"input": str(LOCKS / "2.input.lock")})
    (tmp_path / LOCKS / "2.input.lock").unlink()
    (tmp_path / LOCKS / "2.input.lock").write_text("results/y\n")
    # a live one (this process) holding 1.input.lock
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        _lifecycle.record(_workflow({"input": str(LOCKS / "1.input.lock")}))
    finally:
        os.chdir(cwd)
    capsys.readouterr()

    removed = _lifecycle.clear_stale_locks(tmp_path)

    assert sorted(removed) == [str(LOCKS / "0.input.lock"), str(LOCKS / "0.output.lock")]
    assert sorted(p.name for p in (tmp_path / LOCKS).iterdir()) == ["1.input.lock", "2.input.lock"]
    err = capsys.readouterr().err
    assert f"dead invocation ({dead.describe()}" in err and "no --unlock needed" in err
    records = sorted(p.name for p in (tmp_path / _lifecycle.RECORDS).iterdir())
    assert records == [f"{Invocation.current().host}-{os.getpid()}.json"]  # the live one
    assert reused.pid != os.getpid()
    _lifecycle.forget(tmp_path)
    assert not list((tmp_path / _lifecycle.RECORDS).iterdir())


def test_a_job_ends_when_its_snakemake_is_gone():
    parent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    token = Invocation(socket.gethostname(), parent.pid, _lifecycle._process_start(parent.pid))
    job_code = (
        "import sys, time; sys.path.insert(0, sys.argv[1]); import _lifecycle; "
        "assert _lifecycle.watch_invocation(interval=0.1) is not None; "
        "print('watching', flush=True); time.sleep(600)"
    )
    job = subprocess.Popen(
        [sys.executable, "-c", job_code, str(SCRIPTS)],
        env={**os.environ, _lifecycle.ENV_INVOCATION: token.token()},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert job.stdout.readline().strip() == "watching"
        time.sleep(0.5)
        assert job.poll() is None  # its snakemake runs: the job goes on
        parent.kill()
        parent.wait()
        job.wait(timeout=60)  # a liveness bound, not a speed goal
        assert job.returncode == -signal.SIGTERM
        assert (
            f"the snakemake process of this job ({token.describe()}) is gone" in job.stderr.read()
        )
    finally:
        for p in (parent, job):
            if p.poll() is None:
                p.kill()
                p.wait()


def test_no_watch_without_an_invocation_or_on_another_host(monkeypatch):
    monkeypatch.delenv(_lifecycle.ENV_INVOCATION, raising=False)
    assert _lifecycle.watch_invocation() is None
    monkeypatch.setenv(_lifecycle.ENV_INVOCATION, "another-host:1:1")
    assert _lifecycle.watch_invocation() is None


def test_orphaned_parent_runs_of_dead_invocations_end_killed(tmp_path, capsys):
    pytest.importorskip("mlflow")
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp = client.create_experiment("ibrobust", artifact_location=(tmp_path / "a").as_uri())
    dead = Invocation(socket.gethostname(), _dead_pid(), "")
    workflow = {"ibrobust.kind": "workflow"}

    def run(tags, parent=None):
        tags = dict(tags, **({"mlflow.parentRunId": parent} if parent else {}))
        return client.create_run(exp, tags=tags).info.run_id

    orphan = run({**workflow, **_lifecycle.run_tags(dead)})
    orphan_running = run({"ibrobust.kind": "job"}, orphan)
    orphan_done = run({"ibrobust.kind": "job"}, orphan)
    client.set_terminated(orphan_done, "FINISHED")
    live = run({**workflow, **_lifecycle.run_tags()})  # this process: alive
    live_job = run({"ibrobust.kind": "job"}, live)
    foreign = run({**workflow, **_lifecycle.run_tags(Invocation("elsewhere", dead.pid, ""))})
    untagged = run(workflow)  # an older version's parent run: its invocation is unknown

    assert _lifecycle.close_orphaned_runs(client, exp) == [orphan]

    def status(run_id):
        return client.get_run(run_id).info.status

    assert status(orphan) == status(orphan_running) == "KILLED"
    assert status(orphan_done) == "FINISHED"
    assert {status(r) for r in (live, live_job, foreign, untagged)} == {"RUNNING"}
    err = capsys.readouterr().err
    assert f"({orphan}) of a dead invocation ({dead.describe()}) as KILLED" in err
    assert "with 1 job run(s)" in err
    assert _lifecycle.close_orphaned_runs(client, exp) == []  # idempotent


def test_bounded_returns_on_time_and_reports(capsys):
    assert _lifecycle.bounded(5, "quick step", lambda: None)
    t0 = time.monotonic()
    assert not _lifecycle.bounded(0.2, "slow step", time.sleep, 30)
    assert time.monotonic() - t0 < 10
    assert not _lifecycle.bounded(5, "failing step", json.loads, "{")
    err = capsys.readouterr().err
    assert "slow step did not finish within 0.2 s" in err
    assert "failing step failed: JSONDecodeError" in err


@pytest.mark.parametrize(
    ("argv", "runs"),
    [
        (["--cores", "2", "reproduce"], True),
        (["--cores", "1", "--config", "data_root=x"], True),
        (["-n"], False),
        (["--dry-run", "--cores", "2"], False),
        (["--lint"], False),
        (["--report", "report.html"], False),
        (["--unlock"], False),
        (["--summary"], False),
        (["--dag"], False),
    ],
)
def test_only_a_command_that_runs_jobs_clears_stale_locks(argv, runs):
    """rules/common.smk clears a dead invocation's locks at parse time only for a command
    line that may run jobs (Snakemake's own parser reads it)."""
    assert _lifecycle.command_runs_jobs(argv) is runs
