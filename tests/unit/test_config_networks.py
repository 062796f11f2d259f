"""Configuration of the network studies: image datasets, image models, minibatch optimizers,
attack kinds, Study FA-IMAGES; each bad value is rejected before scheduling, naming the key."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from config_helpers import assert_rejected, bad_cases, merged

from ibrobust.config import ConfigError, load_schema, validate_config

REPO = Path(__file__).resolve().parents[2]
SCHEMA = load_schema(REPO / "schemas" / "config.schema.yaml")
BASE = yaml.safe_load((REPO / "config.yaml").read_text())


def test_defaults_of_the_new_kinds():
    cfg = validate_config(BASE, SCHEMA)
    assert cfg["data_root"] == "data" and cfg["device"] == "auto"
    cnn = cfg["models"]["cnn_small"]
    assert cnn == {
        "kind": "cnn",
        "channels": [16, 32],
        "hidden": [128],
        "kernel": 5,
        "normalize": "none",
        "channels_last": True,  # config.yaml sets it; the rest are the kind's defaults
        "width_multiplier": 1,
    }
    assert "m" not in cnn and "beta" not in cnn  # other kinds' keys are pruned
    adam = cfg["optimizers"]["adam_img"]
    assert adam["betas"] == [0.9, 0.999] and adam["stop_loss"] is None and "max_steps" not in adam
    assert cfg["optimizers"]["gd"]["norm"] == "l2" and cfg["optimizers"]["gd"]["loss"] == "auto"
    assert cfg["attacks"]["pgd_margin_img"]["l1_top"] == 0.01
    assert cfg["attacks"]["universal"] == {"kind": "universal"}  # no PGD defaults filled in
    st = cfg["studies"]["fa_images"]
    assert st["enabled"] is False and set(st["radii"]) == set(st["datasets"])
    assert cfg["datasets"]["cifar10_halves"]["path"] == "cifar10/cifar10-exact-subset.npz"


AA_BINARY_BAD = {"kind": "autoattack", "norm": "l2", "version": "standard"}
AA_BINARY_OK = {
    "kind": "autoattack",
    "norm": "l2",
    "version": "custom",
    "attacks": ["apgd-ce", "fab", "square"],
}

BAD = [
    ("image-source", {"datasets": {"mnist_parity": {"source": "svhn"}}}, "datasets.mnist_parity.source", "is not one of"),
    ("explicit-without-classes", {"datasets": {"mnist_parity": {"split": "explicit"}}}, "datasets.mnist_parity.positive", "non-empty"),
    ("explicit-overlap", {"datasets": {"mnist_parity": {"split": "explicit", "positive": [2, 7], "negative": [7]}}}, "datasets.mnist_parity.negative", "both"),
    ("classes-without-explicit", {"datasets": {"mnist_parity": {"positive": [2]}}}, "datasets.mnist_parity.positive", "only for split 'explicit'"),
    ("npz-without-path", {"datasets": {"cifar10_halves": {"path": None}}}, "datasets.cifar10_halves.path", "required for source 'npz'"),
    ("mnist-with-path", {"datasets": {"mnist_parity": {"path": "x.npz"}}}, "datasets.mnist_parity.path", "torchvision"),
    ("cnn-width-zero", {"models": {"cnn_small": {"channels": [0, 4]}}}, "models.cnn_small.channels[0]", "minimum"),
    ("cnn-with-m", {"models": {"cnn_small": {"m": 3}}}, "models.cnn_small.m", "not a setting of kind 'cnn'"),
    ("adam-betas", {"optimizers": {"adam_img": {"betas": [0.9]}}}, "optimizers.adam_img.betas", "too short"),
    ("sgd-key-on-adam", {"optimizers": {"adam_img": {"momentum": 0.9}}}, "optimizers.adam_img", "unknown key"),
    ("pgd-norm", {"attacks": {"pgd_ce_img": {"norm": "l3"}}}, "attacks.pgd_ce_img.norm", "is not one of"),
    ("pgd-key-on-universal", {"attacks": {"universal": {"steps": 3}}}, "attacks.universal", "unknown key"),
    ("cnn-in-fa", {"studies": {"fa": {"models": ["cnn_small"]}}}, "studies.fa.models[0]", "takes ['image'] inputs, not the flat data"),
    ("image-data-in-fa", {"studies": {"fa": {"datasets": ["mnist_parity"]}}}, "studies.fa.datasets[0]", "clusters"),
    ("autoattack-in-fa", {"attacks": {"aa": AA_BINARY_OK}, "studies": {"fa": {"attacks": ["aa"]}}}, "studies.fa.attacks[0]", "needs inputs in a box"),
    ("two-layer-on-images", {"studies": {"fa_images": {"models": ["two_layer_m5"]}}}, "studies.fa_images.models[0]", "takes ['flat'] inputs, not the image data"),
    ("clusters-in-images", {"studies": {"fa_images": {"datasets": ["clusters_d1000"]}}}, "studies.fa_images.datasets[0]", "needs image"),
    ("universal-on-images", {"studies": {"fa_images": {"attacks": ["universal"]}}}, "studies.fa_images.attacks[0]", "cluster means"),
    ("standard-aa-on-binary-task", {"attacks": {"aa": AA_BINARY_BAD}, "studies": {"fa_images": {"attacks": ["aa"]}}}, "studies.fa_images.attacks[0]", "two logits"),
    ("radii-for-unknown-dataset", {"studies": {"fa_images": {"radii": {"svhn": [0.0, 1.0]}}}}, "studies.fa_images.radii.svhn", "not one of the study's datasets"),
    ("report-radius-off-grid", {"studies": {"fa_images": {"report_radii": {"mnist_parity": [1.3]}}}}, "studies.fa_images.report_radii.mnist_parity[0]", "not on the radius grid"),
    ("paper-task-unknown", {"studies": {"fa_images": {"paper_tasks": {"mnist_parity": "svhn"}}}}, "studies.fa_images.paper_tasks.mnist_parity", "is not one of"),
    ("device-enum", {"device": "tpu"}, "device", "is not one of"),
]  # fmt: skip


@pytest.mark.parametrize(("overlay", "key", "fragment"), bad_cases(BAD))
def test_bad_network_config_names_the_key(overlay, key, fragment):
    assert_rejected(merged(BASE, overlay), SCHEMA, key, fragment)


def test_radii_missing_for_a_dataset():
    cfg = copy.deepcopy(BASE)
    del cfg["studies"]["fa_images"]["radii"]["cifar10_halves"]
    with pytest.raises(
        ConfigError, match=r"studies\.fa_images\.radii: no radius grid for dataset 'cifar10_halves'"
    ):
        validate_config(cfg, SCHEMA)


def test_autoattack_custom_set_is_fine_on_the_binary_task():
    ok = merged(
        BASE, {"attacks": {"aa": AA_BINARY_OK}, "studies": {"fa_images": {"attacks": ["aa"]}}}
    )
    assert validate_config(ok, SCHEMA)["attacks"]["aa"]["batch_size"] == 500
