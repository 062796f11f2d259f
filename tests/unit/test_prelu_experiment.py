"""Study PRELU glue and figures: the per-run synthetic analysis on planted nets, the summary
and Table 1 assembled from hand-made per-run records, and every figure from tiny tables."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import torch

from ibrobust.data.clusters import ClusterDataConfig, make_cluster_data
from ibrobust.data.dataset import dataset_from_arrays
from ibrobust.models.prelu import PreluNet
from ibrobust.studies.prelu.experiment import run_analysis
from ibrobust.studies.prelu.plots import (
    alignment_fractions,
    ideal_distances,
    mnist_robust_accuracy,
    neuron_alignment,
    robust_accuracy_by_alpha,
)
from ibrobust.studies.prelu.tables import (
    attack_version,
    interpolate,
    label_runs,
    synthetic_markdown,
    synthetic_means,
    synthetic_summary,
    table1,
    table1_markdown,
)

K, D = 4, 12
SIGN = [1.0, 1.0, -1.0, -1.0]


def data():
    cfg = ClusterDataConfig(d=D, k=K, n_train=20, n_test=50, basis="standard", mean_norm=1.0,
                            positive=(0, 1), alpha=0.05)  # fmt: skip
    return dataset_from_arrays(make_cluster_data(cfg, 0).arrays())


def planted(p: float, averaged: bool) -> PreluNet:
    """Neurons on the centres (F^(p)) or on the two class averages (F), plus two idle
    neurons at a tiny scale; one head, v_j = the neuron's class sign."""
    if averaged:
        w = torch.zeros(4, D)
        w[0, :2], w[1, 2:4] = 1.0, 1.0
        v = torch.tensor([[1.0, -1.0, 0.0, 0.0]])
    else:
        w = torch.zeros(6, D)
        w[:4, :4] = torch.eye(4)
        v = torch.tensor([[1.0, 1.0, -1.0, -1.0, 0.0, 0.0]])
    w[-2:, -1] = 1e-9  # idle neurons (contribution 0)
    return PreluNet(w, v, torch.tensor([1.0]), p)


def test_run_analysis_on_planted_nets():
    ds = data()
    table, s = run_analysis(planted(3.0, averaged=False), ds, seed=0, probes=500)
    assert s["n_active"] == 4 and s["frac_single"] == 1.0 and s["frac_average"] == 0.0
    assert s["dist_Fp"] < 1e-6 and s["dist_F"] > 0.3 and s["p"] == 3.0 and s["k"] == K
    assert list(table.columns[-6:]) == ["cos_mu0", "cos_mu1", "cos_mu2", "cos_mu3",
                                        "cos_avg_plus", "cos_avg_minus"]  # fmt: skip
    assert table.active.tolist() == [True] * 4 + [False] * 2
    assert table.best.tolist()[:4] == [0, 1, 2, 3] and table.sign.tolist()[:4] == SIGN
    table, s = run_analysis(planted(1.0, averaged=True), ds, seed=0, probes=500)
    assert s["frac_average"] == 1.0 and s["dist_F"] < 1e-6 and s["dist_Fp"] > 0.3
    assert table.best_kind.tolist()[:2] == ["average", "average"]
    assert table.cos_avg_plus[0] == pytest.approx(1.0)
    assert table.cos_mu0[0] == pytest.approx(1 / math.sqrt(2))


def test_run_analysis_needs_cluster_data_and_a_prelu_net():
    ds = data()
    ds.extras.pop("means")
    with pytest.raises(ValueError, match="cluster data"):
        run_analysis(planted(3.0, False), ds, seed=0)


RADII = [0.0, 0.2, 0.4, 0.8]


def attack_record(ds, model, seed, worst):
    acc = dict(zip(map(str, RADII), worst, strict=True))
    return {
        "dataset": ds, "model": model, "optimizer": "sgd", "supervision": "binary", "seed": seed,
        "robust_acc": {"pgd": acc, "worst": acc}, "critical_radius": {"worst": 0.3},
        "clean_acc": worst[0], "n_points": 100,
    }  # fmt: skip


def test_synthetic_summary_and_means():
    labels = {"alphas": {"a": 0.05, "b": 0.2}, "models": {"m1": {"kind": "prelu", "p": 1.0},
              "m3": {"kind": "prelu", "p": 3.0}}, "k": 4}  # fmt: skip
    att = [attack_record("a", "m1", s, [1.0, 1.0, 0.5, 0.0]) for s in (0, 1)]
    att += [attack_record("b", "m3", 0, [1.0, 1.0, 1.0, 0.6])]
    ana = [{**{k: r[k] for k in ("dataset", "model", "optimizer", "supervision", "seed")},
            "frac_single": 1.0 if r["model"] == "m3" else 0.0, "frac_average": 0.0,
            "n_active": 4, "mean_best_cos": 0.99, "dist_F": 0.1, "dist_Fp": 0.5,
            "dist_F_test": 0.0, "dist_Fp_test": 0.0} for r in att]  # fmt: skip
    tab = synthetic_summary(att, ana, [], labels)
    assert tab.alpha.tolist() == [0.05, 0.05, 0.2] and tab.p.tolist() == [1.0, 1.0, 3.0]
    # 1/sqrt(4) = 0.5: halfway between 0.4 (acc 0.5) and 0.8 (acc 0.0) -> 0.375
    assert tab["robust_acc@1/sqrt(K)"][0] == pytest.approx(0.5 - 0.5 * 0.1 / 0.4)
    # sqrt(2)/2 = 0.7071 between 0.4 (1.0) and 0.8 (0.6)
    assert tab["robust_acc@sqrt(2)/2"][2] == pytest.approx(1.0 - 0.4 * (0.7071068 - 0.4) / 0.4)
    means = synthetic_means(tab)
    assert means.seeds.tolist() == [2, 1] and means["frac_single.mean"].tolist() == [0.0, 1.0]
    md = synthetic_markdown(means)
    assert "| critical_radius" in md and "0.300 +- 0.000" in md and "4.0 +- 0.0" in md
    assert math.isnan(interpolate(np.array(RADII), np.ones(4), 1.0))


def aa_settings(norm: str) -> dict:
    reps = norm == "L1"
    return {"kind": "autoattack", "version": "standard", "norm": norm, "attacks": "apgd-ce",
            "apgd-ce.n_iter": 100, "apgd-ce.n_restarts": 5 if reps else 1,
            "apgd-ce.use_largereps": reps, "batch_size": 500}  # fmt: skip


def mnist_records():
    runs = [("m1", "multiclass", s) for s in (0, 1)] + [
        ("m4", "multiclass", 0),
        ("m1", "binary", 0),
    ]
    att, tr = [], []
    for model, sup, seed in runs:
        key = dict(dataset="mn", model=model, optimizer="adam", supervision=sup, seed=seed)
        base = 0.5 if model == "m1" else 0.9
        grids = {"linf": [0.0, 0.05, 0.1], "l2": [0.0, 1.0, 2.0], "l1": [0.0, 5.0]}
        for grid, radii in grids.items():
            acc = {str(r): base - 0.1 * i - 0.01 * seed for i, r in enumerate(radii)}
            name = f"aa_{grid}"
            att.append({**key, "grid": grid, "robust_acc": {name: acc, "worst": acc},
                        "settings": {name: aa_settings({"linf": "Linf", "l2": "L2", "l1": "L1"}[grid])},
                        "n_points": 100})  # fmt: skip
        tr.append({**key, "test.binary_acc": 0.99, "test.fine_acc": 0.97 + 0.01 * seed})
    return att, tr


def test_table1_against_hand_made_records():
    att, tr = mnist_records()
    labels = {"models": {"m1": {"kind": "prelu", "p": 1}, "m4": {"kind": "prelu", "p": 4}}}
    t = table1(att, tr, labels)
    ten1 = t[(t.model == "m1") & (t.task == "10-class")].set_index("column")
    # l1 10 is not on the grid: left out; the others in Table 1's order
    assert list(ten1.index) == ["clean", "linf 0.05", "linf 0.1", "l2 1", "l2 2", "l1 5"]
    assert ten1.loc["clean", "ours"] == pytest.approx(0.975) and ten1.loc["clean", "seeds"] == 2
    assert ten1.loc["clean", "official_pretrained"] == 0.982
    # linf 0.05: seeds 0.4 and 0.39 -> mean 0.395, std 0.00707
    assert ten1.loc["linf 0.05", "ours"] == pytest.approx(0.395)
    assert ten1.loc["linf 0.05", "ours_std"] == pytest.approx(0.01 / math.sqrt(2))
    assert ten1.loc["linf 0.05", "paper"] == 0.512 and ten1.loc["l2 2", "paper"] == 0.007
    assert ten1.loc["l2 1", "official_pretrained"] == 0.312
    assert "5 restarts (use_largereps)" in ten1.loc["l1 5", "attack_version"]
    assert "100 iter x 1 restarts" in ten1.loc["linf 0.1", "attack_version"]
    ten4 = t[(t.model == "m4") & (t.task == "10-class")].set_index("column")
    assert ten4.loc["linf 0.1", "paper"] == 0.637 and ten4.loc["linf 0.1", "ours"] == pytest.approx(
        0.7
    )
    two = t[t.task == "2-class"]
    assert two.paper.isna().all() and two.official_pretrained.isna().all()  # 10-class references
    md = table1_markdown(t)
    assert (
        "## mn, 10-class" in md and "0.395 / 0.512 / 0.521" in md and "0.700 / 0.637 / 0.634" in md
    )
    assert (
        "- l1 5: aa_l1 = autoattack standard [apgd-ce 100 iter x 5 restarts (use_largereps)]" in md
    )


def test_attack_version_of_pgd_and_nothing():
    assert (
        attack_version({"kind": "pgd", "steps": 50, "restarts": 2}) == "pgd 50 steps x 2 restarts"
    )
    assert attack_version({}) == ""


# ---------------------------------------------------------------- figures from tiny tables


def tiny_curves() -> pd.DataFrame:
    rows = []
    for model, p in (("m1", 1.0), ("m3", 3.0)):
        for alpha, ds in ((0.05, "a"), (0.2, "b")):
            for seed in (0, 1):
                for attack in ("pgd", "worst"):
                    for e in RADII:
                        edge = 0.32 if p == 1 else 0.71
                        rows.append(dict(dataset=ds, model=model, optimizer="sgd",
                                         supervision="binary", seed=seed, attack=attack, eps=e,
                                         robust_acc=float(e < edge), n=10, alpha=alpha, p=p))  # fmt: skip
    return pd.DataFrame(rows)


def tiny_alignment() -> pd.DataFrame:
    ds = data()
    frames = []
    for model, p, averaged in (("m1", 1.0, True), ("m3", 3.0, False)):
        for alpha, name in ((0.05, "a"), (0.2, "b")):
            for seed in (0, 1):
                t, _ = run_analysis(planted(p, averaged), ds, seed, probes=50)
                frames.append(t.assign(dataset=name, model=model, optimizer="sgd",
                                       supervision="binary", seed=seed, alpha=alpha, p=p))  # fmt: skip
    return pd.concat(frames, ignore_index=True)


def check_figure(fig):
    assert isinstance(fig, plt.Figure) and fig.axes
    fig.canvas.draw()
    plt.close(fig)


def test_figures_from_tiny_tables():
    check_figure(robust_accuracy_by_alpha(tiny_curves(), k=K))
    al = tiny_alignment()
    frac = alignment_fractions(al)
    assert sorted(frac.frac_single.unique()) == [0.0, 1.0] and (frac.n_active > 0).all()
    check_figure(neuron_alignment(al, 0.05, signs=SIGN))
    check_figure(neuron_alignment(al, 0.05, signs=None, max_neurons=2))
    dist = pd.DataFrame([dict(model=m, p=p, alpha=a, seed=s, dist_F=0.1 * p, dist_Fp=0.5 / p)
                         for m, p in (("m1", 1.0), ("m3", 3.0)) for a in (0.05, 0.2)
                         for s in (0, 1)])  # fmt: skip
    check_figure(ideal_distances(dist))
    att, tr = mnist_records()
    rows = [dict(dataset=r["dataset"], model=r["model"], optimizer=r["optimizer"],
                 supervision=r["supervision"], seed=r["seed"], grid=r["grid"], attack="worst",
                 eps=float(e), robust_acc=v, n=100)
            for r in att for e, v in r["robust_acc"]["worst"].items()]  # fmt: skip
    labels = {"models": {"m1": {"kind": "prelu", "p": 1}, "m4": {"kind": "prelu", "p": 4}}}
    df = label_runs(pd.DataFrame(rows), labels)
    assert df.p.tolist()[:3] == [1.0, 1.0, 1.0]
    check_figure(mnist_robust_accuracy(df))
