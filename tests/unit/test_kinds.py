"""The plug-in mechanism (ibrobust.kinds): five registries, each kind's schema fragment beside
its module, capabilities instead of kind names, the kinds' own value checks, and config
errors that name the key path for every kind."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pytest
import yaml
from config_helpers import assert_rejected, merged

from ibrobust import kinds, studies
from ibrobust.config import load_schema, validate_config
from ibrobust.provenance import module_closure

REPO = Path(__file__).resolve().parents[2]
SCHEMA = load_schema(REPO / "schemas" / "config.schema.yaml")
BASE = yaml.safe_load((REPO / "config.yaml").read_text())
ALL_KINDS = [(s, k) for s, reg in kinds.REGISTRIES.items() for k in reg.kinds()]


@pytest.mark.parametrize(("section", "kind"), ALL_KINDS)
def test_every_kind_has_its_fragment_beside_its_module(section, kind):
    reg = kinds.REGISTRIES[section]
    path = kinds.fragment_path(reg.module_name(kind))
    module = Path(sys.modules["ibrobust"].__file__).parent.joinpath(
        *reg.module_name(kind).split(".")[1:]
    )
    assert path in (module.with_suffix(".schema.yaml"), module / "schema.yaml")
    schema = reg.schema(kind)
    assert schema["properties"]["kind"]["enum"] == [kind]
    assert schema["additionalProperties"] is False and "x-kind" not in schema
    assert set(reg.capabilities(kind)) == set(reg.vocabulary)  # known, well-typed
    assert path in module_closure(REPO / "workflow_scripts" / "train.py", (reg.module_name(kind),))


def _toy(tmp_path, monkeypatch, name: str, fragment: str) -> kinds.Registry:
    """A registry of one module kind ``a`` and one package kind ``b`` in a fresh package
    ``name``, whose modules fail when imported (fragments are read without them)."""
    pkg = tmp_path / name
    (pkg / "b").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    for module in (pkg / "a.py", pkg / "b" / "__init__.py"):
        module.write_text("raise RuntimeError('imported')\n")
    (pkg / "a.schema.yaml").write_text(fragment)
    (pkg / "b" / "schema.yaml").write_text("x-kind: {colour: red}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    table = {"a": f"{name}.a", "b": f"{name}.b"}
    return kinds.Registry("toy", "toys", table, {"size": 1, "colour": None, "flag": False})


def test_fragments_and_capabilities_are_read_without_importing(tmp_path, monkeypatch):
    frag = "properties: {kind: {enum: [a]}, n: {default: 3}}\nx-kind: {size: 2}\n"
    reg = _toy(tmp_path, monkeypatch, "toykinds_read", frag)
    assert reg.capabilities("a") == {"size": 2, "colour": None, "flag": False}
    assert reg.capabilities("b") == {"size": 1, "colour": "red", "flag": False}
    assert reg.setting({"kind": "a"}, "n") == 3 and reg.setting({"kind": "a", "n": 5}, "n") == 5
    assert reg.setting({"kind": "a"}, "m") is None
    assert "toykinds_read.a" not in sys.modules and "toykinds_read.b" not in sys.modules
    with pytest.raises(RuntimeError, match="imported"):
        reg.load("a")
    with pytest.raises(ValueError, match=r"'c' is not a toy kind \(known: \['a', 'b'\]\)"):
        reg.capabilities("c")


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ("{sise: 2}", r"x-kind\.sise: unknown capability of a toy kind"),
        ("{size: two}", r"x-kind\.size: an int like its default 1, got 'two'"),
        ("{flag: 1}", r"x-kind\.flag: a bool like its default False"),
    ],
)
def test_a_bad_capability_names_the_fragment(tmp_path, monkeypatch, block, message):
    name = f"toykinds_{abs(hash(block))}"
    reg = _toy(tmp_path, monkeypatch, name, f"x-kind: {block}\n")
    with pytest.raises(ValueError, match=rf"{name}/a\.schema\.yaml: {message}"):
        reg.capabilities("a")


def test_a_training_path_is_checked_where_it_is_declared():
    bad = [{"path": "prelu", False: ["momentum"]}]  # YAML 1.1 reads a key `off:` as false
    assert "unset" in kinds._trainers_problem(bad)
    assert "path must be one of" in kinds._trainers_problem([{"path": "fast"}])
    assert kinds._trainers_problem(kinds.MODELS.capability("prelu", "trainers")) is None


def test_kind_modules_with_checks_import_without_torch():
    """The config validation runs the kinds' checks while the Snakefile parses."""
    checked = [
        reg.module_name(k)
        for s, k in ALL_KINDS
        if (reg := kinds.REGISTRIES[s]).capabilities(k).get("check")
    ]
    assert {"ibrobust.data.clusters", "ibrobust.data.images", "ibrobust.data.teacher"} <= set(
        checked
    )
    for module in checked:
        code = f"import sys, {module} as m; assert callable(m.check); print('torch' in sys.modules)"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert out.returncode == 0 and out.stdout.strip() == "False", (module, out.stderr)


def test_validating_every_shipped_config_imports_no_torch():
    code = (
        "import sys, copy, yaml, pathlib\n"
        "from ibrobust.config import load_schema, validate_config\n"
        "from ibrobust.studies.expansion import expand_scale\n"
        f"root = pathlib.Path({str(REPO)!r})\n"
        "schema = load_schema(root / 'schemas' / 'config.schema.yaml')\n"
        "base = yaml.safe_load((root / 'config.yaml').read_text())\n"
        "def merged(b, o):\n"
        "    out = copy.deepcopy(b)\n"
        "    for k, v in o.items():\n"
        "        out[k] = merged(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v\n"
        "    return out\n"
        "for f in sorted((root / 'tests' / 'workflow' / 'configs').glob('*.yaml')):\n"
        "    expand_scale(validate_config(merged(base, yaml.safe_load(f.read_text())), schema), schema)\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "False", out.stderr


GD = {"kind": "gd"}
SGD = {"kind": "sgd"}


@pytest.mark.parametrize(
    ("model", "opt", "path", "modules"),
    [
        ({"kind": "two_layer"}, GD, "gram_gd", ["two_layer", "full_batch"]),
        ({"kind": "two_layer"}, {**GD, "norm": "linf"}, "network", ["two_layer", "network", "gd"]),
        ({"kind": "two_layer"}, {**GD, "eval_every": 5}, "network", ["two_layer", "network", "gd"]),
        ({"kind": "prelu", "width": 4}, SGD, "prelu", ["prelu", "training.prelu"]),
        ({"kind": "prelu", "width": 4}, {**SGD, "momentum": 0.9}, "network", ["prelu", "sgd"]),
        ({"kind": "prelu", "width": 4}, {"kind": "adam"}, "prelu", ["prelu"]),
        ({"kind": "robust_reference"}, {"kind": "handbuilt"}, "construct", ["robust_reference"]),
        ({"kind": "cnn"}, {"kind": "adam"}, "network", ["cnn", "network", "adam"]),
    ],
)
def test_the_training_path_comes_from_capabilities(model, opt, path, modules):
    assert kinds.trainer(model, opt) == path
    loaded = kinds.train_modules(model, opt)
    assert all(any(m.endswith(part) for m in loaded) for part in modules), loaded
    assert len(loaded) == {"construct": 1, "network": 3}.get(path, 2)


@pytest.mark.parametrize("section", list(kinds.REGISTRIES))
def test_an_unknown_kind_names_the_key_in_every_registry(section):
    name = next(iter(BASE[section]))
    reg = kinds.REGISTRIES[section]
    cfg = merged(BASE, {section: {name: {"kind": "tanh_mlp"}}})
    what = f"'tanh_mlp' is not {'an' if reg.what[0] in 'aeiou' else 'a'} {reg.what} kind (known: "
    assert_rejected(cfg, SCHEMA, f"{section}.{name}.kind", what)


def _entry_of_each_kind(section):
    seen = {}
    for name, entry in BASE[section].items():
        seen.setdefault(entry["kind"], name)
    return [(section, kind, name) for kind, name in seen.items()]


@pytest.mark.parametrize(
    ("section", "kind", "name"),
    [e for s in kinds.REGISTRIES if s != "studies" for e in _entry_of_each_kind(s)],
)
def test_an_unknown_setting_names_the_key_for_every_kind(section, kind, name):
    cfg = merged(BASE, {section: {name: {"zz_bogus": 1}}})
    assert_rejected(
        cfg, SCHEMA, f"{section}.{name}.zz_bogus", f"unknown key: not a setting of kind {kind!r}"
    )


@pytest.mark.parametrize(
    ("overlay", "key", "fragment"),
    [
        ({"models": {"x": {"kind": "prelu"}}}, "models.x.width", "'width' is a required property of kind 'prelu' (Hidden units h"),
        ({"models": {"margin_cnn": {"hidden": [8, 8]}}}, "models.margin_cnn.hidden", "homogeneous_cnn has one hidden layer"),
        ({"models": {"margin_cnn": {"kernels": [5, 4]}}}, "models.margin_cnn.kernels[1]", "4: A kernel size must be odd"),
        ({"models": {"cnn_small": {"kernel": 4}}}, "models.cnn_small.kernel", "odd ('same' padding)"),
        ({"models": {"prelu_p1": {"normalize": "standardize"}}}, "models.prelu_p1.normalize", "not one of ['none', 'center']"),
        ({"datasets": {"clusters_d1000": {"k": 9}}}, "datasets.clusters_d1000.k", "even for a balanced split"),
        ({"datasets": {"clusters_d1000": {"k": 2000}}}, "datasets.clusters_d1000.k", "k <= d=1000"),
        ({"datasets": {"prelu_clusters": {"sigma": 0.5}}}, "datasets.prelu_clusters.sigma", "either sigma or alpha"),
        ({"datasets": {"teacher_w4_x4": {"k_x": 600}}}, "datasets.teacher_w4_x4.k_x", "k_x <= d=512"),
        ({"datasets": {"mnist_parity": {"split": "explicit", "positive": [2]}}}, "datasets.mnist_parity.negative", "non-empty negative"),
    ],
)  # fmt: skip
def test_schema_and_kind_checks_name_the_key(overlay, key, fragment):
    assert_rejected(merged(BASE, overlay), SCHEMA, key, fragment)


def test_defaults_are_the_kinds_own():
    """An entry gets its own kind's defaults (no flat model schema: an fc net without width
    used to get resnet18's 64, a homogeneous CNN without hidden the MLP's [256])."""
    cfg = merged(BASE, {"models": {"f": {"kind": "fc"}, "h": {"kind": "homogeneous_cnn"}}})
    models = validate_config(cfg, SCHEMA)["models"]
    assert models["f"] == {"kind": "fc", "width": 512, "init_scale": 1.0}
    assert models["h"]["hidden"] == [1024] and "width" not in models["h"]


def test_study_kinds_state_only_what_differs_from_the_defaults():
    defines = {
        hook: sorted(k for k in kinds.STUDIES.kinds() if hasattr(studies.load(k), hook))
        for hook in studies.OPTIONAL
    }
    assert defines["task"] == ["margin", "prelu", "price_nn"]  # fine labels of k-class models
    assert defines["parts"] == ["attack_audit", "feature_averaging", "prelu", "price_nn"]
    assert defines["optimizer_sweeps"] == ["price_nn"]
    for kind in kinds.STUDIES.kinds():
        module = studies.load(kind)
        assert not {"RULES", "NETWORK"} & set(vars(module)), kind
        # the former claims hook is gone; ``claims`` is the package's claims module, once
        # imported (ibrobust.ledger.table imports it)
        assert isinstance(vars(module).get("claims", types), types.ModuleType), kind
    cfg = validate_config(BASE, SCHEMA)
    st = cfg["studies"]["fa_images"]
    assert studies.hook("feature_averaging_images", "parts")(cfg, st) == [dict(st, part="main")]
    assert studies.hook("feature_averaging_images", "task")("multiclass") == "binary"
    assert studies.hook("price_linear", "parts")(cfg, cfg["studies"]["price_linear"]) == []
    assert studies.hook("margin", "sweeps")(cfg["studies"]["margin"]) == []
    with pytest.raises(ValueError, match="not an optional study hook"):
        studies.hook("margin", "check")
