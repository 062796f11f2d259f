"""Study PRELU end to end on tiny data: the synthetic half (clusters, alpha variants) through
the generic dataset / train / attack rules plus the PRELU analysis, figures and summary; the
MNIST-half machinery (held-out test images, one attack job per norm, Table 1) on a fake image
set the test writes. ``snakemake prelu`` runs both; the default target only the synthetic half.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from smk_helpers import finished_rules, parse_dry_run, run_on_fake_images, snakemake

from ibrobust.analysis.readoff import grid_bracket

pytestmark = pytest.mark.workflow

CONFIG = Path(__file__).resolve().parent / "configs" / "tiny_prelu.yaml"
RUN_KEYS = ["dataset", "model", "optimizer", "supervision", "seed"]
SYNTHETIC = Counter(
    dataset=2,  # alpha 0.05 = the base dataset itself, alpha 0.2 its variant; seed 0
    train=4,  # 2 datasets x 2 models (p = 1, 3)
    attack=4,  # grid main
    prelu_analyze=1,  # one job over the half's runs
    prelu_refine=1,  # refine {p: [1]} (config.yaml): the p = 1 run at the figure alpha
    prelu_figures=1,  # robust accuracy, alignment, distances, summary: one job
)
MNIST = Counter(
    dataset=1,  # the image set, seed 0
    train=2,  # 1 model x 2 supervisions
    attack=6,  # x 3 norm grids (linf, l2, l1)
    prelu_mnist_figures=1,  # the MNIST figure and Table 1: one job
)
EXPECTED = SYNTHETIC + MNIST + Counter(prelu=1)
SYN_RADII = [0.0, 0.2, 0.4, 0.8, 1.2]
GRIDS = {"linf": [0.0, 0.05, 0.3], "l2": [0.0, 1.0, 3.0], "l1": [0.0, 5.0, 12.0]}


@pytest.fixture(scope="module")
def prelu_run(tmp_path_factory):
    work, _, plan, run = run_on_fake_images(tmp_path_factory, CONFIG, "prelu", label="PRELU")
    return work, plan, run


def figures(work: Path) -> Path:
    return work / "results" / "prelu" / "figures"


def test_default_target_is_the_synthetic_half(tmp_path):
    plan = parse_dry_run(snakemake(tmp_path, "-n", configfiles=(CONFIG,), timeout=120))
    assert plan.stats == SYNTHETIC + Counter(claims=1, all=1)  # + the claims ledger
    assert {j.wildcards["dataset"] for j in plan.of("dataset")} == {
        "tiny_prelu_clusters",
        "tiny_prelu_clusters@alpha=0.2",
    }


def test_plans_and_runs_both_halves(prelu_run):
    work, plan, run = prelu_run
    assert plan.stats == EXPECTED
    assert finished_rules(run) == EXPECTED
    grids = Counter(j.wildcards["grid"] for j in plan.of("attack"))
    assert grids == {"main": 4, "linf": 2, "l2": 2, "l1": 2}
    out = figures(work)
    for name in ("robust_accuracy_vs_radius", "neuron_alignment", "ideal_distances",
                 "mnist_robust_accuracy"):  # fmt: skip
        png = (out / f"{name}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 1024, name
        assert (out / f"{name}.pdf").read_bytes()[:5] == b"%PDF-", name
        assert len(pd.read_csv(out / f"{name}.csv")) > 0, name
    assert (out / "summary.md").read_text().startswith("# Study PRELU, synthetic")
    assert (out / "table1.md").read_text().startswith("# Study PRELU, MNIST")
    leftovers = [p for p in (work / "results").rglob("*.tmp*") if "mlflow" not in p.parts]
    assert not leftovers, leftovers


def _monotone_and_worst(df: pd.DataFrame, keys: list[str]) -> None:
    for key, g in df.groupby(keys):
        for attack, a in g.groupby("attack"):
            a = a.sort_values("eps")
            assert a.robust_acc.is_monotonic_decreasing, (key, attack, a.robust_acc.tolist())
        wide = g.pivot(index="eps", columns="attack", values="robust_acc")
        others = wide.drop(columns="worst")
        assert (wide["worst"].values[:, None] <= others.values + 1e-12).all(), (key, wide)


def test_synthetic_robust_accuracy(prelu_run):
    df = pd.read_csv(figures(prelu_run[0]) / "robust_accuracy_vs_radius.csv")
    assert {"attack", "eps", "robust_acc", "alpha", "p", *RUN_KEYS} <= set(df.columns)
    assert sorted(df.alpha.unique()) == [0.05, 0.2] and sorted(df.p.unique()) == [1.0, 3.0]
    assert set(df.attack) == {"pgd_tiny_prelu", "universal", "worst"}
    assert sorted(df.eps.unique()) == SYN_RADII
    _monotone_and_worst(df, RUN_KEYS)
    clean = df[(df.eps == 0) & (df.attack == "worst")]
    assert (clean.robust_acc > 0.9).all(), clean  # the clusters are separable
    assert (df[(df.eps == 1.2) & (df.attack == "worst")].robust_acc < 0.5).all()


def test_synthetic_analysis_and_summary(prelu_run):
    out = figures(prelu_run[0])
    al = pd.read_csv(out / "neuron_alignment.csv")
    assert {"neuron", "sign", "contribution", "active", "best", "best_kind", "cos_mu0",
            "cos_mu3", "cos_avg_plus", "cos_avg_minus", "alpha", "p"} <= set(al.columns)  # fmt: skip
    assert len(al) == 4 * 16  # 4 runs x 16 neurons
    runs = pd.read_csv(prelu_run[0] / "results/prelu/analysis/synthetic_runs.csv")
    assert len(runs) == 4 and set(runs.p) == {1.0, 3.0} and (runs.n_neurons == 16).all()
    assert al.filter(like="cos_").abs().max().max() <= 1 + 1e-6
    # p = 3 puts its active neurons on single centres, p = 1 mostly on class averages
    act = al[al.active]
    single = act.groupby("p").best_kind.apply(lambda s: (s == "centre").mean())
    assert single[3.0] == 1.0 and single[1.0] < single[3.0]
    dist = pd.read_csv(out / "ideal_distances.csv")
    assert dist[["dist_F", "dist_Fp", "dist_F_test", "dist_Fp_test"]].stack().between(0, 1).all()
    summary = pd.read_csv(out / "summary.csv")
    for col in ("alpha", "p", "clean_acc", "critical_radius", "robust_acc@1/sqrt(K)",
                "robust_acc@sqrt(2)/2", "frac_single", "frac_average", "dist_F", "dist_Fp"):  # fmt: skip
        assert col in summary.columns, col
    assert len(summary) == 4
    # the refined radius (rule prelu_refine) of the p = 1 run at the figure alpha 0.05 only:
    # a bracket at most the tolerance 1e-3 wide, inside the grid cell (0.2-wide grid here)
    ref = summary[summary.critical_radius_refined.notna()]
    assert list(zip(ref.p, ref.alpha, strict=True)) == [(1.0, 0.05)]
    lo, hi = ref.critical_radius_refined_lo.iloc[0], ref.critical_radius_refined_hi.iloc[0]
    assert 0 <= hi - lo <= 1e-3 and lo <= ref.critical_radius_refined.iloc[0] <= hi
    # the refined crossing lies in the grid cell the grid's interpolated radius lies in
    cell = grid_bracket(SYN_RADII, float(ref.critical_radius.iloc[0]))
    assert cell[0] <= lo and hi <= cell[1]


def test_mnist_half_holdout_grids_and_tasks(prelu_run):
    work = prelu_run[0]
    with np.load(work / "results/datasets/tiny_prelu_img/seed0/data.npz") as z:
        assert z["train_index"].max() < 200 and z["test_index"].min() >= 200  # held out
        assert len(z["train_x"]) == 200 and len(z["test_x"]) == 60
    base = work / "results/prelu/tiny_prelu_img/tiny_prelu_img_p2/adam_tiny_prelu"
    for sup, task in (("binary", "binary"), ("multiclass", "fine")):
        for grid, radii in GRIDS.items():
            s = json.loads((base / sup / "seed0" / "attack" / grid / "summary.json").read_text())
            assert s["task"] == task and s["radii"] == radii and s["n_points"] == 30
            assert set(s["robust_acc"]) == {f"aa_tiny_{grid}", "worst"}  # this norm's only
            st = s["settings"][f"aa_tiny_{grid}"]
            assert st["version"] == "standard" and st["apgd-ce.n_iter"] == 5
            assert st["apgd-ce.n_restarts"] == (5 if grid == "l1" else 1)
            assert st["apgd-ce.use_largereps"] == (grid == "l1")
    df = pd.read_csv(figures(work) / "mnist_robust_accuracy.csv")
    assert set(df.grid) == set(GRIDS) and set(df.supervision) == {"binary", "multiclass"}
    _monotone_and_worst(df, RUN_KEYS + ["grid"])


def test_table1(prelu_run):
    t = pd.read_csv(figures(prelu_run[0]) / "table1.csv")
    for col in ("task", "column", "p", "ours", "ours_std", "seeds", "n_points", "attacks",
                "attack_version", "paper", "official_pretrained"):  # fmt: skip
        assert col in t.columns, col
    # the Table-1 columns on the tiny grids: linf 0.05, l2 1, l1 5 (and clean)
    assert set(t.column) == {"clean", "linf 0.05", "l2 1", "l1 5"}
    assert set(t.task) == {"2-class", "10-class"} and (t.p == 2.0).all()
    ten = t[t.task == "10-class"].set_index("column")
    assert ten.loc["clean", "official_pretrained"] == 0.981  # the p = 2 pretrained model
    assert math.isnan(ten.loc["linf 0.05", "paper"])  # the paper lists p = 1 and 4 only
    assert ten.loc["linf 0.05", "official_pretrained"] == 0.849
    assert "5 restarts (use_largereps)" in ten.loc["l1 5", "attack_version"]
    assert t[t.task == "2-class"].official_pretrained.isna().all()
    assert t.ours.between(0, 1).all()


def test_one_mlflow_run_per_job(prelu_run):
    from mlflow.tracking import MlflowClient

    work, _, run = prelu_run
    db = work / "results" / "mlflow" / "mlflow.db"
    client = MlflowClient(tracking_uri=f"sqlite:///{db.resolve()}")
    exp = client.get_experiment_by_name("ibrobust")
    runs = client.search_runs([exp.experiment_id], max_results=1000)
    jobs = [r for r in runs if r.data.tags.get("ibrobust.kind") == "job"]
    ran = finished_rules(run)
    assert ran.pop("prelu") == 1  # the target rule runs no script
    assert Counter(r.data.tags["ibrobust.rule"] for r in jobs) == ran
    assert {r.info.status for r in jobs} == {"FINISHED"}
