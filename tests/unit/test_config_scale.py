"""Scale ladders (a study's ``scale`` block): the rung studies and entry variants the config
expands to, the rung that is the study itself, and bad ladders named at their key."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from config_helpers import assert_rejected, merged, validated

from ibrobust.config import load_schema
from ibrobust.studies.expansion import Rung, scale_rungs

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = load_schema(ROOT / "schemas" / "config.schema.yaml")
CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())  # with its shipped ladders
BASE = {  # without them: each test sets its own
    **CONFIG,
    "studies": {
        n: {k: v for k, v in st.items() if k != "scale"} for n, st in CONFIG["studies"].items()
    },
}
MARGIN = {"studies": {"margin": {"scale": {"dataset": "margin_mnist", "key": "n_train"}}}}


def with_ladder(**scale) -> dict:
    return merged(
        BASE,
        {"studies": {"margin": {"scale": {"dataset": "margin_mnist", "key": "n_train", **scale}}}},
    )


def test_rungs_become_studies_on_dataset_variants_and_the_base_value_is_the_study():
    base_n = BASE["datasets"]["margin_mnist"]["n_train"]
    cfg = validated(with_ladder(rungs=[10, base_n, 2 * base_n]), SCHEMA)
    rungs = scale_rungs(cfg)
    low, high = f"margin@n_train={10}", f"margin@n_train={2 * base_n}"
    assert rungs == {
        low: Rung("margin", "n_train", 10.0),
        "margin": Rung("margin", "n_train", float(base_n)),
        high: Rung("margin", "n_train", float(2 * base_n)),
    }
    st = cfg["studies"][low]
    assert st["datasets"] == ["margin_mnist@n_train=10"] and st["enabled"] is False
    assert "scale" not in st and "scale" in cfg["studies"]["margin"]
    variant = cfg["datasets"]["margin_mnist@n_train=10"]
    assert variant == {**cfg["datasets"]["margin_mnist"], "n_train": 10}
    assert isinstance(variant["n_train"], int)  # typed by the image kind's fragment
    assert f"margin@n_train={base_n}" not in cfg["studies"]  # that rung is the study


def test_overrides_make_every_rung_a_study_and_rename_every_reference():
    over = {"seeds": [0, 1, 2], "robustness": {"attack_points": 40}}
    base_n = BASE["datasets"]["margin_mnist"]["n_train"]
    cfg = validated(with_ladder(rungs=[base_n, 2 * base_n], overrides=over), SCHEMA)
    same = cfg["studies"][f"margin@n_train={base_n}"]  # overrides: not the study itself
    assert same["datasets"] == ["margin_mnist"] and same["seeds"] == [0, 1, 2]
    assert same["robustness"]["attack_points"] == 40
    assert same["robustness"]["fab_iter"] == cfg["studies"]["margin"]["robustness"]["fab_iter"]
    assert set(scale_rungs(cfg)) == {f"margin@n_train={base_n}", f"margin@n_train={2 * base_n}"}


def test_a_model_ladder_on_a_cnn_width():
    ladder = {"model": "madry_cnn_cpu", "key": "width_multiplier", "rungs": [1, 2],
              "overrides": {"fc": None, "cnn": {"n_train": [200], "eps": [0.0, 0.1]}}}  # fmt: skip
    # at width 1 (config.yaml's default width is the capacity ladder's, docs/studies/price_nn.md)
    base_width = {"models": {"madry_cnn_cpu": {"width_multiplier": 1}}}
    cfg = validated(
        merged(BASE, {**base_width, "studies": {"price_nn": {"scale": ladder}}}), SCHEMA
    )
    two = cfg["studies"]["price_nn@width_multiplier=2"]
    assert two["cnn"]["models"] == ["madry_cnn_cpu@width_multiplier=2"] and two["fc"] is None
    assert cfg["models"]["madry_cnn_cpu@width_multiplier=2"]["width_multiplier"] == 2.0
    one = cfg["studies"]["price_nn@width_multiplier=1"]  # overrides: a study of its own
    assert one["cnn"]["models"] == ["madry_cnn_cpu"] and one["cnn"]["n_train"] == [200]


@pytest.mark.parametrize(
    ("scale", "key", "fragment"),
    [
        ({"dataset": "nope", "key": "n_train", "rungs": [1, 2]}, "studies.margin.scale.dataset", "'nope' is not defined"),
        ({"dataset": "margin_mnist", "key": "width", "rungs": [1, 2]}, "studies.margin.scale.key", "not a setting of dataset kind 'image'"),
        ({"dataset": "margin_mnist", "key": "n_train", "rungs": [5]}, "studies.margin.scale.rungs", "too short"),
        ({"dataset": "margin_mnist", "key": "n_train", "rungs": [5, 0]}, "studies.margin.scale.rungs[1]", "less than or equal to the minimum"),
        ({"key": "n_train", "rungs": [5, 6]}, "studies.margin.scale", "is not valid under any of the given schemas"),
        ({"model": "margin_cnn_small", "key": "hidden", "rungs": [5, 6]}, "studies.margin.scale.rungs[0]", "is not of type 'array'"),
        # an override the study kind does not have: at its key under the overrides
        ({"dataset": "margin_mnist", "key": "n_train", "rungs": [50, 60], "overrides": {"zz_unknown": 1}}, "studies.margin.scale.overrides.zz_unknown", "unknown key"),
    ],
)  # fmt: skip
def test_bad_ladders_are_named_at_their_key(scale, key, fragment):
    assert_rejected(merged(BASE, {"studies": {"margin": {"scale": scale}}}), SCHEMA, key, fragment)


@pytest.mark.parametrize(
    ("overrides", "key", "fragment"),
    [
        ({"cnn": {"zz_unknown": 1}}, "studies.price_nn.scale.overrides.cnn.zz_unknown", "unknown key (allowed: ['attack_points',"),
        ({"zz_unknown": 1}, "studies.price_nn.scale.overrides.zz_unknown", "unknown key (allowed: ['claims', 'cnn',"),
        ({"fc": {"n_train": [100], "zz": 1}}, "studies.price_nn.scale.overrides.fc.zz", "unknown key"),
        ({"cnn": {"n_train": "100"}}, "studies.price_nn.scale.overrides.cnn.n_train", "is not of type 'array'"),
        ({"cnn": {"eps": [0.0, -0.1]}}, "studies.price_nn.scale.overrides.cnn.eps[1]", "less than the minimum of 0"),
        ({"kind": "margin"}, "studies.price_nn.scale.overrides.kind", "is not one of ['price_nn']"),
        ({"scale": None}, "studies.price_nn.scale.overrides.scale", "climbs no ladder"),
    ],
)  # fmt: skip
def test_bad_overrides_are_named_at_their_key_before_any_rung(overrides, key, fragment):
    """An override is a key of the study: unknown, mistyped or out of range at any depth, it
    is refused naming its path under the ladder's overrides (the schema's ``overrides:
    {type: object}`` took any key silently)."""
    ladder = dict(CONFIG["studies"]["price_nn"]["scale"], overrides=overrides)
    cfg = merged(BASE, {"studies": {"price_nn": {"scale": ladder}}})
    assert_rejected(cfg, SCHEMA, key, fragment)


def test_an_unknown_override_of_another_study_kind_is_named_too():
    cfg = with_ladder(rungs=[10, 20], overrides={"robustness": {"attack_point": 40}})
    assert_rejected(
        cfg, SCHEMA, "studies.margin.scale.overrides.robustness.attack_point", "unknown key"
    )


def test_width_multiplier_scales_every_conv_and_dense_width():
    import torch

    from ibrobust.models.cnn import scaled
    from ibrobust.models.image import build_image_model, image_config_from_dict

    assert (
        scaled((4, 8), 2) == (8, 16) and scaled((32,), 0.5) == (16,) and scaled((1,), 0.1) == (1,)
    )
    cfg = validated(BASE, SCHEMA)
    entry = {**cfg["models"]["madry_cnn_cpu"], "width_multiplier": 2}
    gen = torch.Generator().manual_seed(0)
    net = build_image_model(
        image_config_from_dict(entry), (1, 28, 28), torch.tensor([1.0, -1.0]), gen
    )
    convs = [m.out_channels for m in net.modules() if isinstance(m, torch.nn.Conv2d)]
    dense = [m.out_features for m in net.modules() if isinstance(m, torch.nn.Linear)]
    assert convs == [2 * c for c in cfg["models"]["madry_cnn_cpu"]["channels"]]
    assert dense[0] == 2 * cfg["models"]["madry_cnn_cpu"]["hidden"][0] and dense[-1] == 2


def test_price_nn_curves_of_a_study_without_fc_runs_say_so():
    import pandas as pd

    from ibrobust.studies.price_nn.plots import accuracy_curves

    empty = pd.DataFrame(columns=["eps", "algorithm", "epoch", "train_acc", "test_acc"])
    fig = accuracy_curves(empty, "a CNN-only rung")
    assert "no runs" in fig.axes[0].texts[0].get_text()


def test_a_ladder_on_an_entry_the_study_does_not_use_is_named_and_null_is_no_ladder():
    # config.yaml's ladder scales margin_mnist; an overlay moves the study to another set
    cfg = merged(CONFIG, {"studies": {"margin": {"datasets": ["margin_mnist_small"]}}})
    assert_rejected(cfg, SCHEMA, "studies.margin.scale.dataset", "does not use 'margin_mnist'")
    off = merged(cfg, {"studies": {"margin": {"scale": None}}})
    assert not [s for s in validated(off, SCHEMA)["studies"] if s.startswith("margin@")]
