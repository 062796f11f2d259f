"""Configuration of Study PRELU: the prelu model kind, alpha / holdout data keys, the study's
two halves and their cross-checks; every bad value names its key path. Also the alpha sweep
that derives the datasets <base>@alpha=<value> (shared with Study FA's scaling sweep)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from config_helpers import assert_rejected, bad_cases, merged

from ibrobust.attacks.policy import attack_applies, grid_attacks, radius_grids
from ibrobust.config import ConfigError, load_schema, validate_config
from ibrobust.studies.expansion import derived_datasets, sweep_dataset

REPO = Path(__file__).resolve().parents[2]
SCHEMA = load_schema(REPO / "schemas" / "config.schema.yaml")
BASE = yaml.safe_load((REPO / "config.yaml").read_text())


def test_defaults_and_pruning():
    cfg = validate_config(BASE, SCHEMA)
    p3 = cfg["models"]["prelu_p3"]
    assert p3 == {
        "kind": "prelu",
        "width": 100,
        "p": 3,
        "init": "normal",
        "init_std": 1e-7,
        "normalize_input": False,
        "out_bias": False,
        "normalize": "none",
        "binary_heads": 1,
    }
    assert "m" not in cfg["models"]["prelu_p1"] and "p" not in cfg["models"]["cnn_small"]
    assert cfg["datasets"]["clusters_d1000"]["alpha"] is None  # Study FA: sigma as before
    assert cfg["datasets"]["mnist_parity"]["holdout"] is None
    st = cfg["studies"]["prelu"]
    assert st["enabled"] and st["synthetic"]["probes"] == 2000
    assert st["mnist"]["attack_points"] == 1000 and set(st["mnist"]["radii"]) == {
        "linf",
        "l2",
        "l1",
    }


def test_alpha_variants():
    cfg = validate_config(BASE, SCHEMA)
    derived = derived_datasets(cfg)
    # alpha 0.1 is the base entry's own: its jobs are reused, no variant
    assert sweep_dataset(cfg, "prelu_clusters", "alpha", 0.1) == "prelu_clusters"
    assert sweep_dataset(cfg, "prelu_clusters", "alpha", 0.05) == "prelu_clusters@alpha=0.05"
    names = sorted(n for n in derived if n.startswith("prelu_clusters@"))
    assert names == [f"prelu_clusters@alpha={a}" for a in ("0.01", "0.05", "0.15", "0.2", "0.3")]
    v = derived["prelu_clusters@alpha=0.3"]
    assert v["alpha"] == 0.3 and v["d"] == 200 and v["positive"] == [0, 1, 2, 3, 4, 5]
    # Study FA's scaling variants come from the same code, named as before
    assert {"clusters_d1000@k=2", "clusters_d1000@k=4", "clusters_d1000@k=20"} <= set(derived)
    assert derived["clusters_d1000@k=2"]["k"] == 2


def test_grids_and_attack_selection():
    cfg = validate_config(BASE, SCHEMA)
    mn = cfg["studies"]["prelu"]["mnist"]
    grids = radius_grids(mn["radii"])
    assert list(grids) == ["l2", "linf", "l1"] and grids["l1"] == [0.0, 5.0, 10.0]
    assert grid_attacks(cfg, mn["attacks"], "l1") == ["apgdce_l1"]
    assert radius_grids([0, 1]) == {"main": [0.0, 1.0]}
    a = cfg["attacks"]
    assert attack_applies(a["pgd_margin_prelu"], "binary", "binary")
    assert not attack_applies(a["pgd_margin_prelu"], "multiclass", "fine")  # aims at the readout
    assert not attack_applies(a["universal"], "multiclass", "fine")
    assert attack_applies(a["pgd_ce"], "multiclass", "fine")
    assert not attack_applies(a["pgd_ce"], "binary", "binary")
    assert attack_applies(a["apgdce_linf"], "multiclass", "fine")
    assert attack_applies(a["pgd_margin"], "multiclass", "binary")  # Study FA: binary readout


def test_paper_overlay_validates():
    paper = yaml.safe_load((REPO / "configs" / "prelu_paper.yaml").read_text())
    cfg = validate_config(merged(BASE, paper), SCHEMA)
    ds = cfg["datasets"][cfg["studies"]["prelu"]["synthetic"]["dataset"]]
    assert ds["d"] == 1000 and ds["n_train"] == 20000
    syn = cfg["studies"]["prelu"]["synthetic"]
    assert len(syn["alphas"]) == 15 and min(syn["alphas"]) == 0.01 and max(syn["alphas"]) == 0.3
    assert len(syn["seeds"]) == 5
    assert all(cfg["models"][m]["width"] == 2000 for m in syn["models"])
    assert cfg["optimizers"][syn["optimizers"][0]]["epochs"] == 401
    mn = cfg["studies"]["prelu"]["mnist"]
    assert cfg["optimizers"][mn["optimizers"][0]]["epochs"] == 51
    assert all(cfg["models"][m]["width"] == 500 for m in mn["models"])
    assert cfg["datasets"][mn["datasets"][0]]["n_train"] is None  # all 50000 images


SYN = "studies.prelu.synthetic"
MN = "studies.prelu.mnist"
AA_L3 = {"kind": "autoattack", "norm": "l1", "version": "standard", "attacks": ["apgd-ce"]}
BAD = [
    ("prelu-without-width", {"models": {"x": {"kind": "prelu", "p": 2}}}, "models.x.width", "'width' is a required property of kind 'prelu'"),
    ("prelu-p-below-1", {"models": {"prelu_p1": {"p": 0.5}}}, "models.prelu_p1.p", "minimum of 1"),
    ("prelu-standardize", {"models": {"prelu_p1": {"normalize": "standardize"}}}, "models.prelu_p1.normalize", "is not one of ['none', 'center']"),
    ("prelu-with-m", {"models": {"prelu_p1": {"m": 3}}}, "models.prelu_p1.m", "not a setting of kind 'prelu'"),
    ("binary-heads-3", {"models": {"prelu_p1": {"binary_heads": 3}}}, "models.prelu_p1.binary_heads", "is not one of"),
    ("init-enum", {"models": {"prelu_p1": {"init": "xavier"}}}, "models.prelu_p1.init", "is not one of"),
    ("alpha-and-sigma", {"datasets": {"prelu_clusters": {"sigma": 0.5}}}, "datasets.prelu_clusters.sigma", "either sigma or alpha"),
    ("alpha-negative", {"datasets": {"prelu_clusters": {"alpha": -0.1}}}, "datasets.prelu_clusters.alpha", "minimum"),
    ("holdout-zero", {"datasets": {"mnist_parity_full": {"holdout": 0}}}, "datasets.mnist_parity_full.holdout", "minimum"),
    ("no-half", {"studies": {"prelu": {"synthetic": None, "mnist": None}}}, "studies.prelu", "synthetic or an mnist half"),
    ("unknown-key", {"studies": {"prelu": {"synthetic": {"epochs": 3}}}}, f"{SYN}.epochs", "unknown key"),
    ("synthetic-image-data", {"studies": {"prelu": {"synthetic": {"dataset": "mnist_parity"}}}}, f"{SYN}.dataset", "needs flat data (kinds: clusters)"),
    ("synthetic-undefined-model", {"studies": {"prelu": {"synthetic": {"models": ["nope"]}}}}, f"{SYN}.models[0]", "not defined under models"),
    ("synthetic-two-layer", {"studies": {"prelu": {"synthetic": {"models": ["two_layer_m5"]}}}}, f"{SYN}.models[0]", "alignment analysis reads"),
    ("synthetic-autoattack", {"studies": {"prelu": {"synthetic": {"attacks": ["apgdce_l2"]}}}}, f"{SYN}.attacks[0]", "needs inputs in a box"),
    ("synthetic-alpha-negative", {"studies": {"prelu": {"synthetic": {"alphas": [0.1, -0.2]}}}}, f"{SYN}.alphas[1]", "minimum"),
    ("figure-alpha-off-grid", {"studies": {"prelu": {"synthetic": {"figure_alpha": 0.12}}}}, f"{SYN}.figure_alpha", "not one of alphas"),
    ("no-attack-for-multiclass", {"studies": {"prelu": {"synthetic": {"supervisions": ["binary", "multiclass"], "optimizers": ["adam_img"]}}}}, f"{SYN}.radii", "no attack"),
    ("exp-loss-multiclass", {"studies": {"prelu": {"synthetic": {"supervisions": ["binary", "multiclass"], "attacks": ["pgd_margin_prelu", "pgd_ce"]}}}}, f"{SYN}.optimizers[0]", "exponential"),
    ("radii-one-value", {"studies": {"prelu": {"synthetic": {"radii": [0.5]}}}}, f"{SYN}.radii", "too short"),
    ("mnist-clusters", {"studies": {"prelu": {"mnist": {"datasets": ["clusters_d1000"]}}}}, f"{MN}.datasets[0]", "needs image"),
    ("mnist-universal", {"studies": {"prelu": {"mnist": {"attacks": ["universal"]}}}}, f"{MN}.attacks[0]", "needs cluster means"),
    ("mnist-two-layer", {"studies": {"prelu": {"mnist": {"models": ["two_layer_m5"]}}}}, f"{MN}.models[0]", "takes ['flat'] inputs, not the image data"),
    ("mnist-unknown-norm", {"studies": {"prelu": {"mnist": {"radii": {"l3": [0.0, 1.0]}}}}}, f"{MN}.radii.l3", "unknown key"),
    ("mnist-negative-radius", {"studies": {"prelu": {"mnist": {"radii": {"l1": [0.0, -5.0]}}}}}, f"{MN}.radii.l1[1]", "minimum"),
    ("mnist-grid-without-attack", {"attacks": {"aa_l1": AA_L3}, "studies": {"prelu": {"mnist": {"attacks": ["apgdce_linf", "apgdce_l2"], "radii": {"linf": [0.0, 0.1], "l2": [0.0, 1.0], "l1": [0.0, 5.0]}}}}}, f"{MN}.radii.l1", "no attack"),
    ("mnist-fine-loss-without-multiclass", {"studies": {"prelu": {"mnist": {"supervisions": ["binary"], "attacks": ["pgd_ce_img"], "radii": [0.0, 1.0]}}}}, f"{MN}.attacks[0]", "no multiclass model"),
    ("matmul-fp16", {"optimizers": {"adam_prelu": {"matmul": "fp16"}}}, "optimizers.adam_prelu.matmul", "is not one of"),
    ("bf16-for-a-cnn", {"optimizers": {"adam_img": {"matmul": "bf16"}}}, "optimizers.adam_img.matmul", "only in the pReLU loop"),
    ("bf16-with-momentum", {"optimizers": {"sgd_prelu": {"matmul": "bf16", "momentum": 0.9}}}, "optimizers.sgd_prelu.matmul", "trains 'prelu_p1'"),
    ("mnist-full-aa-on-binary", {"attacks": {"apgdce_linf": {"attacks": None}}}, f"{MN}.attacks[0]", "two logits"),
]  # fmt: skip


@pytest.mark.parametrize(("overlay", "key", "fragment"), bad_cases(BAD))
def test_bad_prelu_config_names_the_key(overlay, key, fragment):
    assert_rejected(merged(BASE, overlay), SCHEMA, key, fragment)


def test_attack_norm_without_a_grid():
    cfg = copy.deepcopy(BASE)
    del cfg["studies"]["prelu"]["mnist"]["radii"]["l1"]  # apgdce_l1 would never run
    with pytest.raises(ConfigError, match=rf"config key {MN}\.attacks\[2\]: .*no l1 grid"):
        validate_config(cfg, SCHEMA)


def test_list_radii_keep_the_main_grid():
    cfg = validate_config(
        merged(BASE, {"studies": {"prelu": {"mnist": {"radii": [0.0, 0.05, 0.1]}}}}), SCHEMA
    )
    assert radius_grids(cfg["studies"]["prelu"]["mnist"]["radii"]) == {"main": [0.0, 0.05, 0.1]}


def test_cross_paper_entries_are_one_config_entry():
    """A pReLU net in Study FA (clusters, multiclass) and sign descent on a pReLU net."""
    overlay = {
        "optimizers": {"sign_gd": {"kind": "gd", "norm": "linf", "scale": "unit", "lr": 1e-3}},
        "studies": {
            "fa": {"models": ["two_layer_m5", "prelu_p3"]},
            "prelu": {"synthetic": {"optimizers": ["sgd_prelu", "sign_gd"]}},
            "fa_images": {"models": ["cnn_small", "prelu_mnist_p2"]},
        },
    }
    cfg = validate_config(merged(BASE, overlay), SCHEMA)
    assert cfg["studies"]["fa"]["models"][1] == "prelu_p3"


def test_bf16_products_are_one_optimizer_key_for_prelu_training():
    from ibrobust.training.prelu import prelu_train_fields

    cfg = validate_config(
        merged(
            BASE,
            {"optimizers": {"sgd_prelu": {"matmul": "bf16"}, "adam_prelu": {"matmul": "fp32"}}},
        ),
        SCHEMA,
    )
    assert prelu_train_fields(cfg["optimizers"]["sgd_prelu"], "binary")["matmul"] == "bf16"
    assert prelu_train_fields(cfg["optimizers"]["adam_prelu"], "multiclass")["matmul"] == "fp32"
    # absent = fp32, and absent from the job's params (adding the key reruns nothing)
    default = validate_config(merged(BASE, {}), SCHEMA)
    assert "matmul" not in default["optimizers"]["sgd_prelu"]
    assert "matmul" not in prelu_train_fields(default["optimizers"]["sgd_prelu"], "binary")
