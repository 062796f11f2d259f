"""Configuration of Study MARGIN: the shipped configs validate (the study is disabled by
default), and bad values are refused before any job runs with the key path: thresholds not
strictly decreasing, alpha <= 0 (or NaN), a non-homogeneous model, a cross-check sample
larger than the attacked points."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from config_helpers import assert_rejected, bad_cases, merged

from ibrobust.config import load_schema, validate_config
from ibrobust.studies import margin as study

REPO = Path(__file__).resolve().parents[2]
SCHEMA = load_schema(REPO / "schemas" / "config.schema.yaml")
BASE = yaml.safe_load((REPO / "config.yaml").read_text())
W = "studies.margin"


def test_default_config_has_a_disabled_margin_study():
    cfg = validate_config(BASE, SCHEMA)
    st = cfg["studies"]["margin"]
    assert st["kind"] == "margin" and st["enabled"] is False
    assert cfg["models"]["margin_cnn"] == {
        "kind": "homogeneous_cnn", "channels": [32, 64], "kernels": [5, 3], "hidden": [1024],
        "first_bias": True, "channels_last": False,
    }  # fmt: skip
    th = st["training"]["checkpoint_log10_losses"]
    assert all(b < a for a, b in zip(th, th[1:], strict=False))


@pytest.mark.parametrize("overlay", ["tiny_margin.yaml", "../../../configs/margin_paper.yaml"])
def test_overlays_validate(overlay):
    path = REPO / "tests" / "workflow" / "configs" / overlay
    cfg = validate_config(merged(BASE, yaml.safe_load(path.read_text())), SCHEMA)
    assert cfg["studies"]["margin"]["training"]["alpha"] > 0


def _tr(**kw):
    return {"studies": {"margin": {"training": kw}}}


BAD = [
    ("thresholds-increasing", _tr(checkpoint_log10_losses=[-10.0, -5.0]), f"{W}.training.checkpoint_log10_losses", "strictly decreasing"),
    ("thresholds-equal", _tr(checkpoint_log10_losses=[-10.0, -10.0]), f"{W}.training.checkpoint_log10_losses", "strictly decreasing"),
    ("thresholds-nan", _tr(checkpoint_log10_losses=[-10.0, float("nan")]), f"{W}.training.checkpoint_log10_losses", "finite"),
    ("alpha-zero", _tr(alpha=0.0), f"{W}.training.alpha", "> 0"),
    ("alpha-negative", _tr(alpha=-0.1), f"{W}.training.alpha", "> 0"),
    ("alpha-nan", _tr(alpha=float("nan")), f"{W}.training.alpha", "finite"),
    ("dtype-enum", _tr(dtype="float16"), f"{W}.training.dtype", "'float16' is not one of"),
    ("flow-lr-zero", _tr(flow={"lr": 0.0}), f"{W}.training.flow.lr", "less than or equal to the minimum"),
    ("flow-lr-text", _tr(flow={"lr": "big"}), f"{W}.training.flow.lr", "is not of type 'number'"),
    ("flow-lr-missing", _tr(flow={"epochs": 10}), f"{W}.training.flow.lr", "'lr' is a required property"),
    ("flow-epochs-zero", _tr(flow={"lr": 0.1, "epochs": 0}), f"{W}.training.flow.epochs", "less than the minimum"),
    ("flow-log-every-float", _tr(flow={"lr": 0.1, "log_every": 2.5}), f"{W}.training.flow.log_every", "where an integer is meant"),
    ("flow-unknown-key", _tr(flow={"lr": 0.1, "batch_size": 5}), f"{W}.training.flow.batch_size", "unknown key"),
    ("biased-cnn", {"studies": {"margin": {"models": ["cnn_small"]}}}, f"{W}.models[0]", "not homogeneous"),
    ("prelu-net", {"studies": {"margin": {"models": ["prelu_mnist_p1"]}}}, f"{W}.models[0]", "not homogeneous"),
    ("bisection-too-many", {"studies": {"margin": {"robustness": {"attack_points": 5, "bisection_points": 6}}}}, f"{W}.robustness.bisection_points", "exceeds"),
    ("unknown-model", {"studies": {"margin": {"models": ["nope"]}}}, f"{W}.models[0]", "not defined"),
    ("teacher-data", {"studies": {"margin": {"datasets": ["teacher_w4_x4"]}}}, f"{W}.datasets[0]", "needs image or flat data"),
    ("cnn-two-hidden", {"models": {"margin_cnn": {"hidden": [8, 8]}}, "studies": {"margin": {"models": ["margin_cnn"]}}}, "models.margin_cnn.hidden", "one hidden layer"),
]  # fmt: skip


@pytest.mark.parametrize("overlay,key,fragment", bad_cases(BAD))
def test_bad_margin_config_is_refused_naming_the_key(overlay, key, fragment):
    assert_rejected(merged(BASE, overlay), SCHEMA, key, fragment)


# ---------------------------------------------------------------- planning


def test_margin_small_trains_a_constant_step_run_per_seed_in_the_loss_based_dtype():
    cfg = validate_config(BASE, SCHEMA)
    st = cfg["studies"]["margin_small"]
    assert study.has_flow(st) and not study.has_flow(cfg["studies"]["margin"])
    fl = study.flow(cfg, st, "margin_cnn_small")
    assert fl["lr"] > 0 and fl["dtype"] == st["training"]["dtype"] == "float64"
    assert "flow" not in study.training(cfg, st, "margin_cnn_small")  # loss-based params
    files = study.figures_inputs("margin_small", st)
    assert len(files["flow_history"]) == len(st["seeds"]) == len(files["history"])
    assert files["flow_kkt"][0].endswith("seed0/constant/kkt.csv")
    out = study.outputs(cfg, "margin_small", True)
    assert "results/margin_small/figures/schedules.csv" in out
    assert not any(f.endswith("schedules.csv") for f in study.outputs(cfg, "margin", True))
    with pytest.raises(ValueError, match="training.flow"):
        study.flow(cfg, cfg["studies"]["margin"], "margin_cnn_small")
