"""One source of defaults: a library dataclass that a config entry fills has the schema's
defaults, so the library called directly behaves as the workflow does.

Each row pairs a dataclass with the schema definition whose entries it receives and maps
config keys to field names where they differ. A field is compared when both sides declare a
default; the few deliberate differences are listed with their reason, and the list itself
is checked (an entry that no longer differs fails, so it cannot go stale).
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from ibrobust.attacks.pgd import PGDConfig
from ibrobust.config import load_schema
from ibrobust.data.clusters import ClusterDataConfig
from ibrobust.data.images import ImageDataConfig
from ibrobust.data.teacher import TeacherConfig
from ibrobust.models.fc import FCConfig
from ibrobust.models.homogeneous_cnn import HomogeneousCNNConfig
from ibrobust.models.image import ImageModelConfig
from ibrobust.models.prelu import PreluConfig
from ibrobust.models.two_layer import TwoLayerConfig
from ibrobust.studies.margin.experiment import MarginRobustConfig
from ibrobust.training.full_batch import GDConfig
from ibrobust.training.margin import MarginTrainConfig
from ibrobust.training.network import NetTrainConfig
from ibrobust.training.robust_erm import RobustERMConfig
from ibrobust.updates.loss_based import LossBasedLRConfig

REPO = Path(__file__).resolve().parents[2]
DEFS = load_schema(REPO / "schemas" / "config.schema.yaml")["definitions"]
STOPPING = DEFS["study_price_linear"]["properties"]["stopping"]
MARGIN_TRAINING = DEFS["study_margin"]["properties"]["training"]
MARGIN_ROBUSTNESS = DEFS["study_margin"]["properties"]["robustness"]

# (dataclass, schema definition (or a definition dict), {config key: field} where they differ)
PAIRS = [
    (GDConfig, "optimizer_gd", {}),
    (RobustERMConfig, "optimizer_steepest", {}),
    (RobustERMConfig, "optimizer_diag_gd", {}),
    (RobustERMConfig, STOPPING, {}),
    (NetTrainConfig, "optimizer_adam", {"epochs": "max_epochs"}),
    (NetTrainConfig, "optimizer_sgd", {"epochs": "max_epochs"}),
    (PGDConfig, "attack_pgd", {}),
    (ClusterDataConfig, "dataset_clusters", {}),
    (TeacherConfig, "dataset_teacher", {}),
    (ImageDataConfig, "dataset_image", {}),
    (TwoLayerConfig, "model_two_layer", {}),
    (ImageModelConfig, "model_mlp", {}),
    (ImageModelConfig, "model_cnn", {}),
    (ImageModelConfig, "model_resnet18", {}),
    (FCConfig, "model_fc", {}),
    (PreluConfig, "model_prelu", {}),  # width: no default in the schema (set it)
    (HomogeneousCNNConfig, "model_homogeneous_cnn", {}),
    (MarginTrainConfig, MARGIN_TRAINING, {}),
    (LossBasedLRConfig, MARGIN_TRAINING, {}),  # alpha (the schedule's field)
    (MarginRobustConfig, MARGIN_ROBUSTNESS, {}),
]
# deliberate differences: (dataclass, definition, field) -> why
EXCEPTIONS = {
    ("NetTrainConfig", "optimizer_sgd", "lr"): "one field, a default per optimizer kind (adam's)",
    ("ImageDataConfig", "dataset_image", "download"): "the library never downloads unasked",
    ("ImageDataConfig", "dataset_image", "split"): "library callers name their split",
    ("HomogeneousCNNConfig", "model_homogeneous_cnn", "hidden"): "the schema's [width], an int",
}
# values that mean the same on both sides: lr_max null = no cap = inf
SAME = {("lr_max", None): math.inf}


def _norm(key, value):
    value = SAME.get((key, value), value) if not isinstance(value, list | dict) else value
    return list(value) if isinstance(value, tuple) else value


def _differences():
    out = {}
    for dc, definition, keymap in PAIRS:
        props = (DEFS[definition] if isinstance(definition, str) else definition)["properties"]
        name = definition if isinstance(definition, str) else "stopping"
        fields = {f.name: f for f in dataclasses.fields(dc)}
        for key, sub in props.items():
            field = fields.get(keymap.get(key, key))
            if field is None or "default" not in sub or field.default is dataclasses.MISSING:
                continue
            if _norm(key, field.default) != _norm(key, sub["default"]):
                out[(dc.__name__, name, field.name)] = (field.default, sub["default"])
    return out


def test_dataclass_defaults_equal_the_schema():
    diff = {k: v for k, v in _differences().items() if k not in EXCEPTIONS}
    assert not diff, f"(dataclass, definition, field): (dataclass default, schema default) {diff}"


def test_exceptions_are_real():
    stale = sorted(set(EXCEPTIONS) - set(_differences()))
    assert not stale, f"no longer different, drop from EXCEPTIONS: {stale}"


@pytest.mark.parametrize(("dc", "definition", "keymap"), PAIRS)
def test_every_pair_compares_something(dc, definition, keymap):
    props = (DEFS[definition] if isinstance(definition, str) else definition)["properties"]
    fields = {f.name for f in dataclasses.fields(dc)}
    assert {keymap.get(k, k) for k in props} & fields, (dc, definition)
