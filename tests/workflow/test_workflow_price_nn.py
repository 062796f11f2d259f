"""Study PRICE-NN end to end on a tiny fake image set (the .npz that test_workflow_images
writes; no real MNIST needed): the FC half on classes 2 vs 7, the CNN half on all ten classes
(multiclass, judged on the fine labels, its eps 0.2 cell a hard cell): the generic dataset,
train (robust ERM at each derived eps optimizer, curves every eval_every epochs) and attack
rules (each run at its own eps), then the study's figures, tables and summary; the curves
reach MLflow as step-indexed metrics."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from smk_helpers import finished_rules, run_on_fake_images

from ibrobust.studies.price_nn.measures import SOURCES

pytestmark = pytest.mark.workflow

CONFIG = Path(__file__).resolve().parent / "configs" / "tiny_price_nn.yaml"
FC_RUNS, CNN_RUNS = 8, 4  # fc: 2 optimizers x 2 eps x 2 seeds; cnn: 2 x 2 eps x 1 n x 1 seed
EXPECTED = Counter(
    dataset=3,  # tiny_2v7 (fc; n_train 20 = the base entry) seeds 0 and 1, tiny_10 (cnn) seed 0
    train=FC_RUNS + CNN_RUNS,
    attack=FC_RUNS + CNN_RUNS,
    price_nn_figures=1,
    tiny_price_nn=1,
)


@pytest.fixture(scope="module")
def price_nn_run(tmp_path_factory):
    work, _, plan, run = run_on_fake_images(
        tmp_path_factory, CONFIG, "tiny_price_nn", label="price_nn"
    )
    return work, plan, run


def test_plans_and_runs_every_rule(price_nn_run):
    work, plan, run = price_nn_run
    assert plan.stats == EXPECTED
    assert finished_rules(run) == EXPECTED
    figs = work / "results" / "tiny_price_nn" / "figures"
    for name in ("accuracy_curves", "cnn_heatmap"):
        assert (figs / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (figs / f"{name}.pdf").read_bytes()[:5] == b"%PDF-"
    assert "4.11" in (figs / "summary.md").read_text()


def test_runs_are_read_at_their_training_eps(price_nn_run):
    figs = price_nn_run[0] / "results" / "tiny_price_nn" / "figures"
    runs = pd.read_csv(figs / "runs.csv")
    assert len(runs) == FC_RUNS + CNN_RUNS
    assert set(zip(runs.arch, runs.eps, strict=True)) == {
        ("fc", 0.0), ("fc", 0.1), ("cnn", 0.0), ("cnn", 0.2)
    }  # fmt: skip
    assert runs.optimizer.str.contains("@eps=").all()
    # strong worst case <= training attack <= clean; ERM's robust = clean at eps 0
    erm = runs[runs.eps == 0]
    assert (erm.robust_test_acc_worst == erm.test_acc).all()
    assert (runs.robust_test_acc_worst <= runs.test_acc + 1e-9).all()
    curves = pd.read_csv(figs / "accuracy_curves.csv")
    assert sorted(curves.epoch.unique()) == [4, 8, 12]
    table = pd.read_csv(figs / "fc_table.csv")
    assert set(table.algorithm) == {"GD", "sign descent"} and len(table) == 4
    # the hard cell trains its own optimizers (a larger stop_loss), paired by algorithm
    cnn = runs[runs.arch == "cnn"]
    assert set(cnn[cnn.eps == 0.2].optimizer) == {
        "tiny_cnn_gd_hard@eps=0.2",
        "tiny_cnn_sd_hard@eps=0.2",
    }
    cells = pd.read_csv(figs / "cells.csv")
    assert len(cells) == FC_RUNS // 2 + CNN_RUNS // 2  # one row per (cell, seed) pair
    assert {"both_fitted", "diff_robust_test", "gd_epochs_to_threshold"} <= set(cells.columns)
    assert set(cells.difference) == {"sd-gd", "gd-sd"}
    # every column the claims read, in its range (the ledger's check of the source)
    for col in SOURCES["cells"].numeric:
        assert col.name in cells, col.name
        v = cells[col.name].dropna()
        assert len(v) or col.nan_ok, col.name
        assert (v >= col.lo).all() and (col.hi is None or (v <= col.hi).all()), col.name
    fc = cells[(cells.arch == "fc") & (cells.eps > 0)]
    assert (fc.gd_robust_test_best >= fc.gd_robust_test_end).all()  # the best curve point
    # the FC runs log their train loss every 2 of 12 steps: a late half to read
    assert fc.gd_late_increase.between(0, 1).all() and fc.sd_late_increase.between(0, 1).all()


def test_each_run_is_attacked_at_its_own_eps_on_its_task(price_nn_run):
    work = price_nn_run[0]
    summaries = sorted(
        (work / "results" / "tiny_price_nn").glob("*/*/*/*/seed*/attack/main/summary.json")
    )
    assert len(summaries) == FC_RUNS + CNN_RUNS
    for f in summaries:
        s = json.loads(f.read_text())
        optimizer, supervision = f.parts[-6], f.parts[-5]
        eps = float(optimizer.split("@eps=")[1])
        assert s["radii"] == sorted({0.0, eps})
        assert s["task"] == ("fine" if supervision == "multiclass" else "binary")
        # every attack of the half ran (none dropped as not applying to the task)
        assert len(s["robust_acc"]) == 4  # three attacks and the worst case


def test_curves_are_step_indexed_mlflow_metrics(price_nn_run):
    db = price_nn_run[0] / "results" / "mlflow" / "mlflow.db"
    with sqlite3.connect(db) as con:
        rows = con.execute(
            "select run_uuid, step from metrics where key = 'curve.robust_test_acc'"
        ).fetchall()
    by_run: dict[str, list[int]] = {}
    for run_id, step in rows:
        by_run.setdefault(run_id, []).append(step)
    assert len(by_run) == FC_RUNS + CNN_RUNS
    fc_steps = [sorted(s) for s in by_run.values() if len(s) == 3]
    assert len(fc_steps) == FC_RUNS and all(s == [4, 8, 12] for s in fc_steps)
