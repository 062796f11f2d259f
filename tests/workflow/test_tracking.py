"""MLflow switches (tracking off, MLFLOW_TRACKING_URI overriding the config), secrets and a
store that is down: a password planted in the config never reaches the store (SQLite, and
PostgreSQL), its artifacts, the run records or the logs; a store password given the
documented way (MLflow's MLFLOW_TRACKING_URI) is in no file under the run directory, and
one given with --config is warned about; a tracking server down for the whole run costs
no result, and one command logs every run once it is up."""

from __future__ import annotations

import re
import secrets
import subprocess
from collections import Counter
from contextlib import nullcontext

import pytest
from ops_helpers import free_port, postgres_server, record, tracking_server
from smk_helpers import PYTHON, REPO, TINY, base_env, finished_rules, snakemake, write_yaml

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
    # the UI opens on the training runs, and lists no empty Default experiment
    assert [e.name for e in client.search_experiments()] == ["ibrobust"]
    exp = client.get_experiment_by_name("ibrobust")
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"
    runs = client.search_runs([exp.experiment_id])
    kinds = Counter(r.data.tags.get("ibrobust.kind") for r in runs)
    assert kinds == {"workflow": 1, "job": 1}
    parent = next(r for r in runs if r.data.tags["ibrobust.kind"] == "workflow")
    child = next(r for r in runs if r.data.tags["ibrobust.kind"] == "job")
    assert child.data.tags["ibrobust.rule"] == "dataset"
    assert child.data.tags["mlflow.parentRunId"] == parent.info.run_id
    assert {r.info.status for r in runs} == {"FINISHED"}
    assert child.info.run_name == "dataset seed0/tiny_clusters @shared"
    assert len(child.data.tags["ibrobust.run_key"]) == 20
    # the config is one masked artifact, not hundreds of params
    # the parent run names what ran: one dataset job, of no study, for one file target
    assert parent.info.run_name.startswith("workflow - (1 file) ")
    assert parent.data.params == {
        "studies": "",
        "targets": DATA,
        "config_hash": parent.data.tags["ibrobust.config_hash"],
        "experiment": "ibrobust",
    }
    assert [a.path for a in client.list_artifacts(parent.info.run_id)] == ["config.yaml"]


PLANTED = "Pl4nted-pw-7c41"  # a password that must never reach the store


def _count_in_files(root, needle: str) -> dict[str, int]:
    """Occurrences of ``needle`` in every file under ``root`` (binary files included)."""
    found = {}
    for path in root.rglob("*"):
        if path.is_file():
            n = path.read_bytes().count(needle.encode())
            if n:
                found[str(path)] = n
    return found


def _count_in_database(uri: str, needle: str) -> dict[str, int]:
    """Occurrences of ``needle`` in every text cell of every table of a SQL store."""
    import sqlalchemy

    engine = sqlalchemy.create_engine(uri)
    found = {}
    with engine.connect() as conn:
        meta = sqlalchemy.MetaData()
        meta.reflect(conn)
        for table in meta.sorted_tables:
            for row in conn.execute(table.select()):
                n = sum(str(v).count(needle) for v in row if v is not None)
                if n:
                    found[table.name] = found.get(table.name, 0) + n
    engine.dispose()
    return found


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_a_planted_password_never_reaches_the_store(store, tmp_path):
    """The config holds a database password and a ``password=`` query string (and, for
    PostgreSQL, the store's URI in MLFLOW_TRACKING_URI holds one): after a run, none is in
    the store's params, tags or any other table, nor in an artifact, run record or log."""
    work = tmp_path / "work"
    work.mkdir()
    if store == "postgresql":
        pytest.importorskip("psycopg2", reason='psycopg2 missing: pip install -e ".[cluster]"')
        ctx = postgres_server()
    else:
        ctx = nullcontext(None)
    with ctx as pg_uri:
        env = base_env()
        if pg_uri:  # the throwaway server trusts any password: plant ours in its URI
            env["MLFLOW_TRACKING_URI"] = pg_uri.replace(":secret@", f":{PLANTED}@")
        # data_root is not read by a synthetic dataset's job, but it is in the config
        root = f"postgresql://mlflow:{PLANTED}@db.example.org/x?password={PLANTED}"
        cfg = write_yaml(tmp_path / "planted.yaml", {"data_root": root})
        run = snakemake(work, "--cores", "1", DATA, configfiles=(TINY, cfg), env=env, timeout=600)
        run.check()
        assert PLANTED not in run.output
        files = _count_in_files(work / "results", PLANTED)  # store, artifacts, records, logs
        files.update(_count_in_files(work / ".snakemake" / "log", PLANTED))
        assert files == {}
        db = pg_uri or f"sqlite:///{work / 'results/mlflow/mlflow.db'}"
        assert _count_in_database(db, PLANTED) == {}
        # the config did reach the store, masked: the parent run's config.yaml artifact
        (config_yaml,) = (work / "results/mlflow/artifacts").rglob("config.yaml")
        text = config_yaml.read_text()
        assert "password=***" in text and ":***@" in text
    record(f"planted password, {store}: 0 occurrences in the store, artifacts and logs")


WARNING = "ibrobust: WARNING: a password given with --config is kept in clear"


@pytest.mark.parametrize("way", ["environment", "--config"])
def test_a_store_password_through_the_environment_or_config(way, tmp_path):
    """A PostgreSQL store that checks its password (a URI without it is refused).
    environment (MLFLOW_TRACKING_URI, docs/operations.md "Secrets"): the password is in no
    file under the run directory (.snakemake/ included), not in the run's output nor in the
    store, and the end-of-run command names the variable instead. --config: one warning
    naming the variable, and the password lands where it says, in Snakemake's log, and
    nowhere else under the run directory (so the search would find it)."""
    pytest.importorskip("psycopg2", reason='psycopg2 missing: pip install -e ".[cluster]"')
    from mlflow.tracking import MlflowClient

    work = tmp_path / "work"
    work.mkdir()
    password = f"Pl4nted-{secrets.token_hex(8)}"
    with postgres_server(password=password) as pg_uri:
        if way == "environment":
            env, args = base_env(MLFLOW_TRACKING_URI=pg_uri), ()
        else:
            env, args = base_env(), ("--config", f'mlflow={{tracking_uri: "{pg_uri}"}}')
        run = snakemake(work, "--cores", "1", DATA, *args, env=env, timeout=600).check()
        assert finished_rules(run) == Counter(dataset=1)
        store = MlflowClient(tracking_uri=pg_uri)  # the runs went to PostgreSQL
        runs = store.search_runs([store.get_experiment_by_name("ibrobust").experiment_id])
        assert Counter(r.data.tags["ibrobust.kind"] for r in runs) == {"workflow": 1, "job": 1}
        assert _count_in_database(pg_uri, password) == {}
    (smk_log,) = (work / ".snakemake" / "log").glob("*.snakemake.log")
    found = _count_in_files(work, password)
    (command,) = re.findall(r"ibrobust: MLflow: open the store with: (.*)", run.output)
    warnings = [line for line in run.output.splitlines() if line.startswith(WARNING)]
    if way == "environment":
        assert found == {} and password not in run.output
        assert warnings == []
    else:
        assert list(found) == [str(smk_log)], found
        (warning,) = warnings
        assert "instead of --config mlflow.tracking_uri, set the environment variable " in (
            warning.lower()
        )
        assert "variable MLFLOW_TRACKING_URI" in warning and ".snakemake/log/" in warning
    assert command.startswith('mlflow ui --backend-store-uri "$MLFLOW_TRACKING_URI"'), command
    assert password not in command
    record(f"store password via {way}: files holding it {sorted(found) or 'none'}")
    print("\n".join([*warnings, command]))


def test_a_tracking_server_down_for_the_whole_run_costs_no_result(tmp_path):
    """MLFLOW_TRACKING_URI names a server where nothing listens: the job runs and is
    complete, the end of the run says how many runs are not in the store and the one
    command that logs them; once a server answers there, that command logs every run,
    none RUNNING, and run again adds nothing."""
    from mlflow.tracking import MlflowClient

    work = tmp_path / "work"
    work.mkdir()
    port = free_port()
    uri = f"http://127.0.0.1:{port}"
    run = snakemake(work, "--cores", "1", DATA, env=base_env(MLFLOW_TRACKING_URI=uri), timeout=600)
    assert run.returncode == 0, run.describe()
    assert (work / DATA).is_file() and finished_rules(run) == Counter(dataset=1)
    (line,) = [x for x in run.output.splitlines() if "not yet in the store" in x]
    assert line.startswith("ibrobust: MLflow: 2 run(s) not yet in the store (")
    assert line.endswith(
        "sync them with: ibrobust sync (or python workflow_scripts/_tracking/sync.py)"
    )
    assert "Traceback" not in run.output
    db = f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}"
    (tmp_path / "store").mkdir()
    with tracking_server(db, tmp_path / "artifacts", tmp_path / "server.log", port=port):
        for _ in range(2):
            sync = subprocess.run([PYTHON, str(REPO / "workflow_scripts/_tracking/sync.py")],
                                  cwd=work, env=base_env(MLFLOW_TRACKING_URI=uri),
                                  capture_output=True, text=True, timeout=300)  # fmt: skip
            assert sync.returncode == 0, sync.stdout + sync.stderr
            assert sync.stdout.strip() == f"ibrobust sync: 2 run(s) in {uri}, 0 not"
    client = MlflowClient(tracking_uri=db)
    runs = client.search_runs([client.get_experiment_by_name("ibrobust").experiment_id])
    assert sorted(r.info.status for r in runs) == ["FINISHED", "FINISHED"]
    record(f"tracking server down for the run: job complete; {line.split(';')[0]}; synced after")


def test_two_invocations_at_once_do_not_mix_their_runs(tmp_path):
    """Two snakemake processes in one directory at once (disjoint targets), one store: each
    parent run holds its own job's run only."""
    from mlflow.tracking import MlflowClient
    from smk_helpers import snakemake_args

    work = tmp_path / "work"
    work.mkdir()
    targets = [DATA, DATA.replace("seed0", "seed1")]
    procs = [
        subprocess.Popen(
            snakemake_args(work, "--cores", "1", t),
            cwd=work,
            env=base_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )  # fmt: skip
        for t in targets
    ]
    outputs = [p.communicate(timeout=600)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    client = MlflowClient(tracking_uri=f"sqlite:///{work / 'results/mlflow/mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("ibrobust").experiment_id])
    parents = {r.info.run_id: r for r in runs if r.data.tags["ibrobust.kind"] == "workflow"}
    jobs = [r for r in runs if r.data.tags["ibrobust.kind"] == "job"]
    assert len(parents) == 2 and len(jobs) == 2
    for job in jobs:  # each job's parent is the invocation that asked for its file
        parent = parents[job.data.tags["mlflow.parentRunId"]]
        seed = job.data.tags["wildcard.seed"]
        assert parent.data.params["targets"] == DATA.replace("seed0", f"seed{seed}")
    assert {r.info.status for r in runs} == {"FINISHED"}
    record("two invocations at once in one directory: 2 parents, each with its own job run")
