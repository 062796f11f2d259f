"""Config values the schema lets through: NaN / inf anywhere, floats where integers are meant
(issue 15 item 1's cases, each refused with its key path before anything is planned)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml
from config_helpers import assert_rejected, bad_cases, merged

from ibrobust.config import load_schema, validate_config
from ibrobust.config.values import key_path, non_finite, value_problems

REPO = Path(__file__).resolve().parents[2]
SCHEMA = load_schema(REPO / "schemas" / "config.schema.yaml")
BASE = yaml.safe_load((REPO / "config.yaml").read_text())
NAN, INF = math.nan, math.inf
FINITE = "is not a finite number"
FLOAT_INT = "is a float where an integer is meant"

BAD = [
    ("radii-nan", {"studies": {"fa": {"radii": [0.0, NAN, 2.0]}}}, "studies.fa.radii[1]", FINITE),
    ("radii-inf", {"studies": {"fa": {"radii": [0.0, INF]}}}, "studies.fa.radii[1]", FINITE),
    ("lr-inf", {"optimizers": {"gd": {"lr": INF}}}, "optimizers.gd.lr", FINITE),
    ("lr-nan", {"optimizers": {"gd": {"lr": NAN}}}, "optimizers.gd.lr", FINITE),
    ("sigma-nan", {"datasets": {"clusters_d1000": {"sigma": NAN}}}, "datasets.clusters_d1000.sigma", FINITE),
    ("stop-loss-nan", {"optimizers": {"gd": {"stop_loss": NAN}}}, "optimizers.gd.stop_loss", FINITE),
    ("eps-nan", {"studies": {"price_linear": {"eps_fractions": [0.0, 0.5, NAN]}}}, "studies.price_linear.eps_fractions[2]", FINITE),
    ("alpha-minus-inf", {"studies": {"prelu": {"synthetic": {"alphas": [0.1, -INF]}}}}, "studies.prelu.synthetic.alphas[1]", FINITE),
    ("radii-by-norm-nan", {"studies": {"prelu": {"mnist": {"radii": {"l2": [0.0, NAN]}}}}}, "studies.prelu.mnist.radii.l2[1]", FINITE),
    ("scaling-sigma-inf", {"studies": {"fa": {"scaling": {"key": "sigma", "values": [1.0, INF]}}}}, "studies.fa.scaling.values[1]", FINITE),
    ("nan-in-a-string-key", {"studies": {"fa": {"plots": {"cmap": NAN}}}}, "studies.fa.plots.cmap", FINITE),
    ("seeds-float", {"studies": {"fa": {"seeds": [0, 1.0]}}}, "studies.fa.seeds[1]", FLOAT_INT),
    ("threads-float", {"threads": 2.0}, "threads", FLOAT_INT),
    ("n-train-float", {"datasets": {"clusters_d1000": {"n_train": 100.0}}}, "datasets.clusters_d1000.n_train", FLOAT_INT),
    ("nullable-int-float", {"studies": {"fa": {"attack_points": 500.0}}}, "studies.fa.attack_points", FLOAT_INT),
    ("price-draws-float", {"studies": {"price_linear": {"draws": [0, 1, 2.0]}}}, "studies.price_linear.draws[2]", FLOAT_INT),
    ("max-iters-float", {"studies": {"price_linear": {"stopping": {"max_iters": 5.0e3}}}}, "studies.price_linear.stopping.max_iters", FLOAT_INT),
    ("width-float", {"models": {"prelu_p1": {"width": 100.0}}}, "models.prelu_p1.width", FLOAT_INT),
]  # fmt: skip


@pytest.mark.parametrize(("overlay", "key", "fragment"), bad_cases(BAD))
def test_bad_value_is_rejected_with_its_key_path(overlay, key, fragment):
    assert_rejected(merged(BASE, overlay), SCHEMA, key, fragment)


def test_command_line_nan_is_rejected():
    cfg = dict(BASE, threads=".nan")  # what `--config threads=.nan` delivers: a string
    assert_rejected(cfg, SCHEMA, "threads", FINITE)


def test_every_problem_is_reported_one_per_line():
    cfg = merged(BASE, {"optimizers": {"gd": {"lr": NAN, "stop_loss": INF}}})
    problems = [str(p) for p in value_problems(cfg, SCHEMA)]
    assert problems == [
        f"config key optimizers.gd.lr: nan {FINITE} (NaN and infinities are never valid)",
        f"config key optimizers.gd.stop_loss: inf {FINITE} (NaN and infinities are never valid)",
    ]


def test_floats_where_numbers_are_meant_and_integers_stay_valid():
    cfg = merged(BASE, {"optimizers": {"gd": {"lr": 1}}, "studies": {"fa": {"radii": [0, 1, 2.5]}}})
    assert value_problems(cfg, SCHEMA) == []
    out = validate_config(cfg, SCHEMA)
    assert out["studies"]["fa"]["seeds"] == [0, 1, 2]


def test_non_finite_walks_nested_lists_and_mappings():
    tree = {"a": [1.0, {"b": [NAN]}], "c": {"d": -INF}, "e": "nan", "f": True}
    assert [key_path(p.path) for p in non_finite(tree)] == ["a[1].b[0]", "c.d"]
    assert key_path(()) == "<root>"


@pytest.mark.parametrize(
    "overlay, key, dataset",
    [
        ({"studies": {"fa": {"attack_points": 2001}}}, "studies.fa.attack_points", "clusters_d1000"),
        ({"studies": {"prelu": {"synthetic": {"attack_points": 5000}}}},
         "studies.prelu.synthetic.attack_points", "prelu_clusters"),
    ],
)  # fmt: skip
def test_more_attacked_points_than_a_dataset_has_are_refused(overlay, key, dataset):
    """attack_points over a dataset's n_test (clusters_d1000 and prelu_clusters: the
    clusters kind's default 2000 test points) is refused naming both keys: the attacks
    would use fewer points than the config asks for."""
    cfg = merged(BASE, overlay)
    have = cfg["datasets"][dataset].get("n_test", 2000)
    assert have < int(overlay_value(overlay))
    assert_rejected(cfg, SCHEMA, key, f"datasets.{dataset}.n_test")
    # at the dataset's own count it validates
    ok = merged(BASE, _with_value(overlay, have))
    validate_config(ok, SCHEMA)


def overlay_value(overlay: dict):
    v = overlay
    while isinstance(v, dict):
        (v,) = v.values()
    return v


def _with_value(overlay: dict, value):
    ((k, v),) = overlay.items()
    return {k: _with_value(v, value) if isinstance(v, dict) else value}
