"""What the parent run says and what the end of a run prints, without Snakemake: the
warning for a password given with --config, the parent run's name from the targets and the
studies of the DAG's jobs, the end-of-run lines, and MLFLOW_TRACKING_URI taken out of the
jobs' environment."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace

SCRIPTS = Path(__file__).resolve().parents[2] / "workflow_scripts"
sys.path.insert(0, str(SCRIPTS))
import _tracking  # noqa: E402
from _tracking import ui  # noqa: E402

SECRET = "s3cr3t-Pa55"
PG = f"postgresql://mlflow:{SECRET}@db.example.org:5432/mlflow"


# ---- a password on the command line -------------------------------------------------------
def test_no_warning_without_a_password_on_the_command_line():
    assert _tracking.command_line_warning(None) is None
    assert _tracking.command_line_warning({"mlflow": {"enabled": "true"}}) is None
    clean = {"mlflow": {"tracking_uri": "postgresql://u@h/db"}}
    assert _tracking.command_line_warning(clean) is None


def test_the_warning_names_each_key_and_its_variable():
    given = {
        "mlflow": {"enabled": "true", "tracking_uri": PG},
        "data_root": f"/data?password={SECRET}",
    }
    warning = _tracking.command_line_warning(given)
    assert warning.startswith("ibrobust: WARNING: a password given with --config is kept")
    assert ".snakemake/log/" in warning and "\n" not in warning
    assert (
        "Instead of --config mlflow.tracking_uri, set the "
        "environment variable MLFLOW_TRACKING_URI; instead of --config data_root, use a "
        "config file (--configfile)"
    ) in warning
    assert SECRET not in warning


# ---- the parent run's name: targets and the studies of the DAG's jobs ---------------------
def _job(rule: str, output: list[str], **wildcards) -> SimpleNamespace:
    return SimpleNamespace(rule=rule, output=output, wildcards_dict=wildcards)


def _workflow(targets, needrun, other=(), rules=("all", "reproduce", "fa", "prelu")):
    jobs = [*needrun, *other]
    dag = SimpleNamespace(needrun_jobs=lambda exclude_finished=True: iter(needrun), jobs=jobs)
    return SimpleNamespace(
        dag_settings=SimpleNamespace(targets=frozenset(targets)),
        default_target="all",
        is_rule=lambda name: name in rules,
        dag=dag,
    )


KNOWN = ["fa", "prelu", "price_linear", "margin"]
DATA = _job("dataset", ["results/datasets/d/seed0/data.npz"], dataset="d", seed="0")
CLAIMS = _job("claims", ["results/claims/all/claims.md"])
FA_TRAIN = _job("train", ["results/fa/d/m/o/binary/seed0/model.pt"], study="fa")
PRICE = _job("price_train", ["results/price_linear/r/lin_gd/n8/metrics.csv"], study="price_linear")
# no study wildcard given: the study is read from the output path
PRELU_FIG = _job("prelu_mnist_figures", ["results/prelu/figures/table1.csv"])


def test_the_name_lists_the_studies_that_run_then_the_targets():
    wf = _workflow(["reproduce"], [DATA, PRICE, FA_TRAIN, PRELU_FIG, CLAIMS])
    inv = _tracking.Invocation.of(wf, KNOWN)
    assert inv.studies == ("fa", "prelu", "price_linear") and inv.targets == ("reproduce",)
    when = time.mktime((2026, 1, 31, 12, 0, 0, 0, 0, -1))
    assert inv.run_name(when) == "workflow fa+prelu+price_linear (reproduce) 2026-01-31 12:00:00"


def test_file_targets_are_counted_and_rules_named():
    files = ["results/fa/d/m/o/binary/seed0/model.pt", "results/price_linear/x.csv"]
    inv = _tracking.Invocation.of(_workflow([*files, "prelu"], [FA_TRAIN, PRICE]), KNOWN)
    assert inv.targets_label() == "prelu, 2 files"
    assert inv.run_name().startswith("workflow fa+price_linear (prelu, 2 files) ")
    one = _tracking.Invocation.of(_workflow(files[:1], [FA_TRAIN]), KNOWN)
    assert one.targets_label() == "1 file"
    many = _tracking.Invocation(("a", "b", "c", "d", "e"), ("fa",), frozenset("abcde"))
    assert many.targets_label() == "a, b, c, +2 rules"


def test_no_target_is_the_default_rule():
    inv = _tracking.Invocation.of(_workflow([], [FA_TRAIN]), KNOWN)
    assert inv.targets == ("all",) and inv.studies == ("fa",)


def test_an_invocation_that_redoes_no_study_job_names_the_studies_of_its_dag():
    """Only the claims ledger reruns: the studies are those of the DAG it reads."""
    inv = _tracking.Invocation.of(_workflow(["reproduce"], [CLAIMS], [FA_TRAIN, PRICE]), KNOWN)
    assert inv.studies == ("fa", "price_linear")
    nothing = _tracking.Invocation.of(_workflow(["x.npz"], [DATA], [DATA]), KNOWN)
    assert nothing.run_name().startswith("workflow - (1 file) ")
    assert _tracking.Invocation().run_name().startswith("workflow - (-) ")


# ---- the end-of-run lines -----------------------------------------------------------------
def test_the_end_of_run_lines_give_a_command_and_the_run_url(tmp_path):
    url = ui.run_url("http://127.0.0.1:5000/", "3", "abc")
    assert url == "http://127.0.0.1:5000/#/experiments/3/runs/abc?workflowType=machine_learning"
    db = f"sqlite:///{tmp_path}/my results/mlflow.db"
    assert ui.open_command(db) == (
        f"mlflow ui --backend-store-uri 'sqlite:///{tmp_path}/my results/mlflow.db' --workers 1"
    )
    assert ui.open_command(PG) == 'mlflow ui --backend-store-uri "$MLFLOW_TRACKING_URI" --workers 1'
    assert ui.hint_lines(url, "mlflow ui x") == [
        "ibrobust: MLflow: open the store with: mlflow ui x",
        f"ibrobust: MLflow: this invocation's parent run: {url}",
    ]
    assert ui.hint_lines(url, None) == [f"ibrobust: MLflow: this invocation's parent run: {url}"]


def test_a_failed_run_ends_with_the_command_and_the_url(tmp_path, monkeypatch, capsys):
    """start -> end("FAILED") on a real SQLite store: the parent run is named after the
    invocation and closed FAILED, and the last two lines say how to open it."""
    from mlflow.tracking import MlflowClient

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(os, "environ", dict(os.environ))  # start() exports IBROBUST_*
    db = tmp_path / "results" / "mlflow.db"
    os.environ["MLFLOW_TRACKING_URI"] = "sqlite:///results/mlflow.db"  # relative: made absolute
    ml = {
        "enabled": True,
        "tracking_uri": "sqlite:///elsewhere.db",  # MLFLOW_TRACKING_URI wins
        "artifact_root": "results/artifacts",
        "experiment": "ibrobust",
        "model_artifact_max_mb": 50,
    }
    tracking = _tracking.WorkflowTracking({"mlflow": ml, "studies": {}}, "c0ffee", str(tmp_path))
    tracking.start(_tracking.Invocation(("reproduce",), ("fa", "prelu"), frozenset({"reproduce"})))
    assert "MLFLOW_TRACKING_URI" not in os.environ  # the jobs never write to the store
    assert os.environ[_tracking.ENV_PARENT] == tracking.record.id
    tracking.end("FAILED")
    assert not (tmp_path / "elsewhere.db").exists()
    client = MlflowClient(tracking_uri=f"sqlite:///{db}")
    exp = client.get_experiment_by_name("ibrobust")
    (parent,) = client.search_runs([exp.experiment_id])
    assert parent.info.status == "FAILED"
    assert parent.info.run_name.startswith("workflow fa+prelu (reproduce) ")
    assert parent.data.params["studies"] == "fa,prelu"
    assert parent.data.params["targets"] == "reproduce"
    url = (
        f"http://127.0.0.1:5000/#/experiments/{exp.experiment_id}/runs/{parent.info.run_id}"
        "?workflowType=machine_learning"
    )
    assert capsys.readouterr().err.splitlines()[-2:] == [
        f"ibrobust: MLflow: open the store with: mlflow ui --backend-store-uri sqlite:///{db} "
        "--workers 1",
        f"ibrobust: MLflow: this invocation's parent run: {url}",
    ]
