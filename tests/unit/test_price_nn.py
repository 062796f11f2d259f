"""Study PRICE-NN: the config checks (robust ERM as an optimizer setting, the eps grid, the
schedule of sign descent; each refusal names its key), the derived optimizers and runs, the
curves hook of the generic trainer, and the tables and figures from their CSV frames."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml
from config_helpers import assert_rejected, bad_cases, merged

from ibrobust.claims.core import NotRun, StudyContext
from ibrobust.config import load_schema, validate_config
from ibrobust.models.fc import FCConfig, build_fc
from ibrobust.seeding import torch_generator
from ibrobust.studies import price_nn as study
from ibrobust.studies.expansion import derived_optimizers
from ibrobust.studies.price_nn import plots
from ibrobust.studies.price_nn import rows as P
from ibrobust.studies.price_nn import tables as T
from ibrobust.training.adversarial import AdversarialConfig
from ibrobust.training.curves import CurveRecorder
from ibrobust.training.network import NetTrainConfig, net_train_fields, train_network

torch.set_num_threads(1)
REPO = Path(__file__).resolve().parents[2]
SCHEMA = load_schema(REPO / "schemas" / "config.schema.yaml")
BASE = yaml.safe_load((REPO / "config.yaml").read_text())
TINY = yaml.safe_load((REPO / "tests/workflow/configs/tiny_price_nn.yaml").read_text())


@pytest.mark.parametrize(
    ("overlay", "key", "fragment"),
    bad_cases(
        [
            ("negative eps", {"optimizers": {"price_fc_gd": {"adversarial": {"eps": -0.1}}}},
             "optimizers.price_fc_gd.adversarial.eps", "minimum of 0"),
            ("linf eps above 1", {"optimizers": {"price_fc_sd": {"adversarial": {"eps": 1.5}}}},
             "optimizers.price_fc_sd.adversarial.eps", "outside [0, 1.0]"),
            ("eps grid above 1", {"studies": {"price_nn": {"fc": {"eps": [0.0, 1.2]}}}},
             "studies.price_nn.fc.eps[1]", "outside [0, 1.0]"),
            ("negative eps grid", {"studies": {"price_nn": {"cnn": {"eps": [-0.1]}}}},
             "studies.price_nn.cnn.eps[0]", "minimum of 0"),
            ("sign descent schedule", {"optimizers": {"price_fc_sd": {"lr_schedule": "adaptive"}}},
             "optimizers.price_fc_sd.lr_schedule", "'adaptive' is not one of ['constant']"),
            ("unknown adversarial key", {"optimizers": {"gd": {"adversarial": {"restarts": 2}}}},
             "optimizers.gd.adversarial.restarts", "unknown key"),
            ("cnn half trains a flat-only net", {"studies": {"price_nn": {"cnn": {"models": ["two_layer_m5"]}}}},
             "studies.price_nn.cnn.models[0]", "takes ['flat'] inputs"),
            ("sgd base optimizer", {"studies": {"price_nn": {"fc": {"optimizers": ["adam_img"]}}}},
             "studies.price_nn.fc.optimizers[0]", "full-batch optimizers of network models"),
            ("hard optimizer differs in lr", {"optimizers": {"price_cnn_sd_hard": {"lr": 0.5}}},
             "studies.price_nn.cnn.hard_cells.optimizers[1]", "differs from 'price_cnn_sd' in ['lr']"),
            ("binary attack on the 10-class half", {"studies": {"price_nn": {"cnn": {"attacks": ["pgd_linf_train", "apgdce_linf"]}}}},
             "studies.price_nn.cnn.attacks[0]", "does not apply to multiclass models"),
            ("exponential loss on 10 classes", {"optimizers": {"price_cnn_gd": {"loss": "exponential"}, "price_cnn_gd_hard": {"loss": "exponential"}}},
             "studies.price_nn.cnn.optimizers[0]", "exponential loss"),
        ]
    ),
)  # fmt: skip
def test_bad_settings_are_refused_naming_the_key(overlay, key, fragment):
    assert_rejected(merged(BASE, overlay), SCHEMA, key, fragment)


def test_eps_grid_derives_optimizer_variants_and_labelled_runs():
    cfg = validate_config(BASE, SCHEMA)
    st = cfg["studies"]["price_nn"]
    opts = derived_optimizers(cfg)
    assert opts["price_fc_sd@eps=0.1"]["adversarial"]["eps"] == 0.1
    assert opts["price_fc_sd@eps=0"]["adversarial"]["eps"] == 0.0
    assert opts["price_fc_sd@eps=0.1"]["norm"] == "linf"
    runs = study.runs(cfg, "price_nn", "fc")
    assert {(r["algorithm"], r["eps"]) for r in runs} == {
        ("gd", 0.0), ("gd", 0.1), ("sd", 0.0), ("sd", 0.1)
    }  # fmt: skip
    assert {r["supervision"] for r in runs} == {"binary"}
    cnn = study.runs(cfg, "price_nn", "cnn")
    half = st["cnn"]
    assert {r["dataset"] for r in cnn} == {
        study.sweep_dataset(cfg, "mnist10", "n_train", n) for n in half["n_train"]
    }
    assert {r["supervision"] for r in cnn} == {"multiclass"}
    # every (n, eps, seed) cell trains one GD and one SD net; the hard cells their own pair
    assert len(cnn) == 2 * len(half["n_train"]) * len(half["eps"]) * len(half["seeds"])
    hard = set(half["hard_cells"]["eps"])
    for r in cnn:
        base = r["optimizer"].split("@")[0]
        assert base.endswith("_hard") == (r["eps"] in hard)
        assert base.endswith(
            f"_{r['algorithm']}_hard" if r["eps"] in hard else f"_{r['algorithm']}"
        )
    fc_part, cnn_part = study.parts(cfg, st)
    # each run is attacked at 0 and its own training eps only
    assert cnn_part["run_radii"]["price_cnn_gd@eps=0.1"] == [0.0, 0.1]
    assert cnn_part["run_radii"]["price_cnn_sd@eps=0"] == [0.0]
    assert set(cnn_part["run_radii"]) == {r["optimizer"] for r in cnn}


def test_a_hard_cell_optimizer_differs_in_stop_loss_only():
    cfg = validate_config(BASE, SCHEMA)
    for base, hard in zip(["price_cnn_gd", "price_cnn_sd"],
                          cfg["studies"]["price_nn"]["cnn"]["hard_cells"]["optimizers"], strict=True):  # fmt: skip
        a, b = cfg["optimizers"][base], cfg["optimizers"][hard]
        assert {k: v for k, v in a.items() if k != "stop_loss"} == {
            k: v for k, v in b.items() if k != "stop_loss"
        }
        assert b["stop_loss"] > a["stop_loss"]


def test_the_cnn_half_is_judged_on_the_fine_labels():
    assert study.task("multiclass") == "fine" and study.task("binary") == "binary"


def test_any_network_optimizer_takes_the_adversarial_block():
    """Robust ERM is an optimizer setting: a gd / adam entry maps to NetTrainConfig."""
    f = net_train_fields({"kind": "adam", "lr": 1e-3, "adversarial": {"eps": 0.3, "norm": "l2"}})
    assert f["adversarial"] == AdversarialConfig(eps=0.3, norm="l2")
    assert NetTrainConfig(**f).adversarial.active
    cfg = validate_config(BASE, SCHEMA)
    plain = NetTrainConfig(**net_train_fields(cfg["optimizers"]["gd"])).adversarial
    assert plain is None or not plain.active  # no block: plain ERM


def test_tiny_workflow_config_is_valid():
    cfg = validate_config(TINY, SCHEMA)
    assert len(study.runs(cfg, "tiny_price_nn", "fc")) == 8
    assert {r["supervision"] for r in study.runs(cfg, "tiny_price_nn", "cnn")} == {"multiclass"}


def test_paper_overlay_is_valid_and_resets_the_width():
    overlay = yaml.safe_load((REPO / "configs" / "price_nn_paper.yaml").read_text())
    cfg = validate_config(merged(BASE, overlay), SCHEMA)
    m = cfg["models"]["madry_cnn_cpu"]
    assert (m["channels"], m["hidden"], m["width_multiplier"]) == ([32, 64], [1024], 1)


def test_curves_hook_adds_clean_and_robust_accuracy_every_eval_every_epochs():
    gen = torch_generator(0, "t")
    x = torch.rand(8, 1, 4, 4, generator=gen)
    y = torch.tensor([1.0, -1.0] * 4)
    fine = (y < 0).long()
    net = build_fc(FCConfig(width=6, init_scale=0.5), (1, 4, 4), torch.ones(1), gen)
    adv = AdversarialConfig(eps=0.1, steps=2)
    rec = CurveRecorder((x, y, fine), (x, y, fine), "binary", adv, seed=0, points=4)
    cfg = NetTrainConfig(algorithm="gd", lr=0.1, max_epochs=5, log_every=100, eval_every=2,
                         loss="exponential", adversarial=adv)  # fmt: skip
    res = train_network(net, x, y, fine, "binary", cfg, 0, "cpu", on_eval=rec)
    assert [h["epoch"] for h in res.history] == [2, 4, 5]
    for h in res.history:
        assert set(h) >= {"train_acc", "test_acc", "robust_train_acc", "robust_test_acc"}
        assert h["robust_train_acc"] <= h["train_acc"]
        assert h["test_acc"] in {0.0, 0.25, 0.5, 0.75, 1.0}  # 4 test points
    with torch.no_grad():
        acc = float(((net(x)[:, 0] * y) > 0).float().mean())
    assert res.history[-1]["train_acc"] == pytest.approx(acc)
    erm = CurveRecorder((x, y, fine), (x, y, fine), "binary", AdversarialConfig(), seed=0)(net)
    assert erm["robust_train_acc"] == erm["train_acc"]


def test_final_row_reads_the_run_at_its_training_eps():
    run = {"arch": "fc", "algorithm": "sd", "eps": 0.1, "n": 100, "seed": 0, "optimizer": "o"}
    hist = pd.DataFrame([
        {"epoch": 1, "loss": 1.0, "train_acc": 0.5, "robust_train_acc": 0.4, "robust_test_acc": 0.3},
        {"epoch": 2, "loss": 0.5, "train_acc": 0.9, "robust_train_acc": 0.8, "robust_test_acc": 0.85},
        {"epoch": 3, "loss": 0.3, "train_acc": None, "robust_train_acc": None, "robust_test_acc": None},
        {"epoch": 4, "loss": 0.1, "train_acc": 1.0, "robust_train_acc": 0.9, "robust_test_acc": 0.8},
    ])  # fmt: skip
    attack = {"clean_acc": 0.95, "n_points": 40, "robust_acc": {"a": {"0.0": 0.95, "0.1": 0.7},
                                                 "worst": {"0.0": 0.95, "0.1": 0.6}}}  # fmt: skip
    row = P.final_row(run, hist, {"train.steps": 4.0, "train.converged": 0.0}, attack)
    assert row["robust_test_acc_train_pgd"] == 0.8 and row["robust_test_acc_worst"] == 0.6
    assert row["robust_test_acc_a"] == 0.7 and row["test_acc"] == 0.95
    assert row["attack_points"] == 40  # the attack job's measured count
    assert row["epochs"] == 4 and row["final_loss"] == 0.1 and not row["reached_stop_loss"]
    # robust overfitting: the best curve point (epoch 2) vs the end
    assert (row["robust_test_acc_best"], row["best_epoch"]) == (0.85, 2)
    assert row["robust_train_err"] == pytest.approx(0.1)
    assert not row["fitted"]  # FC: fitted = 100 % robust train accuracy at the end
    assert row["epochs_to_threshold"] is None
    with pytest.raises(ValueError, match="no radius 0.2"):
        P.final_row({**run, "eps": 0.2}, hist, {"train.steps": 3.0}, attack)


def test_fitted_is_the_threshold_for_the_cnn_and_full_robust_fit_for_the_fc():
    assert P.is_fitted("cnn", True, 0.9)  # reported at its threshold: train error 0 there
    assert not P.is_fitted("cnn", False, 1.0)  # never reached its threshold within max_steps
    assert P.is_fitted("fc", False, 1.0) and not P.is_fitted("fc", True, 0.99)


def test_paired_differences_by_hand():
    rows = [
        {"arch": "fc", "eps": 0.1, "n": 100, "seed": s, "algorithm": a, "acc": v}
        for s, a, v in [
            (0, "gd", 0.80), (0, "sd", 0.85), (1, "gd", 0.70), (1, "sd", 0.73),
            (2, "gd", 0.90), (2, "sd", 0.88), (3, "gd", 0.5),  # seed 3 has no sd run
        ]
    ]  # fmt: skip
    (d,) = T.paired_differences(rows, "acc", "sd", "gd")
    assert d["seeds"] == 3
    assert d["mean"] == pytest.approx((5 + 3 - 2) / 3)
    assert d["min"] == pytest.approx(-2) and d["max"] == pytest.approx(5)
    assert d["std"] == pytest.approx(pd.Series([5.0, 3.0, -2.0]).std())
    assert d["per_seed"] == "+5.00 +3.00 -2.00"


def _cnn_row(seed, algorithm, acc, fitted, reached=None):
    return {"arch": "cnn", "eps": 0.2, "n": 50, "seed": seed, "algorithm": algorithm,
            "robust_test_acc_worst": acc, "robust_train_acc_train_pgd": 1.0 if fitted else 0.1,
            "robust_train_err": 0.0 if fitted else 0.9, "fitted": fitted, "test_acc": acc + 0.1,
            "epochs": 100, "reached_stop_loss": fitted if reached is None else reached,
            "epochs_to_threshold": 100 if fitted else None, "final_loss": 0.01 if fitted else 2.3,
            "robust_test_acc_train_pgd": acc, "robust_test_acc_best": acc, "best_epoch": 100}  # fmt: skip


def test_a_cell_is_fitted_only_when_every_run_fit_the_training_set():
    ok = [_cnn_row(0, "gd", 0.7, True), _cnn_row(0, "sd", 0.6, True)]
    (d,) = T.paired_differences(ok, "robust_test_acc_worst", "gd", "sd")
    assert d["fitted"] and d["mean"] == pytest.approx(10) and d["per_seed_fitted"] == "1"
    gd_collapsed = [*ok, _cnn_row(1, "gd", 0.1, False), _cnn_row(1, "sd", 0.6, True)]
    (d,) = T.paired_differences(gd_collapsed, "robust_test_acc_worst", "gd", "sd")
    assert not d["fitted"] and d["seed_ids"] == "0 1" and d["per_seed_fitted"] == "1 0"
    assert d["seeds_fitted"] == 1
    md = T.summary_markdown([], [d], [], gd_collapsed)
    assert "not compared: GD seed 1 did not fit the training set" in md and "SD ahead" not in md
    assert "NOT fitted" in md and "not reached in 100 epochs" in md


def test_cells_table_pairs_both_algorithms_per_cell_and_seed():
    rows = [_cnn_row(0, "gd", 0.7, True), _cnn_row(0, "sd", 0.6, True),
            _cnn_row(1, "gd", 0.1, False), _cnn_row(1, "sd", 0.6, True)]  # fmt: skip
    rows[0] = {**rows[0], "robust_test_acc_best": 0.75, "late_increase": 0.25}
    fc = [{**r, "arch": "fc"} for r in rows[:2]]
    t = T.cells_table(rows + fc)
    cnn = t[t.arch == "cnn"].set_index("seed")
    assert list(cnn.both_fitted) == [True, False]
    assert cnn.loc[0, "diff_robust_test"] == pytest.approx(10)  # GD - SD
    assert cnn.loc[0, "diff_clean_test"] == pytest.approx(10)
    # the claims' columns, copied from the final rows
    assert (cnn.loc[0, "gd_robust_test"], cnn.loc[0, "gd_clean_test"]) == (0.7, pytest.approx(0.8))
    assert (cnn.loc[0, "gd_robust_test_end"], cnn.loc[0, "gd_robust_test_best"]) == (0.7, 0.75)
    assert cnn.loc[0, "gd_late_increase"] == 0.25 and pd.isna(cnn.loc[0, "sd_late_increase"])
    assert (cnn.loc[1, "gd_robust_train"], cnn.loc[1, "sd_robust_train"]) == (0.1, 1.0)
    assert cnn.loc[1, "gd_fitted"] == False and pd.isna(cnn.loc[1, "gd_epochs_to_threshold"])  # noqa: E712
    (fc_row,) = t[t.arch == "fc"].itertuples()
    assert fc_row.difference == "sd-gd" and fc_row.diff_robust_test == pytest.approx(-10)
    assert fc_row.diff_clean_test == pytest.approx(-10)


def test_cells_table_has_every_column_the_claims_read():
    from ibrobust.studies.price_nn.measures import SOURCES

    rows = [_cnn_row(0, "gd", 0.7, True), _cnn_row(0, "sd", 0.6, True)]
    t = T.cells_table([{**r, "late_increase": 0.0} for r in rows])
    read = {c.name for c in SOURCES["cells"].numeric} | set(SOURCES["cells"].keys)
    assert read <= set(t.columns), read - set(t.columns)


def test_late_increase_by_hand():
    # 6 entries: the last half is the last 3, each against the one before: 2 -> 3 rises,
    # 3 -> 2 and 2 -> 1 fall: 1 / 3 (the first half's rise 4 -> 5 is not counted)
    assert P.late_increase([4.0, 5.0, 3.0, 2.0, 3.0, 1.0]) == pytest.approx(1 / 3)
    assert P.late_increase([5.0, 4.0, 3.0, 2.0, 1.0]) == 0.0  # falls only
    assert P.late_increase([1.0, 2.0, 1.0, 2.0, 1.0, 2.0, 1.0, 2.0]) == 0.5  # oscillates
    assert math.isnan(P.late_increase([1.0, 2.0, 3.0]))  # too short to have a late half


def test_cnn_claim_counts_only_fitted_cells():
    """A CNN cell's claim reads figures/cells.csv: one value per seed where both algorithms
    fitted (the verdicts: tests/unit/test_claims_price.py)."""
    from claims_fixtures import price_nn_cells

    from ibrobust.studies.price_nn import measures as C

    cells = price_nn_cells(cnn={(50, 0.1): (2.0, 4.0, 3.0)}, unfitted=[("cnn", 50, 0.1, 1)],
                           attack_points=200)  # fmt: skip
    ctx = StudyContext("price_nn", {"cnn": {"attack_points": 500}})  # asked 500, ran on 200
    m = C.cnn_cell(50, 0.1)({"cells": cells}, ctx)  # GD - SD in points, seeds 0 and 2
    assert m.values == pytest.approx((2.0, 3.0))
    assert (m.unit, m.points, m.labels) == ("seeds", 200, ("seed 0", "seed 2"))
    assert m.note == "2 of 3 seeds with both algorithms fitted"
    with pytest.raises(NotRun, match="where both algorithms fitted"):
        C.cnn_cell(50, 0.1)({"cells": cells.assign(sd_fitted=0.0)}, ctx)


def test_fc_table_and_heatmap_from_their_csv_frames():
    final = pd.DataFrame(
        [
            {"algorithm": a, "eps": e, "seed": s, "robust_test_acc_worst": v}
            for a, e, s, v in [("gd", 0.1, 0, 0.6), ("gd", 0.1, 1, 0.8), ("sd", 0.1, 0, 0.9)]
        ]
    )
    t = plots.fc_table(final, {"robust_test_acc_worst": "robust"})
    gd = t[t["algorithm"] == "GD"].iloc[0]
    assert gd["robust mean"] == pytest.approx(70) and gd["seeds"] == 2
    diff = pd.DataFrame(
        [{"n": 100, "eps": 0.1, "mean": 2.0, "per_seed": "+1.00 +3.00"},
         {"n": 400, "eps": 0.1, "mean": -1.0, "per_seed": "-1.00 +0.50"}]
    )  # fmt: skip
    fig = plots.difference_heatmap(diff, "t", "GD - SD")
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert "+2.0\n2 of 2 seeds" in texts and "-1.0\n1 of 2 seeds" in texts
    assert "how many seeds share its sign" in fig.axes[0].get_title()
    # a cell where a run did not fit its training set is no comparison: grey, and says so
    fig = plots.difference_heatmap(diff.assign(fitted=[True, False]), "t", "GD - SD")
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert "+2.0\n2 of 2 seeds" in texts and "-1.0\nnot fitted" in texts
    shown = fig.axes[0].images[0].get_array()
    assert not shown.mask[0, 0] and shown.mask[1, 0]  # rows: n = 100, 400


def test_fa_robust_cross_paper_entry_trains_fa_nets_by_robust_erm():
    """configs/cross_paper.yaml's fa_robust: Study FA's nets, GD + an adversarial block."""
    from ibrobust import kinds

    overlay = yaml.safe_load((REPO / "configs" / "cross_paper.yaml").read_text())
    cfg = validate_config(merged(BASE, overlay), SCHEMA)
    opt = cfg["optimizers"]["gd_robust_fa"]
    assert kinds.trainer(cfg["models"]["two_layer_m5"], opt) == "network"
    adv = NetTrainConfig(**net_train_fields(opt)).adversarial
    assert adv == AdversarialConfig(eps=4.0, norm="l2", steps=10, box=None)
