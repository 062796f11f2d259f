"""Study FA-IMAGES end to end on a tiny fake image set (an .npz source the test writes).

The same generic rules as Study FA (dataset, train, analyze, attack) plus the image study's
one figures-and-tables job (cosine heatmaps, robust curves, summary); the data root comes
from ``--config data_root=``.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from smk_helpers import finished_rules, run_on_fake_images, snakemake

pytestmark = pytest.mark.workflow

CONFIG = Path(__file__).resolve().parent / "configs" / "tiny_images.yaml"
EXPECTED = Counter(
    dataset=1,  # tiny_img, seed 0
    train=2,  # binary + multiclass
    analyze=2,
    attack=1,  # the 2-class net (one score)
    attack_readouts_tiny_images=1,  # the 10-class net, one job for every readout of the study
    fa_images_figures=1,  # cosine heatmaps, robust curves and the summary
    claims=1,  # the claims ledger over the study's summary
    all=1,
)


@pytest.fixture(scope="module")
def image_run(tmp_path_factory):
    return run_on_fake_images(tmp_path_factory, CONFIG, label="image")


def test_plans_and_runs_every_image_rule(image_run):
    work, _, plan, run = image_run
    assert plan.stats == EXPECTED
    assert finished_rules(run) == EXPECTED
    figs = work / "results" / "tiny_images" / "figures"
    for name in ("cosine_heatmaps", "robust_accuracy_vs_radius"):
        assert (figs / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (figs / f"{name}.pdf").read_bytes()[:5] == b"%PDF-"
    assert (figs / "summary.md").read_text().startswith("# Summary")


def test_dataset_file_and_meta(image_run):
    work = image_run[0]
    base = work / "results" / "datasets" / "tiny_img" / "seed0"
    with np.load(base / "data.npz") as z:
        assert z["train_x"].shape == (200, 1, 8, 8) and z["train_x"].dtype == np.uint8
        assert z["test_x"].shape == (60, 1, 8, 8)
        np.testing.assert_array_equal(z["sign"], [1, 1, 1, 1, 1, -1, -1, -1, -1, -1])
        np.testing.assert_array_equal(z["train_y"], z["sign"][z["train_fine"]])
        # stratified: 20 per class of a balanced source
        assert np.bincount(z["train_fine"]).tolist() == [20] * 10
    meta = (base / "meta.json").read_text()
    assert '"checksum"' in meta and '"train_class_counts"' in meta


def test_models_learn_and_attacks_are_monotone(image_run):
    work = image_run[0]
    df = pd.read_csv(work / "results/tiny_images/figures/robust_accuracy_vs_radius.csv")
    assert sorted(df.readout.unique()) == ["argmax", "log_odds", "sum"]
    for (sup, _), g in df.groupby(["supervision", "readout"]):
        expected = {"pgd_margin_tiny", "worst"} | (
            {"pgd_ce_tiny"} if sup == "multiclass" else set()
        )
        assert set(g.attack) == expected, sup
        clean = g[(g.eps == 0) & (g.attack == "worst")].robust_acc.item()
        assert clean > 0.75, (sup, clean)  # well above chance (0.5): the classes are easy
        for _, a in g.groupby("attack"):
            assert a.sort_values("eps").robust_acc.is_monotonic_decreasing
        wide = g.pivot(index="eps", columns="attack", values="robust_acc")
        assert (wide["worst"].values[:, None] <= wide.drop(columns="worst").values + 1e-12).all()
        # a radius-2 l2 ball in [0,1]^64 contains a flip of the row pattern
        assert g[(g.eps == 2.0) & (g.attack == "worst")].robust_acc.item() < clean


def test_summary_and_cosines(image_run):
    work = image_run[0]
    summary = pd.read_csv(work / "results/tiny_images/figures/summary.csv")
    # one row per supervision, readout (the 2-class net's one score under each) and eps in
    # {0 (clean), the report radius 1.0}
    keys = zip(summary.supervision, summary.readout, summary.eps, strict=True)
    assert sorted(keys) == sorted(
        (sup, ro, eps)
        for sup in ("binary", "multiclass")
        for ro in ("sum", "argmax", "log_odds")
        for eps in (0.0, 1.0)
    )
    for col in (
        "robust_acc.worst.mean",
        "robust_acc.pgd_margin_tiny.mean",
        "paper_resnet18",
        "seeds",
    ):
        assert col in summary.columns, col
    fine = summary.set_index("supervision")["test.fine_acc.mean"]
    assert fine.loc["binary"].isna().all() and fine.loc["multiclass"].notna().all()
    curves = pd.read_csv(work / "results/tiny_images/figures/robust_accuracy_vs_radius.csv")
    worst = curves[curves.attack == "worst"].set_index(["supervision", "readout", "eps"])
    for r in summary.itertuples():
        w = worst.robust_acc.loc[(r.supervision, r.readout, r.eps)]
        assert abs(w - summary.loc[r.Index, "robust_acc.worst.mean"]) < 1e-9
    # the 2-class net has one score: the same numbers under every readout
    binary = summary[summary.supervision == "binary"].groupby("eps")["robust_acc.worst.mean"]
    assert (binary.nunique() == 1).all()
    cos = pd.read_csv(work / "results/tiny_images/figures/cosine_heatmaps.csv")
    # one row per (head, class): 2 heads x 10 classes and 10 heads x 10 classes
    assert cos.groupby("supervision").size().to_dict() == {"binary": 20, "multiclass": 100}
    assert cos.cosine.between(-1 - 1e-6, 1 + 1e-6).all()


def test_missing_dataset_stops_the_run_before_any_job(tmp_path):
    """The data preflight (onstart) names the missing file; no job starts, nothing is written."""
    work = tmp_path / "work"
    work.mkdir()
    args = ("--config", f"data_root={tmp_path / 'nowhere'}")
    target = "results/datasets/tiny_img/seed0/data.npz"
    run = snakemake(work, "--cores", "1", target, *args, configfiles=(CONFIG,), timeout=300)
    assert run.returncode != 0
    assert "data preflight: 1 problem(s)" in run.output, run.describe()
    missing = tmp_path / "nowhere" / "tiny_images.npz"
    assert f"datasets.tiny_img (source npz): {missing}: npz source not found" in run.output
    assert not (work / "results").exists()  # no job log, no MLflow store, no output
