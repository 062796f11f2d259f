"""Configuration of Study PRICE-LIN: the shipped configs validate, kind-specific defaults are
filled, and bad values are rejected with the key path (Study FA's behaviour is unchanged)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from config_helpers import assert_rejected, bad_cases, merged

from ibrobust.config import load_schema, validate_config

REPO = Path(__file__).resolve().parents[2]
SCHEMA = load_schema(REPO / "schemas" / "config.schema.yaml")
BASE = yaml.safe_load((REPO / "config.yaml").read_text())
TINY_PRICE = yaml.safe_load(
    (REPO / "tests" / "workflow" / "configs" / "tiny_price.yaml").read_text()
)


def test_default_config_has_an_enabled_price_study_with_defaults():
    cfg = validate_config(BASE, SCHEMA)
    st = cfg["studies"]["price_linear"]
    assert st["enabled"] and st["kind"] == "price_linear"
    assert 0.0 in st["eps_fractions"] and max(st["eps_fractions"]) < 1
    assert set(st["stopping"]) == {"loss_threshold", "max_iters"}
    assert cfg["optimizers"]["lin_cd"]["norm"] == "l1"
    assert cfg["optimizers"]["lin_cd"]["lr_max"] is None  # steepest default: no cap
    assert cfg["optimizers"]["diag_gd"]["adaptive"] is True
    # kinds keep their own defaults: gd keeps lr 0.5 (and gets no steepest-only keys)
    gd = cfg["optimizers"]["gd"]
    assert gd["lr"] == 0.5 and gd["norm"] == "l2" and "c_scale" not in gd and "tie" not in gd
    assert cfg["datasets"]["teacher_w4_x4"]["w_support"] == "exact"
    assert "sigma" not in cfg["datasets"]["teacher_w4_x4"]


def test_tiny_price_overlay_validates():
    cfg = validate_config(merged(BASE, TINY_PRICE), SCHEMA)
    assert cfg["only_studies"] == ["price_linear"]  # its own study only, the others kept
    assert cfg["studies"]["price_linear"]["n_train"] == [8, 16]


BAD = [
    ("k-w-above-d", {"datasets": {"teacher_w4_x4": {"k_w": 600}}}, "datasets.teacher_w4_x4.k_w", "<= d"),
    ("teacher-sigma", {"datasets": {"teacher_w4_x4": {"sigma": 1.0}}}, "datasets.teacher_w4_x4", "unknown key"),
    ("entries-enum", {"datasets": {"teacher_w4_x4": {"entries": "binary"}}}, "datasets.teacher_w4_x4.entries", "'binary' is not one of"),
    ("norm-enum", {"optimizers": {"lin_cd": {"norm": "l3"}}}, "optimizers.lin_cd.norm", "'l3' is not one of"),
    ("tie-on-gd", {"optimizers": {"gd": {"tie": "first"}}}, "optimizers.gd", "unknown key"),
    ("c-scale-zero", {"optimizers": {"diag_gd": {"c_scale": 0}}}, "optimizers.diag_gd.c_scale", "0"),
    ("eps-at-margin", {"studies": {"price_linear": {"eps_fractions": [0.0, 1.0]}}}, "studies.price_linear.eps_fractions[1]", "maximum"),
    ("eps-without-erm", {"studies": {"price_linear": {"eps_fractions": [0.5, 0.9]}}}, "studies.price_linear.eps_fractions", "must contain 0"),
    ("clusters-regime", {"studies": {"price_linear": {"datasets": ["clusters_d1000"]}}}, "studies.price_linear.datasets[0]", "needs draws data (kinds: teacher)"),
    ("fa-optimizer", {"studies": {"price_linear": {"optimizers": ["lin_gd", "gd"], "gap_difference": ["lin_gd", "gd"]}}}, "studies.price_linear.optimizers[1]", "optimizers of linear models"),
    ("steepest-in-fa", {"studies": {"fa": {"optimizers": ["lin_gd"]}}}, "studies.fa.optimizers[0]", "optimizers of network models"),
    ("gap-pair-unknown", {"studies": {"price_linear": {"gap_difference": ["lin_gd", "lin_xx"]}}}, "studies.price_linear.gap_difference[1]", "not one of the study's optimizers"),
    ("stopping-key", {"studies": {"price_linear": {"stopping": {"patience": 3}}}}, "studies.price_linear.stopping.patience", "unknown key"),
    ("threshold-one", {"studies": {"price_linear": {"stopping": {"loss_threshold": 1.0}}}}, "studies.price_linear.stopping.loss_threshold", "maximum"),
    ("fa-key-in-price", {"studies": {"price_linear": {"radii": [0.0, 1.0]}}}, "studies.price_linear.radii", "unknown key"),
    ("n-too-small", {"studies": {"price_linear": {"n_train": [1, 16]}}}, "studies.price_linear.n_train[0]", "minimum"),
]  # fmt: skip


@pytest.mark.parametrize(("overlay", "key", "fragment"), bad_cases(BAD))
def test_bad_price_config_names_the_key(overlay, key, fragment):
    assert_rejected(merged(BASE, overlay), SCHEMA, key, fragment)
