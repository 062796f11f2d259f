"""Study MARGIN end to end on the tiny fake image set (no real data): the generic dataset
rule, one loss-based training job and its constant-step twin (training.flow), one robustness
job, a KKT job per run, one job for the four figures and the summary with both schedules;
every accepted epoch reaches MLflow as step-indexed metrics (log10 L, never L); a plot option
reruns only that job, a new seed only its own jobs and that one."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from smk_helpers import (
    copy_state,
    finished_rules,
    parse_dry_run,
    run_on_fake_images,
    snakemake,
    write_yaml,
)

pytestmark = pytest.mark.workflow

CONFIG = Path(__file__).resolve().parent / "configs" / "tiny_margin.yaml"
EXPECTED = Counter(
    dataset=1, margin_train=1, margin_flow=1, margin_robustness=1, margin_kkt=1,
    margin_kkt_constant=1, margin_figures=1, margin=1,
)  # fmt: skip
# a new seed: its dataset draw, both schedules' training, its robustness, both KKT jobs
SEED_JOBS = Counter(dataset=1, margin_train=1, margin_flow=1, margin_robustness=1, margin_kkt=1,
                    margin_kkt_constant=1)  # fmt: skip
FIGURES = ("margins", "loss", "robust_accuracy", "distance_vs_margin")


@pytest.fixture(scope="module")
def margin_run(tmp_path_factory):
    work, root, plan, run = run_on_fake_images(tmp_path_factory, CONFIG, "margin", label="MARGIN")
    return work, plan, run, root


def test_plans_and_runs_every_margin_rule(margin_run):
    work, plan, run, _ = margin_run
    assert plan.stats == EXPECTED
    assert finished_rules(run) == EXPECTED
    out = work / "results" / "margin" / "figures"
    for name in FIGURES:
        assert (out / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        assert (out / f"{name}.pdf").read_bytes()[:5] == b"%PDF-", name
        assert len(pd.read_csv(out / f"{name}.csv")) > 0, name
    assert (out / "summary.md").read_text().startswith("# Summary: Study MARGIN")


def test_history_checkpoints_and_points(margin_run):
    work = margin_run[0]
    run = work / "results/margin/tiny_margin_img/tiny_hcnn/seed0"
    hist = pd.read_csv(run / "history.csv")
    assert hist["epoch"].tolist() == list(range(len(hist))) and len(hist) >= 2
    assert hist["log10_train_loss"].is_monotonic_decreasing  # roll-backs keep only descents
    cks = pd.read_csv(run / "checkpoints.csv")
    assert cks["name"].iloc[-1] == "final" and cks["epoch"].iloc[-1] == hist["epoch"].iloc[-1]
    pts = pd.read_csv(run / "points.csv")
    assert set(pts["split"]) == {"train", "test"} and set(pts["checkpoint"]) == set(cks["name"])
    assert len(pts) == 2 * 8 * len(cks)
    ok = pts[pts["margin"] > 0]
    assert len(ok) > 0  # some points are classified correctly: the bounds below are checked
    # the certificate is a lower bound of every attack's distance
    assert (ok["certified_l2"] <= ok["fab_l2"] + 1e-9).all()
    b = ok.dropna(subset=["pgd_l2_upper"])
    assert len(b) > 0
    assert (b["certified_l2"] <= b["pgd_l2_upper"] + 1e-9).all()
    summary = pd.read_csv(work / "results/margin/figures/summary.csv")
    assert {"paper_epoch", "paper_normalized_margin", "sep_frac_decreasing"} <= set(summary.columns)
    assert {"kkt_residual", "homogeneity", "loss_rate_slope", "norm_rate_theory"} <= set(summary)
    assert set(summary["schedule"]) == {"loss_based", "constant"}
    assert (summary["homogeneity"] == 4).all() and summary["kkt_residual"].between(0, 2).all()
    const = summary[summary["schedule"] == "constant"]
    assert const["name"].iloc[-1] == "final" and const["epoch"].iloc[-1] == 60
    assert summary.loc[summary["schedule"] == "loss_based", "loss_rate_slope"].isna().all()
    flow = pd.read_csv(run / "constant/history.csv")
    assert flow["epoch"].iloc[-1] == 60 and set(range(0, 61, 5)) <= set(flow["epoch"])
    assert flow["time"].tolist() == pytest.approx((flow["epoch"] * 0.5).tolist())
    sched = pd.read_csv(work / "results/margin/figures/schedules.csv")
    assert sched["run"].tolist() == ["tiny_margin_img/tiny_hcnn/seed0"]
    assert sched["epochs"].tolist() == [60]
    assert sched["log10_loss_constant"].item() == pytest.approx(flow["log10_train_loss"].iloc[-1])
    assert sched["log10_loss_loss_based"].item() == pytest.approx(hist["log10_train_loss"].iloc[-1])


def test_mlflow_received_step_metrics(margin_run):
    from mlflow.tracking import MlflowClient

    work = margin_run[0]
    client = MlflowClient(tracking_uri=f"sqlite:///{work / 'results/mlflow/mlflow.db'}")
    exp = client.get_experiment_by_name("ibrobust")
    runs = client.search_runs([exp.experiment_id], max_results=1000)
    (train,) = [r for r in runs if r.data.tags.get("ibrobust.rule") == "margin_train"]
    n = len(pd.read_csv(work / "results/margin/tiny_margin_img/tiny_hcnn/seed0/history.csv"))
    for key in ("train.log10_loss", "q_min", "rho", "normalized_margin",
                "smoothed_normalized_margin", "train.acc", "test.acc"):  # fmt: skip
        steps = [m.step for m in client.get_metric_history(train.info.run_id, key)]
        assert sorted(steps) == list(range(n)), key
    assert [m.step for m in client.get_metric_history(train.info.run_id, "alpha")][0] == 1
    assert "train.loss" not in train.data.metrics  # L itself is never recorded


def _replan(margin_run, tmp_path, overlay: dict):
    work = copy_state(margin_run[0], tmp_path / "work")
    extra = write_yaml(tmp_path / "extra.yaml", overlay)
    data = ("--config", f"data_root={margin_run[3]}")
    run = snakemake(work, "-n", "margin", *data, configfiles=(CONFIG, extra), timeout=120)
    return parse_dry_run(run)


def test_a_plot_option_reruns_only_the_figures_job(margin_run, tmp_path):
    plan = _replan(margin_run, tmp_path, {"studies": {"margin": {"plots": {"dpi": 70}}}})
    assert plan.stats == Counter(margin_figures=1, margin=1)
    (job,) = plan.of("margin_figures")
    assert job.wildcards["study"] == "margin"


def test_a_new_seed_plans_only_its_own_jobs_and_the_figures_job(margin_run, tmp_path):
    plan = _replan(margin_run, tmp_path, {"studies": {"margin": {"seeds": [0, 1]}}})
    assert plan.stats == SEED_JOBS + Counter(margin_figures=1, margin=1)
    for rule in SEED_JOBS:
        assert {j.wildcards["seed"] for j in plan.of(rule)} == {"1"}, rule


def test_scale_ladder_runs_only_the_new_rung_then_each_claims_trend(margin_run):
    """The config's ladder n_train [10, 20]: rung 20 is the study itself (already built by
    the `margin` target), so `scale` plans one more training run (rung 10), its robustness,
    figures and summary, and the scale ledger; `reproduce` never plans a rung study."""
    work, _, _, root = margin_run
    data = ("--config", f"data_root={root}")
    rung = "margin@n_train=10"
    plan = parse_dry_run(snakemake(work, "-n", "scale", *data, configfiles=(CONFIG,), timeout=120))
    assert plan.stats["margin_train"] == 1 and plan.stats["margin_robustness"] == 1
    assert plan.stats["claims_scale"] == 1 and plan.stats["claims_all"] == 0
    reproduce = parse_dry_run(
        snakemake(work, "-n", "reproduce", *data, configfiles=(CONFIG,), timeout=120)
    )
    assert "claims_scale" not in reproduce.stats
    rung_outputs = [f for j in reproduce.jobs for f in j.output if re.match(r"results/\w+@", f)]
    assert not rung_outputs, rung_outputs[:3]
    run = snakemake(work, "--cores", "2", "scale", *data, configfiles=(CONFIG,), timeout=1200)
    assert run.returncode == 0, run.describe()
    assert finished_rules(run)["margin_train"] == 1
    # the rung trained on 10 images, the base study on 20
    small = pd.read_csv(
        work / "results" / rung / "tiny_margin_img@n_train=10/tiny_hcnn/seed0/points.csv"
    )
    assert len(small[(small.split == "train") & (small.checkpoint == "final")]) == 8
    ledger = pd.read_csv(work / "results/claims/scale/claims.csv")
    assert {"margin", rung} <= set(ledger.study)
    trend = pd.read_csv(work / "results/claims/scale/trend.csv")
    assert set(trend.ladder) == {"margin"} and (trend.key == "n_train").all()
    assert set(trend.trend) <= {"grows", "shrinks", "steady", "unknown"}
    assert trend.rungs.str.startswith("10").all(), trend.rungs.tolist()
    assert "n_train" in (work / "results/claims/scale/trend.md").read_text()
