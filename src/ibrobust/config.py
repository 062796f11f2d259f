"""Configuration: JSON-schema validation with defaults, and cross-reference checks.

``validate_config`` fills schema defaults, then raises :class:`ConfigError` (a
ValueError) whose message names the offending key path (``studies.fa.seeds[1]``) and
value - before the workflow schedules anything.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from ibrobust.attacks.policy import (  # noqa: F401  (re-exported: the config's attack vocabulary)
    NORMS,
    attack_applies,
    attack_norm,
    grid_attacks,
    radius_grids,
)
from ibrobust.validation import key_path, value_problems


class ConfigError(ValueError):
    """Invalid configuration; the message starts with the offending key path."""


def _with_defaults(validator_cls):
    validate_props = validator_cls.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for prop, sub in properties.items():
                if "default" in sub and prop not in instance:
                    instance[prop] = copy.deepcopy(sub["default"])
        yield from validate_props(validator, properties, instance, schema)

    return jsonschema.validators.extend(validator_cls, {"properties": set_defaults})


def _fill_registry_defaults(config: dict, schema: dict) -> None:
    """Defaults inside additionalProperties/$ref (named registry entries) and nested."""
    validator = _with_defaults(jsonschema.Draft7Validator)(schema)
    for _ in validator.iter_errors(config):  # the iteration fills defaults as it goes
        pass


def load_schema(path: str | Path) -> dict:
    """The config schema at ``path`` with every registered study and attack kind filled in:
    each kind's fragment becomes ``definitions.<study|attack>_<kind>``, selected by
    if/then on ``kind`` (kinds: ``ibrobust.studies.REGISTRY``, ``ibrobust.kinds.ATTACKS``)."""
    from ibrobust import kinds, studies
    from ibrobust.attacks.policy import fragment

    schema = yaml.safe_load(Path(path).read_text())
    plug = {
        "study": {k: studies.schema_fragment(k) for k in studies.REGISTRY},
        "attack": {k: fragment(k) for k in kinds.ATTACKS},
    }
    for what, frags in plug.items():
        entry = schema["definitions"][what]
        entry["properties"]["kind"]["enum"] = list(frags)
        entry["allOf"] = []
        for kind, frag in frags.items():
            frag = {k: v for k, v in frag.items() if k != "x-policy"}
            schema["definitions"][f"{what}_{kind}"] = frag
            entry["allOf"].append(
                {
                    "if": {"required": ["kind"], "properties": {"kind": {"const": kind}}},
                    "then": {"$ref": f"#/definitions/{what}_{kind}"},
                }
            )
    return schema


def _coerce_command_line(cfg: dict, schema: dict) -> dict:
    """``--config key=value`` delivers strings (also inside ``key={a: b}``): parse strings
    where the schema wants another type, e.g. ``mlflow='{enabled: false}'``, ``threads=2``."""
    props = schema.get("properties", {})
    for key, value in cfg.items():
        sub = props.get(key, {})
        want = sub.get("type")
        if isinstance(value, str) and want not in (None, "string"):
            try:
                cfg[key] = value = yaml.safe_load(value)
            except yaml.YAMLError:
                continue  # leave it: the schema error names the key
        if isinstance(value, dict) and "properties" in sub:
            _coerce_command_line(value, sub)
    return cfg


def validate_config(config: dict, schema: dict) -> dict:
    """Validated copy of ``config`` with defaults filled; ConfigError on the first problem."""
    cfg = _coerce_command_line(copy.deepcopy(config), schema)
    bad_values = value_problems(cfg, schema)  # NaN / inf anywhere, 1.0 for an integer
    if bad_values:
        raise ConfigError("\n".join(map(str, bad_values)))
    errors = sorted(
        jsonschema.Draft7Validator(schema).iter_errors(cfg), key=lambda e: list(e.absolute_path)
    )
    if errors:
        e = errors[0]
        where = key_path(e.absolute_path)
        if e.validator == "additionalProperties":
            extra = sorted(set(e.instance) - set(e.schema.get("properties", {})))
            raise ConfigError(
                f"config key {where + '.' if e.absolute_path else ''}{extra[0]}: unknown key "
                f"(allowed: {sorted(e.schema.get('properties', {}))})"
            )
        if e.validator == "required":
            raise ConfigError(f"config key {where}: {e.message}")
        raise ConfigError(f"config key {where}: {e.message}")
    _check_kind_fields(cfg)
    _check_explicit_fields(cfg)  # before defaults hide what the user wrote
    _fill_registry_defaults(cfg, schema)
    _prune_kind_fields(cfg)
    _check_references(cfg)
    return cfg


# Which keys of a registry entry belong to which kind (the schema lists their union).
# Datasets, optimizers, attacks and studies instead have one schema definition per kind (selected
# by if/then on ``kind``), because their kinds need different defaults for the same key.
KIND_FIELDS = {
    "models": {
        "two_layer": {"m", "init_scale"},
        "robust_reference": {"beta"},
        "mlp": {"hidden", "normalize"},
        "cnn": {"channels", "kernel", "hidden", "normalize", "channels_last"},
        "resnet18": {"width", "normalize"},
        "fc": {"width", "init_scale"},
        "prelu": {
            "width",
            "p",
            "init",
            "init_std",
            "normalize_input",
            "out_bias",
            "normalize",
            "binary_heads",
        },
        "homogeneous_cnn": {"channels", "kernels", "hidden", "first_bias"},
    },
}
# Keys a kind must set itself: the flat model schema's default belongs to another kind
# (width: resnet18's 64 channels).
REQUIRED_KIND_FIELDS = {"models": {"prelu": {"width"}}}


def _check_kind_fields(cfg: dict) -> None:
    for registry, kinds in KIND_FIELDS.items():
        for name, entry in cfg.get(registry, {}).items():
            allowed = kinds[entry["kind"]] | {"kind"}
            extra = sorted(set(entry) - allowed)
            if extra:
                raise ConfigError(
                    f"config key {registry}.{name}.{extra[0]}: not a setting of kind "
                    f"{entry['kind']!r} (allowed: {sorted(allowed)})"
                )


def _check_explicit_fields(cfg: dict) -> None:
    """Checks on what the user wrote (run before the schema defaults are filled in)."""
    for registry, kinds in REQUIRED_KIND_FIELDS.items():
        for name, entry in cfg.get(registry, {}).items():
            missing = sorted(kinds.get(entry["kind"], set()) - set(entry))
            if missing:
                raise ConfigError(
                    f"config key {registry}.{name}.{missing[0]}: kind {entry['kind']!r} needs "
                    f"an explicit {missing[0]} (e.g. the paper's 2000 synthetic / 500 MNIST "
                    "hidden units)"
                )
    for name, ds in cfg["datasets"].items():
        if ds["kind"] == "clusters" and ds.get("alpha") is not None and "sigma" in ds:
            raise ConfigError(
                f"config key datasets.{name}.sigma: set either sigma or alpha (alpha gives "
                "the noise std alpha / sqrt(d)), not both"
            )


def _prune_kind_fields(cfg: dict) -> None:
    for registry, kinds in KIND_FIELDS.items():
        for entry in cfg.get(registry, {}).values():
            for key in set(entry) - kinds[entry["kind"]] - {"kind"}:
                del entry[key]


def _check_references(cfg: dict) -> None:
    for name, m in cfg["models"].items():
        if m["kind"] == "homogeneous_cnn" and len(m["hidden"]) != 1:
            raise ConfigError(
                f"config key models.{name}.hidden: homogeneous_cnn has one hidden layer "
                f"(fc1), got {m['hidden']}"
            )
        if m["kind"] == "homogeneous_cnn" and any(k % 2 == 0 for k in m["kernels"]):
            raise ConfigError(
                f"config key models.{name}.kernels: must be odd ('same' padding), "
                f"got {m['kernels']}"
            )
        if m["kind"] == "prelu" and m["normalize"] not in ("none", "center"):
            raise ConfigError(
                f"config key models.{name}.normalize: a prelu net centres its input or not "
                f"(none or center), got {m['normalize']!r}"
            )
    for name, opt in cfg["optimizers"].items():
        if opt.get("adversarial") is not None:
            check_adversarial(opt["adversarial"], f"optimizers.{name}.adversarial")
    for name, ds in cfg["datasets"].items():
        where = f"datasets.{name}"
        if ds["kind"] == "clusters":
            _check_clusters(ds, where)
        elif ds["kind"] == "teacher":
            _check_teacher(ds, where)
        elif ds["kind"] == "image":
            _check_image(ds, where)
    from ibrobust import studies

    for sname, st in cfg["studies"].items():
        studies.load(st["kind"]).check(cfg, st, f"studies.{sname}")
    for i, sname in enumerate(cfg.get("only_studies") or []):
        if sname not in cfg["studies"]:
            raise ConfigError(
                f"config key only_studies[{i}]: {sname!r} is not defined under studies "
                f"(defined: {sorted(cfg['studies'])})"
            )


def check_adversarial(adv: dict, where: str) -> None:
    """A robust-ERM block (ibrobust.training.adversarial): eps >= 0, an l_inf eps inside the
    input box's width ([0, 1] for images); ConfigError naming the key."""
    from ibrobust.training.adversarial_config import adversarial_from_dict

    try:
        adversarial_from_dict(adv)
    except ValueError as err:
        msg = str(err)
        key = msg.split()[0].split("=")[0]
        known = ("eps", "norm", "steps", "step_size", "random_start", "box")
        raise ConfigError(f"config key {where}{'.' + key if key in known else ''}: {msg}") from None


# ---- optimizer sweeps: variants <base>@<key>=<value> of an optimizers entry ------------------
def derived_optimizers(cfg: dict) -> dict[str, dict]:
    """Every optimizer variant a study derives (its kind's optional ``optimizer_sweeps``:
    (base optimizer, key, values); key ``eps`` sets the robust-ERM radius
    ``adversarial.eps``) -> its entry. eps 0 is plain ERM."""
    from ibrobust import studies

    out = {}
    for st in cfg["studies"].values():
        kind = studies.load(st["kind"])
        for base, key, values in getattr(kind, "optimizer_sweeps", lambda st: [])(st):
            for v in values:
                entry = copy.deepcopy(cfg["optimizers"][base])
                if key != "eps":
                    raise ValueError(f"optimizer sweeps vary eps only, got {key!r}")
                entry["adversarial"] = {**(entry.get("adversarial") or {}), "eps": float(v)}
                out[variant_name(base, key, v)] = entry
    return out


def _check_image(ds: dict, where: str) -> None:
    explicit = ds["split"] == "explicit"
    pos, neg = ds.get("positive"), ds.get("negative")
    if explicit:
        if not pos or not neg:
            raise ConfigError(
                f"config key {where}.positive: split 'explicit' needs non-empty positive and "
                f"negative class lists, got positive={pos}, negative={neg}"
            )
        both = sorted(set(pos) & set(neg))
        if both:
            raise ConfigError(
                f"config key {where}.negative: classes {both} are in both positive and negative"
            )
    elif pos is not None or neg is not None:
        raise ConfigError(
            f"config key {where}.positive: positive/negative only apply to split 'explicit' "
            f"(split is {ds['split']!r})"
        )
    if ds["source"] in ("npz", "imagefolder") and not ds.get("path"):
        raise ConfigError(f"config key {where}.path: source {ds['source']!r} needs a path")
    if ds["source"] in ("mnist", "cifar10") and ds.get("path"):
        raise ConfigError(
            f"config key {where}.path: source {ds['source']!r} reads torchvision's layout under "
            "data_root; set path only for npz / imagefolder"
        )


def _typed(key: str, v: Any) -> Any:
    return int(v) if key in ("k", "d", "n_train") else float(v)


# ---- dataset sweeps: variants <base>@<key>=<value> of a registry entry ----------------------
def variant_name(base: str, key: str, value: Any) -> str:
    return f"{base}@{key}={float(value):g}"


def sweep_dataset(cfg: dict, base: str, key: str, value: Any) -> str:
    """The dataset a sweep uses at ``key = value``: the base entry itself where it already
    has that value (its jobs are reused), else the variant ``<base>@<key>=<value>``."""
    return (
        base
        if cfg["datasets"][base].get(key) == _typed(key, value)
        else variant_name(base, key, value)
    )


def dataset_sweeps(cfg: dict) -> list[tuple[str, str, list]]:
    """(base dataset, key, values) of every sweep a study derives (its kind's ``sweeps``,
    e.g. a sweep of k at fixed d, or of the noise level alpha)."""
    from ibrobust import studies

    return [s for st in cfg["studies"].values() for s in studies.load(st["kind"]).sweeps(st)]


def study_task(kind: str, supervision: str) -> str:
    """What counts as correct for a model of a study kind: ``binary`` or ``fine``."""
    from ibrobust import studies

    return studies.load(kind).task(supervision)


def derived_datasets(cfg: dict) -> dict[str, dict]:
    """Every sweep variant's name -> its dataset entry (the base entry with key = value)."""
    out = {}
    for base, key, values in dataset_sweeps(cfg):
        for v in values:
            name = sweep_dataset(cfg, base, key, v)
            if name != base:
                out[name] = dict(cfg["datasets"][base], **{key: _typed(key, v)})
    return out


def _check_teacher(ds: dict, where: str) -> None:
    for key in ("k_w", "k_x"):
        if ds[key] > ds["d"]:
            raise ConfigError(f"config key {where}.{key}: {key}={ds[key]} must be <= d={ds['d']}")


def _check_clusters(ds: dict, where: str) -> None:
    d, k = ds["d"], ds["k"]
    if k > d:
        raise ConfigError(f"config key {where}.k: k={k} orthogonal means need k <= d={d}")
    pos = ds.get("positive")
    if pos is None:
        if k % 2:
            raise ConfigError(
                f"config key {where}.k: k={k} must be even for the default balanced split"
            )
    elif not 1 <= len(pos) < k or max(pos) >= k:
        raise ConfigError(
            f"config key {where}.positive: needs 1 to k-1={k - 1} distinct cluster indices in "
            f"[0, {k}) (Min & Vidal use 6 of 10), got {pos}"
        )
    if ds.get("mean_norm") is not None and not math.isfinite(ds["mean_norm"]):
        raise ConfigError(f"config key {where}.mean_norm: must be finite")
