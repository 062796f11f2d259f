"""Run records -> MLflow runs (workflow_scripts/_tracking/record.py and sync.py).

A job's record (params, metrics with steps, tags, artifacts, its model, dataset inputs) and
an invocation's parent record, synced into a fresh SQLite store: the runs hold what the
records say; syncing again adds nothing; a sync cut off and resumed, or one of a record
that still grows, leaves every metric value once; a record whose writer is gone ends
KILLED; a running invocation's records are left to it; one run per run key; secrets
masked; a store that cannot be written is reported, never raised; a full disk stops a
record, not its writer.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "workflow_scripts"))

from _tracking import sync as S  # noqa: E402
from _tracking.record import RunRecord, process_start, run_key  # noqa: E402

pytest.importorskip("mlflow")


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    return tmp_path


def target(work: Path) -> S.Target:
    return S.Target(f"sqlite:///{work / 'store' / 'mlflow.db'}", "ibrobust", str(work / "art"), 1.0)


def parent_record(work: Path) -> RunRecord:
    tags = {"ibrobust.kind": "workflow", "mlflow.source.git.commit": "abc",
            "ibrobust.config_hash": "cfg"}  # fmt: skip
    return RunRecord(work / "results/logs/workflow/p.mlflow.jsonl", "workflow fa (all) t", tags,
                     {"studies": "fa"})  # fmt: skip


def job_record(work: Path, parent: str | None, name: str = "train seed0 @fa", key: str = "k1"):
    tags = {"ibrobust.kind": "job", "ibrobust.rule": "train", "ibrobust.run_key": key}
    params = {"optimizer.lr": 0.5, "uri": "postgresql://me:Pl4nted@db/x"}
    return RunRecord(work / f"results/logs/train/{name.split()[1]}.log.mlflow.jsonl", name,
                     tags, params, parent)  # fmt: skip


def exited(record: RunRecord) -> None:
    """The record as its writer left it when it exited (a process that is gone)."""
    lines = record.path.read_text().splitlines()
    start = json.loads(lines[0])
    start["pid"] = dead_pid()
    record.path.write_text("\n".join([json.dumps(start), *lines[1:]]) + "\n")


def runs(t: S.Target) -> dict:
    store = S.Store(t)
    found = store.client.search_runs([store.experiment_id])
    return {r.info.run_name: r for r in found}


def history(t: S.Target, run, key: str) -> list[tuple[int, float]]:
    client = S.Store(t).client
    return [(m.step, m.value) for m in client.get_metric_history(run.info.run_id, key)]


def test_a_job_and_its_parent_become_runs_with_everything_recorded(work):
    data = work / "results/datasets/tiny/seed0/data.npz"
    data.parent.mkdir(parents=True)
    data.write_bytes(b"x" * 100)
    model, table = work / "model.pt", work / "history.csv"
    model.write_bytes(b"m" * 1000)
    table.write_text("epoch,loss\n0,1\n")
    parent = parent_record(work)
    job = job_record(work, parent.id)
    job.input(data, "training")
    for step in (0, 50, 100):
        job.metrics({"train.loss": 1.0 / (1 + step)}, step=step)
    job.model(model)
    job.artifact(table, "train")
    job.tags({"late": "tag"})
    job.end("FINISHED")
    parent.end("FINISHED")
    exited(parent)
    t = target(work)
    report = S.sync(t, S.record_files())
    assert report.error is None and len(report.complete) == 2 and report.summary() is None
    got = runs(t)
    p, r = got["workflow fa (all) t"], got["train seed0 @fa"]
    assert r.data.tags["mlflow.parentRunId"] == p.info.run_id
    assert r.data.tags["mlflow.source.git.commit"] == "abc"  # from the parent run
    assert r.data.tags["ibrobust.config_hash"] == "cfg" and r.data.tags["late"] == "tag"
    assert r.data.params == {"optimizer.lr": "0.5", "uri": "postgresql://me:***@db/x"}
    assert history(t, r, "train.loss") == [(0, 1.0), (50, 1 / 51), (100, 1 / 101)]
    assert {p.info.status, r.info.status} == {"FINISHED"}
    assert r.data.tags["ibrobust.model_path"] == "model.pt"
    assert r.data.tags["ibrobust.model_artifact"] == "model/model.pt"
    client = S.Store(t).client
    arts = {a.path for d in ("model", "train") for a in client.list_artifacts(r.info.run_id, d)}
    assert arts == {"model/model.pt", "train/history.csv"}
    (inp,) = client.get_run(r.info.run_id).inputs.dataset_inputs
    assert inp.dataset.name == "tiny/seed0" and len(inp.dataset.digest) == 16
    assert [e.name for e in client.search_experiments()] == ["ibrobust"]
    assert "Pl4nted" not in job.path.read_text()  # masked in the record already


def test_syncing_again_adds_nothing_and_a_growing_record_is_logged_once(work):
    parent = parent_record(work)
    job = job_record(work, parent.id)
    job.metrics({"loss": 3.0}, step=0)
    job.flush()
    t = target(work)
    live = S.sync(t, S.record_files(), own=parent.id)  # both records still being written
    assert live.error is None and len(live.pending) == 2 and live.complete == []
    (r,) = [x for x in runs(t).values() if x.data.tags["ibrobust.kind"] == "job"]
    assert r.info.status == "RUNNING" and history(t, r, "loss") == [(0, 3.0)]
    for step in (1, 2):
        job.metrics({"loss": 3.0 - step}, step=step)
    job.end("FINISHED")
    # a partial line (a writer cut off mid-write) is not read
    with job.path.open("a") as fh:
        fh.write('{"op": "metrics", "items": [["loss", 9')
    parent.end("FINISHED")
    for _ in range(2):
        report = S.sync(t, S.record_files(), own=parent.id)
        assert report.error is None
    r = runs(t)["train seed0 @fa"]
    assert history(t, r, "loss") == [(0, 3.0), (1, 2.0), (2, 1.0)]
    assert r.info.status == "FINISHED"
    lines = job.path.read_text().count("\n")
    assert r.data.tags[S.LINES_TAG] == str(lines)


def test_a_sync_cut_off_between_batches_resumes_without_duplicates(work, monkeypatch):
    parent = parent_record(work)
    job = job_record(work, parent.id)
    for step in range(6):
        job.metrics({"loss": float(step)}, step=step)
        job.flush()
    job.end("FINISHED")
    parent.end("FINISHED")
    exited(parent)
    t = target(work)
    monkeypatch.setattr(S, "MAX_BATCH", 1)  # one metric line per store batch
    real, calls = S.Store.sync_file, []

    def cut(self, lines, abandoned):  # the store fails after the first 3 batches
        log_batch = self.client.log_batch

        def failing(*a, **k):
            calls.append(1)
            if len(calls) > 3 + 1:  # + the parent's
                raise RuntimeError("database is down")
            return log_batch(*a, **k)

        self.client.log_batch = failing
        try:
            return real(self, lines, abandoned)
        finally:
            self.client.log_batch = log_batch

    monkeypatch.setattr(S.Store, "sync_file", cut)
    report = S.sync(t, S.record_files())
    assert report.error and report.pending
    monkeypatch.setattr(S.Store, "sync_file", real)
    assert S.sync(t, S.record_files()).error is None
    r = runs(t)["train seed0 @fa"]
    assert history(t, r, "loss") == [(s, float(s)) for s in range(6)]


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_record_whose_writer_is_gone_ends_killed(work):
    parent = parent_record(work)
    job = job_record(work, parent.id)
    job.metrics({"loss": 1.0})
    job.flush()
    lines = job.path.read_text().splitlines()
    start = json.loads(lines[0])
    start["pid"] = dead_pid()  # the job was killed with -9
    job.path.write_text("\n".join([json.dumps(start), *lines[1:]]) + "\n")
    t = target(work)
    S.sync(t, S.record_files(), own=parent.id)
    assert runs(t)["train seed0 @fa"].info.status == "KILLED"
    # at the end of its invocation, a record without end is KILLED too (its job is over)
    other = job_record(work, parent.id, "attack seed1 @fa", key="k2")
    other.metrics({"acc": 0.5})
    other.flush()
    parent.end("FAILED")
    S.sync(t, S.record_files(), own=parent.id, final=True)
    got = runs(t)
    assert got["attack seed1 @fa"].info.status == "KILLED"
    assert got["workflow fa (all) t"].info.status == "FAILED"


def test_a_running_invocations_records_are_left_to_it(work):
    parent = parent_record(work)  # written by this live process: a running invocation
    job = job_record(work, parent.id)
    job.end("FINISHED")
    t = target(work)
    report = S.sync(t, S.record_files())  # `ibrobust sync` while it runs: own=None
    assert report.complete == [] and report.pending == []
    assert S.Store(t).find(parent.id) is None
    parent.end("FINISHED")  # its last sync may still run: still left to it
    assert S.sync(t, S.record_files()).complete == []
    exited(parent)
    assert len(S.sync(t, S.record_files()).complete) == 2


def test_one_run_per_run_key_the_newest_finished(work):
    parent = parent_record(work)
    first = job_record(work, parent.id, "train seed0 @fa")
    first.end("FAILED")
    t = target(work)
    S.sync(t, S.record_files(), own=parent.id)
    second = job_record(work, parent.id, "train seed0 @fa")  # the rerun: a new attempt
    second.end("FINISHED")
    parent.end("FINISHED")
    S.sync(t, S.record_files(), own=parent.id)
    (r,) = [x for x in runs(t).values() if x.data.tags["ibrobust.kind"] == "job"]
    assert r.data.tags[S.RECORD_ID_TAG] == second.id and r.info.status == "FINISHED"
    assert run_key(["b", "a"], "h") == run_key(["a", "b"], "h") != run_key(["a"], "h")


def test_a_store_that_cannot_be_written_is_reported_not_raised(work):
    parent = parent_record(work)
    parent.end("FINISHED")
    exited(parent)
    t = S.Target("sqlite:////proc/no/such/dir/mlflow.db")
    report = S.sync(t, S.record_files())
    assert report.error and report.pending == [parent.path.relative_to(work)]
    line = report.summary()
    assert line.startswith("ibrobust: MLflow: 1 run(s) not yet in the store (")
    assert line.endswith(f"sync them with: {S.COMMAND}")


def test_a_full_disk_stops_the_record_not_its_writer(work):
    rec = RunRecord("/dev/full", "train x @fa", {}, {"a": 1})
    rec.metrics({"loss": 1.0})
    rec.end("FINISHED")
    assert rec.problem and "No space left" in rec.problem


def test_the_sync_thread_makes_the_runs_while_the_records_grow(work, monkeypatch):
    monkeypatch.setattr(S, "PERIOD", 0.05)
    parent = parent_record(work)
    syncer = S.Syncer(target(work), parent.id, work)
    job = job_record(work, parent.id)
    job.metrics({"loss": 1.0}, step=0)
    job.end("FINISHED")
    parent.end("FINISHED")
    report = syncer.finish(60)
    assert report.error is None and len(report.complete) == 2
    assert runs(target(work))["train seed0 @fa"].info.status == "FINISHED"
    assert not syncer.thread.is_alive() or syncer.stop.is_set()


def test_the_sync_command_syncs_what_the_store_lacks(work):
    parent = parent_record(work)
    job_record(work, parent.id).end("FINISHED")
    parent.end("FINISHED")
    exited(parent)
    uri = target(work).uri
    script = Path(S.__file__)
    out = subprocess.run([sys.executable, str(script), "--tracking-uri", uri],
                         capture_output=True, text=True, cwd=work)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"ibrobust sync: 2 run(s) in {uri}, 0 not"
    again = subprocess.run([sys.executable, str(script), "--tracking-uri", uri],
                           capture_output=True, text=True, cwd=work)  # fmt: skip
    assert again.stdout == out.stdout and len(runs(target(work))) == 2


def test_two_invocations_at_once_keep_their_runs_apart(work):
    """Two invocations write records into one results/logs (disjoint jobs) and sync into one
    store: each sync makes its own invocation's runs only, each job under its own parent."""
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        mine = parent_record(work)
        theirs = RunRecord(work / "results/logs/workflow/q.mlflow.jsonl", "workflow other", {}, {})
        start = json.loads(theirs.path.read_text())  # as written by that other process
        start.update(pid=other.pid, pstart=process_start(other.pid))
        theirs.path.write_text(json.dumps(start) + "\n")
        job_record(work, mine.id, "train seed0 @fa", key="a").end("FINISHED")
        job_record(work, theirs.id, "train seed1 @fa", key="b").end("FINISHED")
        t = target(work)
        assert S.sync(t, S.record_files(), own=mine.id).error is None
        got = runs(t)
        assert sorted(got) == ["train seed0 @fa", "workflow fa (all) t"]
        assert got["train seed0 @fa"].data.tags["mlflow.parentRunId"] == (
            got["workflow fa (all) t"].info.run_id
        )
        assert S.sync(t, S.record_files(), own=theirs.id).error is None
        store = S.Store(t)
        seed1 = store.client.search_runs(
            [store.experiment_id], "attributes.run_name = 'train seed1 @fa'"
        )
        (their_parent,) = store.client.search_runs(
            [store.experiment_id], f"tags.`{S.RECORD_ID_TAG}` = '{theirs.id}'"
        )
        assert [r.data.tags["mlflow.parentRunId"] for r in seed1] == [their_parent.info.run_id]
    finally:
        other.kill()
        other.wait()
