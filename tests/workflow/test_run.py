"""The full tiny run: declared outputs, their contents, up-to-dateness, MLflow records."""

from __future__ import annotations

from collections import Counter

import pandas as pd
import pytest
from smk_helpers import (
    EXPECTED_JOBS,
    FIGURES_WITH_SCALING,
    finished_rules,
    parse_dry_run,
    snakemake,
)

pytestmark = pytest.mark.workflow

RADII = [0.0, 1.0, 2.0, 3.0, 4.0, 6.0]  # studies.fa.radii of tiny.yaml
RUN_KEYS = ["dataset", "model", "optimizer", "supervision", "seed"]
CSV_COLUMNS = {
    "cosine_heatmaps": {"neuron", "head", "feature", "cosine", *RUN_KEYS},
    "lambda_trajectories": {
        "step",
        "neuron",
        "feature",
        "lambda",
        "residual",
        "basis",
        "fa_index_mean",
        *RUN_KEYS,
    },
    "robust_accuracy_vs_radius": {
        "attack",
        "eps",
        "robust_acc",
        "n",
        "model_kind",
        "readout",
        *RUN_KEYS,
    },
    "critical_radius_scaling": {
        "key",
        "label",
        "readout",
        "value",
        "d",
        "k",
        "critical_radius",
        "sqrt_d_over_k",
        "half_sqrt_d",
        "sqrt_half_d",
        # the sweep's decomposed nets' final lambdas (scaling.decompose, the default)
        "fa_index",
        "other_class_ratio",
        "decoupling_ratio",
        *RUN_KEYS,
    },
    "scaling_summary": {"key", "label", "readout", "slope", "slope.seed_mean", "values"},
    "summary": {
        "dataset",
        "model",
        "optimizer",
        "seed",
        "setting",
        "readout",
        "clean_acc",
        "critical_radius.pgd_margin",
        "critical_radius.pgd_ce",
        "critical_radius.universal",
        "critical_radius.worst",
        "fa_index",
        "residual_max",
        "cosine_same_class_mean",
        "fine_acc",
    },
}


def test_every_declared_output(tiny_run):
    figs = tiny_run.results / "fa" / "figures"
    expected = {f"{n}{ext}" for n in FIGURES_WITH_SCALING for ext in (".png", ".pdf", ".csv")}
    expected |= {"summary.csv", "summary.md", "scaling_summary.csv", "scaling_summary.md"}
    expected |= {"margin_gradient_summary.csv"}
    present = {p.name for p in figs.iterdir() if p.is_file()}
    assert expected <= present, f"missing: {sorted(expected - present)}"
    for name in expected:
        assert (figs / name).stat().st_size > 0, name
    for name in FIGURES_WITH_SCALING:
        png = (figs / f"{name}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 1024, name
        assert (figs / f"{name}.pdf").read_bytes()[:5] == b"%PDF-", name
    md = (figs / "summary.md").read_text()
    assert md.startswith("# Summary")
    # the markdown keeps the row labels (one row per setting) and flat column names
    for label in (
        "setting",
        "binary",
        "multiclass",
        "robust reference",
        "critical_radius.worst.mean",
    ):
        assert label in md, label
    # atomic writes leave no temporary files behind
    leftovers = [p for p in tiny_run.results.rglob("*.tmp*") if "mlflow" not in p.parts]
    assert not leftovers, leftovers


@pytest.mark.parametrize("name", list(CSV_COLUMNS))
def test_csv_columns(tiny_run, name):
    df = pd.read_csv(tiny_run.results / "fa" / "figures" / f"{name}.csv")
    assert len(df) > 0
    assert CSV_COLUMNS[name] <= set(df.columns), sorted(CSV_COLUMNS[name] - set(df.columns))


def test_robust_accuracy_curves(tiny_run):
    df = pd.read_csv(tiny_run.results / "fa" / "figures" / "robust_accuracy_vs_radius.csv")
    assert df.robust_acc.between(0, 1).all()
    # the 6 main runs: 2 supervisions x 2 seeds trained + the reference per seed, each under
    # 3 readouts (2-class and reference curves repeat under each: one score)
    assert df.groupby(RUN_KEYS).ngroups == 6
    assert df.groupby([*RUN_KEYS, "readout"]).ngroups == 18
    one_score = df[df.supervision == "binary"].pivot_table(
        index=[*RUN_KEYS, "attack", "eps"], columns="readout", values="robust_acc"
    )
    assert (one_score.nunique(axis=1) == 1).all()
    for key, g in df.groupby([*RUN_KEYS, "readout"]):
        attacks = set(g.attack)
        expected = {"pgd_margin", "universal", "worst"}
        if key[3] == "multiclass":
            expected.add("pgd_ce")  # fine-label CE only for multi-class models
        assert attacks == expected, key
        for attack, a in g.groupby("attack"):
            a = a.sort_values("eps")
            assert list(a.eps) == RADII, (key, attack)
            assert a.robust_acc.is_monotonic_decreasing, (key, attack, a.robust_acc.tolist())
        wide = g.pivot(index="eps", columns="attack", values="robust_acc")
        others = wide.drop(columns="worst")
        assert (wide["worst"].values[:, None] <= others.values + 1e-12).all(), (key, wide)
    scaling = pd.read_csv(tiny_run.results / "fa" / "figures" / "critical_radius_scaling.csv")
    assert set(scaling[scaling.key == "k"].value) == {2, 4}
    assert set(scaling[scaling.key == "d"].value) == {20, 40}
    assert (scaling.critical_radius >= 0).all()


def test_nothing_to_do_after_full_run(tiny_run, state_copy):
    # dry run in the session's own directory (a dry run writes nothing) ...
    plan = parse_dry_run(snakemake(tiny_run.workdir, "-n", timeout=120))
    assert plan.nothing_to_do and not plan.jobs
    # ... and a real second invocation (on a copy): no job runs, no MLflow run opens
    run = snakemake(state_copy, "--cores", "2", timeout=120).check()
    assert "Nothing to be done" in run.output
    assert not finished_rules(run)
    client, exp = _client(state_copy / "results")
    runs = client.search_runs([exp.experiment_id], max_results=1000)
    assert sum(r.data.tags.get("ibrobust.kind") == "workflow" for r in runs) == 1


def _client(results):
    from mlflow.tracking import MlflowClient

    db = results / "mlflow" / "mlflow.db"
    assert db.is_file()
    client = MlflowClient(tracking_uri=f"sqlite:///{db.resolve()}")
    exp = client.get_experiment_by_name("ibrobust")
    assert exp is not None
    return client, exp


def test_mlflow_runs(tiny_run):
    client, exp = _client(tiny_run.results)
    runs = client.search_runs([exp.experiment_id], max_results=1000)
    parents = [r for r in runs if r.data.tags.get("ibrobust.kind") == "workflow"]
    children = [r for r in runs if r.data.tags.get("ibrobust.kind") == "job"]
    assert len(parents) == 1, [r.data.tags for r in parents]
    assert len(parents) + len(children) == len(runs)
    parent = parents[0]
    assert parent.info.status == "FINISHED"

    # one child run per job that ran (the log's "Finished jobid" lines, minus `all`)
    ran = finished_rules(tiny_run.run)
    assert ran.pop("all") == 1
    assert ran == EXPECTED_JOBS - Counter(all=1)
    assert Counter(r.data.tags["ibrobust.rule"] for r in children) == ran
    # every job wrote its run record (the snakemake process syncs it): none imported MLflow
    starts = [
        line
        for log in tiny_run.results.joinpath("logs").rglob("*.log")
        for line in log.read_text().splitlines()
        if " mlflow=" in line
    ]
    assert len(starts) == len(children)
    assert all(" mlflow=record " in line for line in starts), starts[:3]

    for r in children:
        tags = r.data.tags
        assert tags["mlflow.parentRunId"] == parent.info.run_id, tags
        assert r.info.status == "FINISHED", tags
        for t in ("ibrobust.rule", "mlflow.source.git.commit", "ibrobust.config_hash"):
            assert tags.get(t), (t, tags)
        assert tags["ibrobust.config_hash"] == parent.data.tags["ibrobust.config_hash"]
        assert tags["mlflow.source.git.commit"] == parent.data.tags["mlflow.source.git.commit"]

        rule = tags["ibrobust.rule"]
        if rule == "train" and tags["wildcard.model"] != "robust_reference":
            hist = client.get_metric_history(r.info.run_id, "train.loss")
            steps = sorted(m.step for m in hist)
            assert len(set(steps)) >= 3, (tags["mlflow.runName"], steps)
        if rule.endswith(("_figure", "_figures")):
            arts = {a.path for a in client.list_artifacts(r.info.run_id, "figures")}
            assert {p.rsplit(".", 1)[1] for p in arts} == {"png", "pdf", "csv"}, arts
        if rule == "fa_figures":
            arts = {a.path for a in client.list_artifacts(r.info.run_id, "tables")}
            assert arts == {"tables/summary.csv", "tables/summary.md"}, arts
