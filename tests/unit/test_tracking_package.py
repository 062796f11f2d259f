"""The tracking package without Snakemake: secret masking, the run key, the job-side client
(spooling when no writer takes its run), the collector's receipt (a job's end waits for its
run on disk, not for the store, and a run not yet in the store stays journaled), the
collector on a real SQLite store, and the replay of spooled runs (idempotent, one run per
run key)."""

from __future__ import annotations

import http.server
import json
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "workflow_scripts"
sys.path.insert(0, str(SCRIPTS))
import _tracking  # noqa: E402
from _tracking import collector as collector_mod  # noqa: E402
from _tracking import replay as replay_mod  # noqa: E402
from _tracking.masking import mask_secrets, mask_value  # noqa: E402

SECRET = "s3cr3t-Pa55"


# ---- masking ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("postgresql://mlflow:s3cr3t@db:5432/x", "postgresql://mlflow:***@db:5432/x"),
        ("postgresql+psycopg2://u:p@h/db", "postgresql+psycopg2://u:***@h/db"),
        ("https://user:tok@example.org/api", "https://user:***@example.org/api"),
        (
            "postgresql://h/db?user=u&password=pw&sslmode=require",
            "postgresql://h/db?user=u&password=***&sslmode=require",
        ),
        ("MLFLOW_TRACKING_PASSWORD=pw mlflow ui", "MLFLOW_TRACKING_PASSWORD=*** mlflow ui"),
        (
            "store postgresql://a:b@h/d and mysql://c:d@h/e",
            "store postgresql://a:***@h/d and mysql://c:***@h/e",
        ),
        ("api_key=abc,token=def", "api_key=***,token=***"),
        # an '@' inside the password: the password runs to the last '@' before the host
        ("postgresql://u:p@ss@h:5432/db", "postgresql://u:***@h:5432/db"),
        ("password: hunter2 more", "password: *** more"),  # YAML in free text
        ("{'password': 'hunter2', 'n': 1}", "{'password': '***', 'n': 1}"),  # a dict's repr
        (
            "API request to https://u:pw@h/api/2.0 failed",
            "API request to https://u:***@h/api/2.0 failed",
        ),
    ],
)
def test_mask_secrets_hides_passwords(text, masked):
    assert mask_secrets(text) == masked


@pytest.mark.parametrize(
    "text",
    [
        "http://127.0.0.1:5000/#/experiments/1/runs",  # host:port is no credential
        "sqlite:///results/mlflow/mlflow.db",
        "user@example.org",
        "fa/train/tiny_clusters/two_layer_m2/gd_tiny/binary/seed0",
        "lr=0.01 steps=20",
    ],
)
def test_mask_secrets_leaves_other_text_alone(text):
    assert mask_secrets(text) == text


def test_mask_value_walks_a_config():
    config = {
        "mlflow": {"server": {"backend_store_uri": f"postgresql://u:{SECRET}@h/db", "port": 0}},
        "db": {"password": SECRET, "token": ""},
        "uris": [f"http://a:{SECRET}@h"],
        "lr": 0.5,
    }
    masked = mask_value(config)
    assert SECRET not in json.dumps(masked)
    assert masked["mlflow"]["server"] == {"backend_store_uri": "postgresql://u:***@h/db", "port": 0}
    assert masked["db"] == {"password": "***", "token": ""}  # nothing to hide in ""
    assert masked["lr"] == 0.5 and config["db"]["password"] == SECRET  # input untouched


# ---- run key ------------------------------------------------------------------------------
def test_run_key_is_outputs_and_code():
    key = _tracking.run_key(["b/model.pt", "a/history.csv"], "c0de")
    assert key == _tracking.run_key(["a/history.csv", "b/model.pt"], "c0de")  # order-free
    assert key != _tracking.run_key(["a/history.csv", "b/model.pt"], "c0de2")
    assert key != _tracking.run_key(["a/history.csv"], "c0de")
    assert len(key) == 20 and int(key, 16) >= 0


# ---- the client (no MLflow) -----------------------------------------------------------------
def test_client_imports_no_mlflow():
    code = (
        f"import sys; sys.path.insert(0, {str(SCRIPTS)!r}); import _tracking; "
        "from _tracking import client; print('mlflow' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.fixture
def job_env(tmp_path, monkeypatch):
    """The environment a workflow exports to its jobs (no store: the tests give writers)."""
    env = {
        _tracking.ENV_ENABLED: "1",
        _tracking.ENV_URI: f"postgresql://u:{SECRET}@127.0.0.1:9/db",
        _tracking.ENV_EXPERIMENT: "7",
        _tracking.ENV_PARENT: "parent123",
        _tracking.ENV_SPOOL: str(tmp_path / "spool"),
        _tracking.ENV_TIMEOUT: "1",
    }
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv(_tracking.ENV_COLLECTOR, raising=False)
    return SimpleNamespace(spool=tmp_path / "spool")


class FakeCollector:
    """A Unix socket that accepts one job and then answers ``reply`` (None: never reads nor
    answers, like a collector that is stuck)."""

    def __init__(self, path: Path, reply: bytes | None):
        self.address = str(path)
        self.received = b""
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(self.address)
        self._sock.listen(1)
        self._reply = reply
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        conn, _ = self._sock.accept()
        self._conn = conn  # kept open
        if self._reply is None:
            return
        while chunk := conn.recv(65536):
            self.received += chunk
        conn.sendall(self._reply)

    def close(self) -> None:
        self._sock.close()


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_tracking_off_is_a_no_op(monkeypatch):
    monkeypatch.setenv(_tracking.ENV_ENABLED, "0")
    run = _tracking.JobRun("a/b", {"t": "1"}, {"p": 1})
    run.metrics({"m": 1.0})
    assert run.via == "off" and run.end("FINISHED") is None


def test_a_confirmed_run_is_not_spooled(job_env, tmp_path):
    fake = FakeCollector(tmp_path / "ok.sock", b"received\n")
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv(_tracking.ENV_COLLECTOR, fake.address)
            run = _tracking.JobRun("s/train/x", {"ibrobust.rule": "train"}, {"lr": 0.1}, None, "k1")
            assert run.via == "collector"
            run.metrics({"train.loss": 0.5}, step=3)
            assert run.end("FINISHED") is None and run.problem is None
    finally:
        fake.close()
    sent = [json.loads(line) for line in fake.received.decode().splitlines()]
    assert [m["op"] for m in sent] == ["start", "metrics", "end"]
    assert sent[0]["tags"][_tracking.RUN_KEY_TAG] == "k1"
    assert sent[0]["tags"]["mlflow.parentRunId"] == "parent123"
    assert sent[1]["items"] == [["train.loss", 0.5, sent[1]["items"][0][2], 3]]
    assert not job_env.spool.exists()


def test_a_stuck_collector_costs_the_timeout_and_the_run_is_spooled(job_env, tmp_path):
    fake = FakeCollector(tmp_path / "stuck.sock", None)
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv(_tracking.ENV_COLLECTOR, fake.address)
            uri = f"postgresql://u:{SECRET}@h/db"
            run = _tracking.JobRun(
                "s/train/x", {"ibrobust.rule": "train"}, {"uri": uri}, None, "k2"
            )
            t0 = time.monotonic()
            spooled = run.end("FINISHED")
            waited = time.monotonic() - t0
    finally:
        fake.close()
    assert 0.9 < waited < 5, waited  # IBROBUST_TRACKING_TIMEOUT=1, not minutes of retries
    assert "within 1 s" in run.problem
    assert spooled.parent == job_env.spool and spooled.name.startswith("k2-")
    header, start, end = _lines(spooled)
    assert header["op"] == "spool" and header["experiment_id"] == "7"
    assert header["tracking_uri"] == "postgresql://u:***@127.0.0.1:9/db"
    assert start["op"] == "start" and start["params"]["uri"] == "postgresql://u:***@h/db"
    assert end == {"op": "end", "status": "FINISHED", "t": end["t"]}
    assert SECRET not in spooled.read_text()


def test_an_error_reply_spools_the_run_with_the_reason(job_env, tmp_path):
    fake = FakeCollector(tmp_path / "err.sock", b"error OSError: disk full\n")
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv(_tracking.ENV_COLLECTOR, fake.address)
            run = _tracking.JobRun("s/figure/x", {}, {}, None, "k3")
            spooled = run.end("FINISHED")
    finally:
        fake.close()
    assert run.problem == "collector: error OSError: disk full"
    assert [m["op"] for m in _lines(spooled)] == ["spool", "start", "end"]


def test_a_writer_process_that_cannot_reach_its_store_spools_the_run(job_env, tmp_path):
    # no collector: a writer process of its own, on a store that does not exist
    log = tmp_path / "job.log"
    run = _tracking.JobRun("s/train/far", {}, {"a": 1}, str(log), "k4")
    assert run.via == "process"
    spooled = run.end("FINISHED")
    assert spooled is not None and run.problem is not None
    assert SECRET not in log.read_text() and SECRET not in spooled.read_text()


def test_a_job_told_to_stop_spools_its_run_instead_of_waiting(job_env, tmp_path, monkeypatch):
    """``give_up`` (a stop's SIGINT in a job, ``_signals.stop_waiting``) ends the wait for a
    receipt that does not come, long before the tracking timeout: the job spools the run."""
    monkeypatch.setenv(_tracking.ENV_TIMEOUT, "30")
    fake = FakeCollector(tmp_path / "stuck.sock", None)
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv(_tracking.ENV_COLLECTOR, fake.address)
            run = _tracking.JobRun("s/train/x", {}, {}, None, "kg")
            t0 = time.monotonic()
            spooled = run.end("FINISHED", give_up=lambda: time.monotonic() - t0 > 0.3)
            waited = time.monotonic() - t0
    finally:
        fake.close()
    assert 0.3 < waited < 2, waited
    assert run.problem == "the job was stopped before its writer took the run"
    assert [m["op"] for m in _lines(spooled)] == ["spool", "start", "end"]


# ---- the receipt: a job's end waits for its run on disk, not for the store ----------------
class SlowStore:
    """An MLflow client whose every call first waits for ``release`` (if given), then takes
    ``delay`` s, and may fail (``fail``: a method name); it records the calls it completed."""

    def __init__(self, delay: float = 0.0, release: threading.Event | None = None, fail=None):
        self.delay, self.release, self.fail = delay, release, fail
        self.calls: list[str] = []

    def _call(self, name: str, *args, **kwargs):
        if self.release is not None:
            self.release.wait()
        time.sleep(self.delay)
        if name == self.fail:
            raise RuntimeError(f"{name}: disk full")
        self.calls.append(name)
        if name == "create_run":
            return SimpleNamespace(info=SimpleNamespace(run_id=f"r{len(self.calls)}"))
        return [] if name == "search_runs" else None

    def __getattr__(self, name: str):
        return lambda *args, **kwargs: self._call(name, *args, **kwargs)


# what the collector writes for a run of _stream_run: start (run, params), metrics, artifact,
# the job's seconds, end (and the older runs of its key are looked up)
WHOLE_RUN = [
    "create_run",
    "log_batch",
    "log_batch",
    "log_artifact",
    "log_batch",
    "set_terminated",
    "search_runs",
]


def _stream_run(tmp_path: Path, key: str) -> _tracking.JobRun:
    """A job's run up to its end: params, a metric, an artifact, the job's seconds."""
    art = tmp_path / "history.csv"
    art.write_text("step,loss\n0,1\n")
    run = _tracking.JobRun("s/train/r", {"ibrobust.rule": "train"}, {"lr": 0.1}, None, key)
    run.metrics({"train.loss": 0.5}, step=1)
    run.flush()
    run.artifact(art, "train")
    run.metrics({"job.seconds": 1.0})
    return run


@pytest.fixture
def slow_collector(job_env, monkeypatch):
    """A collector on a :class:`SlowStore`, exported to JobRuns (30 s tracking timeout)."""
    import mlflow.entities  # noqa: F401 - imported before the clock runs (the collector's)

    made = []

    def make(**store) -> tuple[_tracking.Collector, SlowStore]:
        client = SlowStore(**store)
        collector = _tracking.Collector(client, "7")
        monkeypatch.setenv(_tracking.ENV_COLLECTOR, collector.address)
        made.append((collector, client))
        return collector, client

    monkeypatch.setenv(_tracking.ENV_TIMEOUT, "30")
    yield make
    for collector, client in made:
        if client.release is not None:
            client.release.set()
        collector.close()


def test_the_receipt_comes_before_the_store_write(job_env, slow_collector, tmp_path):
    release = threading.Event()
    collector, store = slow_collector(release=release)
    run = _stream_run(tmp_path, "kr")
    assert run.end("FINISHED") is None and run.problem is None  # received
    assert store.calls == []  # the store has nothing yet ...
    (journal,) = job_env.spool.glob("*.jsonl")  # ... the journal has the whole run
    header, *stream = _lines(journal)
    assert journal.name.startswith("kr-")
    assert header["problem"] == collector_mod.JOURNALED and header["experiment_id"] == "7"
    assert [m["op"] for m in stream] == ["start", "metrics", "artifact", "metrics", "end"]
    release.set()
    assert collector.close(30) == []
    assert store.calls == WHOLE_RUN
    assert not list(job_env.spool.glob("*.jsonl"))  # logged: the journal is gone


def test_a_store_that_answers_slowly_does_not_delay_the_jobs_end(job_env, slow_collector, tmp_path):
    collector, store = slow_collector(delay=0.5)  # the run's writes take 3.5 s in all
    run = _stream_run(tmp_path, "ks")
    t0 = time.monotonic()
    assert run.end("FINISHED") is None
    waited = time.monotonic() - t0
    assert waited < 0.5, waited  # less than one store write
    assert len(store.calls) < len(WHOLE_RUN)
    t0 = time.monotonic()
    assert collector.close(30) == []  # the end of the workflow waits for the store
    assert store.calls == WHOLE_RUN and time.monotonic() - t0 > 1.0
    assert not list(job_env.spool.glob("*.jsonl"))


def test_close_waits_a_bounded_time_and_leaves_the_rest_journaled(
    job_env, slow_collector, tmp_path
):
    collector, store = slow_collector(delay=0.4)
    assert _stream_run(tmp_path, "kc").end("FINISHED") is None
    t0 = time.monotonic()
    (journal,) = collector.close(0.5)
    assert 0.5 <= time.monotonic() - t0 < 2
    time.sleep(1.0)  # the write in flight ends; nothing follows it
    assert store.calls == ["create_run", "log_batch"]  # the start message, nothing more
    assert journal.is_file() and _lines(journal)[-1]["op"] == "end"


def test_a_write_that_fails_after_the_receipt_keeps_the_journal(
    job_env, slow_collector, tmp_path, capsys
):
    release = threading.Event()
    collector, store = slow_collector(release=release, fail="log_artifact")
    assert _stream_run(tmp_path, "kf").end("FINISHED") is None  # received before the failure
    release.set()
    (journal,) = collector.close(30)
    assert journal.is_file()
    assert _lines(journal)[0]["problem"] == "RuntimeError: log_artifact: disk full"
    assert store.calls == ["create_run", "log_batch", "log_batch", "set_terminated"]  # FAILED
    err = capsys.readouterr().err
    assert "ibrobust: WARNING: MLflow run 's/train/r' not logged (RuntimeError" in err
    assert f"kept in {journal} - replay it with" in err


def test_a_killed_jobs_run_still_unwritten_at_close_is_journaled_killed(
    job_env, slow_collector, tmp_path
):
    """A job that died before its end (its connection dropped) while the store was behind:
    at close its run goes to the spool too, ending KILLED, as the applier would have ended
    it."""
    collector, store = slow_collector(release=threading.Event())  # a store that never answers
    start = {"op": "start", "name": "s/train/k", "tags": {"ibrobust.run_key": "kk"}, "t": 5}
    start["params"] = {}
    metrics = {"op": "metrics", "items": [["train.loss", 0.5, 5, 0]]}
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(collector.address)
        sock.sendall("".join(json.dumps(m) + "\n" for m in (start, metrics)).encode())
    time.sleep(0.2)  # the collector has read it
    (journal,) = collector.close(0.2)
    header, *stream = _lines(journal)
    assert journal.name == "kk-5.jsonl" and header["problem"] == collector_mod.CUT
    assert stream[:2] == [start, metrics] and stream[2]["status"] == "KILLED"


COLLECTOR_PROCESS = """
import sys, threading
sys.path.insert(0, sys.argv[1])
import _tracking


class Stuck:  # a store that never answers
    def __getattr__(self, name):
        return lambda *args, **kwargs: threading.Event().wait()


print(_tracking.Collector(Stuck(), sys.argv[2]).address, flush=True)
threading.Event().wait()
"""


def test_a_run_received_before_the_workflow_process_dies_is_replayed(store, tmp_path):
    """The collector's process is killed (kill -9) after the receipt and before the store
    write: the journal is a spool file, and the replay logs the run."""
    proc = subprocess.Popen(
        [sys.executable, "-c", COLLECTOR_PROCESS, str(SCRIPTS), store.exp_id],
        stdout=subprocess.PIPE,
        text=True,
    )
    address = ""
    try:
        address = proc.stdout.readline().strip()
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv(_tracking.ENV_COLLECTOR, address)
            run = _stream_run(tmp_path, "kd")
            assert run.end("FINISHED") is None
    finally:
        proc.kill()
        proc.wait()
        if address:
            shutil.rmtree(Path(address).parent, ignore_errors=True)  # its atexit never ran
    (journal,) = store.spool.glob("*.jsonl")
    assert len(replay_mod.replay(store.spool, store.uri).replayed) == 1
    (logged,) = _job_runs(store)
    assert logged.info.status == "FINISHED" and logged.data.params == {"lr": "0.1"}
    assert logged.data.metrics == {"train.loss": 0.5, "job.seconds": 1.0}
    arts = [a.path for a in store.client.list_artifacts(logged.info.run_id, "train")]
    assert arts == ["train/history.csv"]
    assert (store.spool / "replayed" / journal.name).is_file()


# ---- collector, writer and replay on a real store ----------------------------------------
@pytest.fixture
def store(job_env, empty_store, tmp_path, monkeypatch):
    from mlflow.tracking import MlflowClient

    shutil.copy(empty_store, tmp_path / "mlflow.db")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp_id = client.create_experiment("t", artifact_location=(tmp_path / "art").as_uri())
    parent = client.create_run(exp_id, run_name="workflow")
    monkeypatch.setenv(_tracking.ENV_URI, uri)
    monkeypatch.setenv(_tracking.ENV_EXPERIMENT, exp_id)
    monkeypatch.setenv(_tracking.ENV_PARENT, parent.info.run_id)
    monkeypatch.setenv(_tracking.ENV_TIMEOUT, "30")
    return SimpleNamespace(client=client, exp_id=exp_id, uri=uri, spool=job_env.spool)


def _job_runs(store, status=None):
    runs = store.client.search_runs([store.exp_id], "tags.`mlflow.parentRunId` != ''")
    return [r for r in runs if status is None or r.info.status == status]


def _log_run(name: str, key: str, params: dict, loss: list[float]):
    run = _tracking.JobRun(name, {"ibrobust.rule": "train"}, params, None, key)
    for step, value in enumerate(loss):
        run.metrics({"train.loss": value}, step=step)
    return run.end("FINISHED")


def test_the_collector_logs_a_run_with_masked_params(store, monkeypatch):
    collector = _tracking.Collector(store.client, store.exp_id)
    monkeypatch.setenv(_tracking.ENV_COLLECTOR, collector.address)
    try:
        assert _log_run("s/train/a", "ka", {"db": f"mysql://u:{SECRET}@h/d"}, [1.0, 0.5]) is None
    finally:
        assert collector.close(30) == []  # every run received is in the store
    (run,) = _job_runs(store)
    assert run.info.status == "FINISHED" and run.info.run_name == "s/train/a"
    assert run.data.params == {"db": "mysql://u:***@h/d"}
    hist = store.client.get_metric_history(run.info.run_id, "train.loss")
    assert [(m.step, m.value) for m in hist] == [(0, 1.0), (1, 0.5)]


def test_a_rerun_of_the_same_result_leaves_one_run(store, monkeypatch):
    def invocation(*runs) -> None:  # one workflow's collector
        collector = _tracking.Collector(store.client, store.exp_id)
        monkeypatch.setenv(_tracking.ENV_COLLECTOR, collector.address)
        try:
            for args in runs:
                _log_run(*args)
        finally:
            assert collector.close(30) == []

    invocation(("s/train/a", "same", {"lr": 1}, [1.0]))
    invocation(("s/train/a", "same", {"lr": 1}, [0.25]), ("s/train/b", "other", {"lr": 1}, [1.0]))
    runs = _job_runs(store)
    assert sorted(r.info.run_name for r in runs) == ["s/train/a", "s/train/b"]
    (a,) = [r for r in runs if r.info.run_name == "s/train/a"]
    assert a.data.metrics["train.loss"] == 0.25  # the rerun's: the newest kept


def test_an_older_run_ending_deletes_no_newer_run_of_its_key(store):
    """Runs of one key may be written at once (a job retried while the collector still
    writes its first attempt's run): the older one's end deletes no newer run, the newer
    one's end deletes the older, and one run stays."""
    from _tracking import protocol
    from _tracking.writer import RunWriter

    tags = {protocol.RUN_KEY_TAG: "retried", "mlflow.parentRunId": "p"}
    old, new = RunWriter(store.client, store.exp_id), RunWriter(store.client, store.exp_id)
    first = protocol.start_message("s/train/r", tags, {})
    old.apply(first)
    new.apply({**first, "t": first["t"] + 1000})
    old.apply({"op": "end", "status": "FINISHED", "t": first["t"] + 2000})
    new.apply({"op": "end", "status": "FINISHED", "t": first["t"] + 3000})
    assert [r.info.run_id for r in _job_runs(store)] == [new.run_id]


def test_replay_logs_a_spooled_run_once(store, tmp_path):
    # no collector and a tracking URI nobody serves: the job's writer fails, the run spools
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(_tracking.ENV_URI, "http://127.0.0.1:9")
        mp.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
        spooled = _log_run("s/train/a", "ka", {"lr": 0.1}, [1.0, 0.5, 0.25])
    assert spooled is not None and not _job_runs(store)
    backup = tmp_path / "spool-copy"
    shutil.copytree(store.spool, backup)

    report = replay_mod.replay(store.spool, store.uri)
    assert (len(report.replayed), len(report.present), report.failed) == (1, 0, {})
    assert (
        not list(store.spool.glob("*.jsonl"))
        and (store.spool / "replayed" / spooled.name).is_file()
    )
    (run,) = _job_runs(store)
    assert run.info.status == "FINISHED" and run.data.params == {"lr": "0.1"}
    hist = store.client.get_metric_history(run.info.run_id, "train.loss")
    assert [m.value for m in hist] == [1.0, 0.5, 0.25]

    again = replay_mod.replay(backup, store.uri)  # the same spool file, replayed twice
    assert (len(again.replayed), len(again.present), again.failed) == (0, 1, {})
    assert [r.info.run_id for r in _job_runs(store)] == [run.info.run_id]


def test_the_replay_command_runs_as_a_file(store, tmp_path):
    """``python workflow_scripts/_tracking/replay.py``, as the docs say: run as a file, its
    folder is no import root (its secrets.py once stood in for the standard library's, and
    every replay failed)."""
    from _tracking import protocol

    tags = {protocol.RUN_KEY_TAG: "kcli", "mlflow.parentRunId": "p"}
    start = protocol.start_message("s/train/cli", tags, {"lr": 1})
    end = {"op": "end", "status": "FINISHED", "t": start["t"] + 5}
    protocol.write_spool([json.dumps(m) + "\n" for m in (start, end)], start, "test")
    command = [sys.executable, str(SCRIPTS / "_tracking" / "replay.py"), str(store.spool)]
    out = subprocess.run(
        [*command, "--tracking-uri", store.uri],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.startswith("replayed 1 run(s), 0 already in the store, 0 failed")
    (run,) = _job_runs(store)
    assert run.info.run_name == "s/train/cli" and run.info.status == "FINISHED"


def test_replay_replaces_a_partial_run_of_the_same_key(store, monkeypatch):
    # the collector created the run, then its store went away mid-stream: FAILED there,
    # complete in the spool; the replay leaves one FINISHED run
    from _tracking import protocol
    from _tracking.writer import RunWriter

    tags = {protocol.RUN_KEY_TAG: "kp", "mlflow.parentRunId": "p"}
    start = protocol.start_message("s/train/p", tags, {"lr": 1})
    partial = RunWriter(store.client, store.exp_id)
    partial.apply(start)
    partial.abandon(failed=True)
    end = {"op": "end", "status": "FINISHED", "t": start["t"] + 5}
    lines = [json.dumps(m) + "\n" for m in (start, end)]
    protocol.write_spool(lines, start, "test")
    report = replay_mod.replay(store.spool, store.uri)
    assert len(report.replayed) == 1, report
    (run,) = _job_runs(store)
    assert run.info.status == "FINISHED" and run.info.run_id != partial.run_id


def test_replay_completes_a_run_the_collector_was_cut_off_from(store, tmp_path):
    """The collector had written a FAILED run's start when its process ended: the store
    holds it RUNNING, the journal whole. The replay replaces the half-written run by the
    whole one; a second replay finds it there."""
    from _tracking import protocol
    from _tracking.writer import RunWriter

    tags = {protocol.RUN_KEY_TAG: "kx", "mlflow.parentRunId": "p"}
    start = protocol.start_message("s/train/x", tags, {"lr": 1})
    cut = RunWriter(store.client, store.exp_id)
    cut.apply(start)
    metrics = {"op": "metrics", "items": [["train.loss", 0.5, start["t"], 1]]}
    end = {"op": "end", "status": "FAILED", "t": start["t"] + 5}
    path = protocol.write_spool([json.dumps(m) + "\n" for m in (start, metrics, end)], start, "x")
    backup = tmp_path / "again"
    backup.mkdir()
    shutil.copy(path, backup)
    assert len(replay_mod.replay(store.spool, store.uri).replayed) == 1
    (run,) = _job_runs(store)
    assert run.info.status == "FAILED" and run.info.run_id != cut.run_id
    assert run.data.metrics == {"train.loss": 0.5}
    again = replay_mod.replay(backup, store.uri)
    assert (len(again.replayed), len(again.present)) == (0, 1)
    assert [r.info.run_id for r in _job_runs(store)] == [run.info.run_id]


def test_replay_closes_a_parent_run_left_running(store):
    from _tracking import protocol

    parent = store.client.create_run(store.exp_id, run_name="workflow x")
    msg = {"op": "terminate", "run_id": parent.info.run_id, "status": "FINISHED", "t": 1}
    protocol.write_spool([json.dumps(msg) + "\n"], {"name": "workflow", "tags": {}, "t": 1}, "x")
    assert len(replay_mod.replay(store.spool, store.uri).replayed) == 1
    assert store.client.get_run(parent.info.run_id).info.status == "FINISHED"


# ---- the collector's circuit breaker ------------------------------------------------------
class _Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_store_gate_refuses_runs_while_the_server_is_down_and_recovers():
    from _tracking.writer import RunWriter, StoreDown, StoreGate, drain

    server = http.server.HTTPServer(("127.0.0.1", 0), _Health)
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    gate = StoreGate(f"http://127.0.0.1:{port}", recheck=0.0)
    gate.failed()  # a write failed, but /health answers: not down
    assert gate.down is None
    gate.check()
    server.shutdown()
    server.server_close()
    gate.failed()
    assert gate.down == f"http://127.0.0.1:{port} not reachable ([Errno 111] Connection refused)"
    with pytest.raises(StoreDown):
        gate.check()

    class Untouchable:  # a client that must not be called while the store is down
        def __getattr__(self, name):
            raise AssertionError(f"client.{name} called")

    start = json.dumps({"op": "start", "name": "x", "tags": {}, "params": {}, "t": 0})
    lines = [start + "\n", json.dumps({"op": "end", "status": "FINISHED"}) + "\n"]
    t0 = time.monotonic()
    error = drain(RunWriter(Untouchable(), "1"), lines, gate=gate)
    assert error.startswith("tracking server down: ") and time.monotonic() - t0 < 3
    assert StoreGate("sqlite:///x.db").uri is None  # a local store never counts as down


def test_probe_names_the_uri_and_the_setting_within_its_timeout(monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    server = http.server.HTTPServer(("127.0.0.1", 0), _Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        _tracking.probe(f"http://127.0.0.1:{server.server_address[1]}")  # answers: no error
    finally:
        server.shutdown()
        server.server_close()
    _tracking.probe("sqlite:///nowhere/mlflow.db")  # local stores are not probed
    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        uri = f"http://127.0.0.1:{silent.getsockname()[1]}"
        t0 = time.monotonic()
        with pytest.raises(_tracking.TrackingUnreachable) as err:
            _tracking.probe(uri, timeout=0.5)
        assert time.monotonic() - t0 < 3
    assert str(err.value).startswith(f"MLflow tracking server {uri} is not reachable (timed out")
    assert "config key mlflow.tracking_uri" in str(err.value) and "\n" not in str(err.value)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"http://u:{SECRET}@127.0.0.1:9")
    with pytest.raises(_tracking.TrackingUnreachable) as err:
        _tracking.probe(f"http://u:{SECRET}@127.0.0.1:9")
    assert "environment variable MLFLOW_TRACKING_URI" in str(err.value)
    assert SECRET not in str(err.value) and "u:***@" in str(err.value)
