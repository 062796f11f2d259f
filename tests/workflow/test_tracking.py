"""MLflow switches (tracking off, MLFLOW_TRACKING_URI overriding the config) and secrets:
a password planted in the config never reaches the store (SQLite, and PostgreSQL behind
the run's tracking server), its artifacts or its logs; a store password given the
documented way (IBROBUST_BACKEND_STORE_URI) is in no file under the run directory, and
one given with --config is warned about."""

from __future__ import annotations

import re
import secrets
from collections import Counter
from contextlib import nullcontext

import pytest
from ops_helpers import free_port, postgres_server, record
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


@pytest.mark.parametrize("store", ["sqlite", "postgresql-server"])
def test_a_planted_password_never_reaches_the_store(store, tmp_path):
    """The config holds a database password (and a ``password=`` query string): after a run,
    neither is in the store's params, tags or any other table, nor in an artifact or log."""
    work = tmp_path / "work"
    work.mkdir()
    if store == "postgresql-server":
        pytest.importorskip("psycopg2", reason='psycopg2 missing: pip install -e ".[cluster]"')
        ctx = postgres_server()
    else:
        ctx = nullcontext(None)
    with ctx as pg_uri:
        if pg_uri:  # the throwaway server trusts any password: plant ours in its URI
            backend = pg_uri.replace(":secret@", f":{PLANTED}@")
        else:  # not used (no server), but in the config all the same
            backend = f"postgresql://mlflow:{PLANTED}@db.example.org:5432/mlflow"
        ml = {
            "server": {"start": bool(pg_uri), "backend_store_uri": backend},
            "artifact_root": "results/mlflow/artifacts",
        }
        overlay = {"mlflow": ml, "data_root": f"/data?password={PLANTED}"}
        cfg = write_yaml(tmp_path / "planted.yaml", overlay)
        run = snakemake(work, "--cores", "1", DATA, configfiles=(TINY, cfg), timeout=600)
        run.check()
        assert PLANTED not in run.output
        files = _count_in_files(work / "results", PLANTED)  # store, artifacts, logs
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
    """The run's tracking server on a PostgreSQL store that checks its password (a URI
    without it is refused). environment (docs/operations.md, "Secrets"): the password is
    in no file under the run directory (.snakemake/ included), not in the run's output
    nor in the store, and the end-of-run command names the variable instead. --config:
    one warning naming the variable, and the password lands where it says, in Snakemake's
    log, and nowhere else under the run directory (so the search would find it)."""
    pytest.importorskip("psycopg2", reason='psycopg2 missing: pip install -e ".[cluster]"')
    from mlflow.tracking import MlflowClient

    work = tmp_path / "work"
    work.mkdir()
    password = f"Pl4nted-{secrets.token_hex(8)}"
    with postgres_server(password=password) as pg_uri:
        if way == "environment":
            env = base_env(IBROBUST_BACKEND_STORE_URI=pg_uri)
            server = "{server: {start: true}}"
        else:
            env = base_env()
            server = f'{{server: {{start: true, backend_store_uri: "{pg_uri}"}}}}'
        run = snakemake(
            work, "--cores", "1", DATA, "--config", f"mlflow={server}", env=env, timeout=600
        ).check()
        assert finished_rules(run) == Counter(dataset=1)
        store = MlflowClient(tracking_uri=pg_uri)  # the runs went to PostgreSQL
        runs = store.search_runs([store.get_experiment_by_name("ibrobust").experiment_id])
        assert Counter(r.data.tags["ibrobust.kind"] for r in runs) == {"workflow": 1, "job": 1}
        assert _count_in_database(pg_uri, password) == {}
    (smk_log,) = (work / ".snakemake" / "log").glob("*.snakemake.log")
    assert f"--config mlflow={server}" in smk_log.read_text()  # the command line is kept
    found = _count_in_files(work, password)
    (command,) = re.findall(r"ibrobust: MLflow: open the store with: (.*)", run.output)
    warnings = [line for line in run.output.splitlines() if line.startswith(WARNING)]
    if way == "environment":
        assert found == {} and password not in run.output
        assert warnings == []
        assert command.startswith('mlflow ui --backend-store-uri "$IBROBUST_BACKEND_STORE_URI"')
    else:
        assert list(found) == [str(smk_log)], found
        (warning,) = warnings
        assert "instead of --config mlflow.server.backend_store_uri, set the environment " in (
            warning.lower()
        )
        assert "variable IBROBUST_BACKEND_STORE_URI" in warning
        assert ".snakemake/log/" in warning
        assert "postgresql://postgres:***@127.0.0.1" in command and password not in command
    record(f"store password via {way}: files holding it {sorted(found) or 'none'}")
    print("\n".join([*warnings, command]))


def test_an_unreachable_tracking_server_stops_the_run_before_any_job(tmp_path):
    """A tracking URI where nothing listens: one line naming the URI and the setting to
    change, before any job, instead of minutes of client retries and a traceback."""
    work = tmp_path / "work"
    work.mkdir()
    uri = f"http://127.0.0.1:{free_port()}"
    run = snakemake(work, "--cores", "1", DATA, env=base_env(MLFLOW_TRACKING_URI=uri), timeout=300)
    assert run.returncode != 0
    (line,) = [x for x in run.output.splitlines() if "is not reachable" in x]
    assert line.startswith(f"ibrobust: MLflow tracking server {uri} is not reachable")
    assert "environment variable MLFLOW_TRACKING_URI" in line
    assert "Traceback" not in run.output
    assert not (work / DATA).exists() and finished_rules(run) == Counter()
    record(f"unreachable tracking server: one-line message after {run.seconds:.1f} s")
