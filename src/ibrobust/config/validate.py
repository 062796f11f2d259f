"""Configuration: JSON-schema validation with defaults, and cross-reference checks.

``validate_config`` fills schema defaults, then raises :class:`ConfigError` (a
ValueError) whose message names the offending key path (``studies.fa.seeds[1]``) and
value - before the workflow schedules anything. The schema is assembled from the five
registries of :mod:`ibrobust.kinds` (:func:`load_schema`): every kind's settings, their
defaults and ranges live in its schema fragment, its value checks in its module's
``check``; nothing here lists a kind or its fields.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from ibrobust import kinds
from ibrobust.attacks.policy import (  # noqa: F401  (re-exported: the config's attack vocabulary)
    NORMS,
    attack_applies,
    attack_norm,
    grid_attacks,
    radius_grids,
)
from ibrobust.config.values import key_path, value_problems


class ConfigError(ValueError):
    """Invalid configuration; the message starts with the offending key path."""


def config_error(where: str, err: Exception, entry: Mapping | None = None) -> ConfigError:
    """A ConfigError for a library ValueError about the entry at ``where``: the message's
    first word names the offending setting when it is one of ``entry``'s keys (``k must
    satisfy 2 <= k <= d=40`` -> ``config key datasets.x.k: ...``), else the entry."""
    msg = str(err)
    first = re.split(r"[\s=:,(\[]", msg, maxsplit=1)[0]
    at = f"{where}.{first}" if entry is not None and first in entry else where
    return ConfigError(f"config key {at}: {msg}")


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
    """The config schema at ``path`` with every registered kind of the five registries filled
    in the same way: ``definitions.<what>.kind`` gets the enum of the kinds, each kind's
    fragment (without ``x-kind``) becomes ``definitions.<what>_<kind>``, selected by if/then
    on ``kind`` (``ibrobust.kinds.REGISTRIES``)."""
    schema = yaml.safe_load(Path(path).read_text())
    for reg in kinds.REGISTRIES.values():
        entry = schema["definitions"][reg.what]
        entry["properties"]["kind"]["enum"] = reg.kinds()
        entry["allOf"] = []
        for kind in reg.kinds():
            schema["definitions"][f"{reg.what}_{kind}"] = definition = reg.schema(kind)
            if reg is kinds.STUDIES:  # every study kind may climb a scale ladder
                definition["properties"]["scale"] = {"$ref": "#/definitions/scale"}
            entry["allOf"].append(
                {
                    "if": {"required": ["kind"], "properties": {"kind": {"const": kind}}},
                    "then": {"$ref": f"#/definitions/{reg.what}_{kind}"},
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
    """Validated copy of ``config`` with defaults filled; ConfigError on the first problem:
    the schema on what the user wrote, then (defaults filled) each entry's kind's own value
    checks, then the cross-references (robust-ERM blocks, the studies' checks); the scale
    ladders' rungs added last (:func:`expand_scale`)."""
    cfg = _coerce_command_line(copy.deepcopy(config), schema)
    bad_values = value_problems(cfg, schema)  # NaN / inf anywhere, 1.0 for an integer
    if bad_values:
        raise ConfigError("\n".join(map(str, bad_values)))
    _check_kind_names(cfg)
    errors = sorted(
        jsonschema.Draft7Validator(schema).iter_errors(cfg), key=lambda e: list(e.absolute_path)
    )
    if errors:
        raise ConfigError(_message(errors[0]))
    _fill_registry_defaults(cfg, schema)
    _check_entries(cfg)
    _check_references(cfg)
    return expand_scale(cfg, schema)


def _check_kind_names(cfg: dict) -> None:
    """An entry's kind is a registered one (the schema's enum error would not say which
    registry, nor list its kinds)."""
    for section, reg in kinds.REGISTRIES.items():
        entries = cfg.get(section)
        if not isinstance(entries, dict):
            continue
        for name, entry in entries.items():
            kind = entry.get("kind") if isinstance(entry, dict) else None
            if isinstance(kind, str) and kind not in reg.table:
                raise ConfigError(f"config key {section}.{name}.kind: {reg.unknown(kind)}")


def _described(schema: dict) -> str:
    """The first sentence of a schema's description, or ''."""
    text = " ".join(str(schema.get("description", "")).split())
    return text.split(". ", 1)[0].rstrip(".")


def _message(e: jsonschema.ValidationError) -> str:
    """A schema error as ``config key <path>: <what is wrong>`` (with the setting's
    description where it says what is allowed)."""
    where = key_path(e.absolute_path)
    at = where + "." if e.absolute_path else ""
    path = list(e.absolute_path)
    entry = len(path) == 2 and path[0] in kinds.REGISTRIES and isinstance(e.instance, dict)
    kind = e.instance.get("kind") if entry else None  # the error is about a registry entry
    if e.validator == "additionalProperties":
        allowed = sorted(e.schema.get("properties", {}))
        extra = sorted(set(e.instance) - set(allowed))
        of = f": not a setting of kind {kind!r}" if kind else ""
        return f"config key {at}{extra[0]}: unknown key{of} (allowed: {allowed})"
    if e.validator == "required":
        missing = next(k for k in e.validator_value if k not in e.instance)
        what = _described(e.schema.get("properties", {}).get(missing, {}))
        of = f" of kind {kind!r}" if kind else ""
        return f"config key {at}{missing}: {e.message}{of}" + (f" ({what})" if what else "")
    what = _described(e.schema)
    if e.validator == "not" and what:  # the schema's own words say what is wrong
        return f"config key {where}: {e.instance!r}: {what}"
    return f"config key {where}: {e.message}" + (f" ({what})" if what else "")


def _check_entries(cfg: dict) -> None:
    """Each registry entry's own value checks (its kind's ``check``, where it declares one)."""
    for section, reg in kinds.REGISTRIES.items():
        if section == kinds.STUDIES.section:  # a study's check is a cross-check (below)
            continue
        for name, entry in cfg.get(section, {}).items():
            reg.check_entry(entry, f"{section}.{name}")


def _check_references(cfg: dict) -> None:
    for name, opt in cfg["optimizers"].items():
        if opt.get("adversarial") is not None:
            check_adversarial(opt["adversarial"], f"optimizers.{name}.adversarial")
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
        for base, key, values in studies.hook(st["kind"], "optimizer_sweeps")(st):
            for v in values:
                entry = copy.deepcopy(cfg["optimizers"][base])
                if key != "eps":
                    raise ValueError(f"optimizer sweeps vary eps only, got {key!r}")
                entry["adversarial"] = {**(entry.get("adversarial") or {}), "eps": float(v)}
                out[variant_name(base, key, v)] = entry
    return out


def typed(entry: Mapping, key: str, value: Any, section: str = "datasets") -> Any:
    """``value`` of setting ``key`` of a registry entry (a dataset by default) as its kind's
    fragment types it: an int for an integer setting (a sweep's d, k or n_train), else a
    float."""
    reg = kinds.REGISTRIES[section]
    types = reg.schema(entry["kind"])["properties"].get(key, {}).get("type", [])
    return (
        int(value) if "integer" in (types if isinstance(types, list) else [types]) else float(value)
    )


# ---- dataset sweeps: variants <base>@<key>=<value> of a registry entry ----------------------
def variant_name(base: str, key: str, value: Any) -> str:
    return f"{base}@{key}={float(value):g}"


def sweep_dataset(cfg: dict, base: str, key: str, value: Any) -> str:
    """The dataset a sweep uses at ``key = value``: the base entry itself where it already
    has that value (its jobs are reused), else the variant ``<base>@<key>=<value>``."""
    entry = cfg["datasets"][base]
    return base if entry.get(key) == typed(entry, key, value) else variant_name(base, key, value)


def dataset_sweeps(cfg: dict) -> list[tuple[str, str, list]]:
    """(base dataset, key, values) of every sweep a study derives (its kind's ``sweeps``,
    e.g. a sweep of k at fixed d, or of the noise level alpha)."""
    from ibrobust import studies

    return [s for st in cfg["studies"].values() for s in studies.hook(st["kind"], "sweeps")(st)]


def study_task(kind: str, supervision: str) -> str:
    """What counts as correct for a model of a study kind: ``binary`` or ``fine``."""
    from ibrobust import studies

    return studies.hook(kind, "task")(supervision)


def derived_datasets(cfg: dict) -> dict[str, dict]:
    """Every sweep variant's name -> its dataset entry (the base entry with key = value)."""
    out = {}
    for base, key, values in dataset_sweeps(cfg):
        for v in values:
            name = sweep_dataset(cfg, base, key, v)
            if name != base:
                entry = cfg["datasets"][base]
                out[name] = dict(entry, **{key: typed(entry, key, v)})
    return out


# ---- scale ladders: a study's rungs <study>@<key>=<value> --------------------------------
@dataclass(frozen=True)
class Rung:
    """One rung of a study's scale ladder: the base study, the scaled setting and its value."""

    ladder: str
    key: str
    value: float


def rung_name(study: str, key: str, value: Any) -> str:
    return f"{study}@{key}={float(value):g}"


def scale_rungs(cfg: dict) -> dict[str, Rung]:
    """Every rung study of the (expanded) config -> its :class:`Rung`, ladders in the config's
    order, rungs in theirs. A rung equal to its base study (the scaled entry already has that
    value and the ladder overrides nothing) is the base study itself."""
    out: dict[str, Rung] = {}
    for name, st in cfg["studies"].items():
        sc = st.get("scale")
        if not sc:
            continue
        section, base = _scaled_entry(sc)
        entry = cfg[section][base]
        for v in sc["rungs"]:
            same = entry.get(sc["key"]) == typed(entry, sc["key"], v, section)
            rung = name if same and not sc.get("overrides") else rung_name(name, sc["key"], v)
            out[rung] = Rung(name, sc["key"], float(v))
    return out


def _scaled_entry(sc: Mapping) -> tuple[str, str]:
    """(registry section, entry name) a scale block scales."""
    return ("datasets", sc["dataset"]) if sc.get("dataset") else ("models", sc["model"])


def expand_scale(cfg: dict, schema: dict) -> dict:
    """``cfg`` with every scale ladder's rungs added: for each rung value v of a study's
    ``scale`` block, the entry variant ``<entry>@<key>=<v>`` (the dataset or model entry
    with key = v, checked against its kind's fragment) and the rung study
    ``<study>@<key>=<v>``: the study block with the ladder's ``overrides`` applied, every
    reference to the entry renamed to the variant, ``enabled: false`` and no ``scale``
    (ConfigError naming the scale block on a bad rung). Rungs build only with the ``scale``
    target; a rung equal to the base study is the base study itself (:func:`scale_rungs`)."""
    out = copy.deepcopy(cfg)
    for name, st in cfg["studies"].items():
        sc = st.get("scale")
        if not sc:
            continue
        where = f"studies.{name}.scale"
        section, base = _scaled_entry(sc)
        if base not in cfg[section]:
            raise ConfigError(
                f"config key {where}.{section[:-1]}: {base!r} is not defined under {section}"
            )
        block = {k: val for k, val in st.items() if k != "scale"}
        if _renamed(block, base, "\0") == block:  # a ladder on an entry the study never reads
            raise ConfigError(
                f"config key {where}.{section[:-1]}: study {name!r} does not use {base!r} "
                f"(an overlay that replaces the study's {section} also sets scale: null)"
            )
        entry = cfg[section][base]
        reg = kinds.REGISTRIES[section]
        if sc["key"] not in reg.schema(entry["kind"]).get("properties", {}):
            raise ConfigError(
                f"config key {where}.key: {sc['key']!r} is not a setting of {reg.what} kind "
                f"{entry['kind']!r}"
            )
        for i, v in enumerate(sc["rungs"]):
            variant = dict(entry, **{sc["key"]: typed(entry, sc["key"], v, section)})
            if variant == entry and not sc["overrides"]:
                continue  # the base study itself is this rung
            vname = base if variant == entry else variant_name(base, sc["key"], v)
            _check_variant(variant, schema, reg, f"{where}.rungs[{i}]")
            out[section][vname] = variant
            rung = rung_name(name, sc["key"], v)
            rung_block = _merged(block, sc["overrides"])
            out["studies"][rung] = dict(_renamed(rung_block, base, vname), enabled=False)
    for rung, r in scale_rungs(out).items():
        if rung != r.ladder:
            st = out["studies"][rung]
            kinds.STUDIES.load(st["kind"]).check(out, st, f"studies.{r.ladder}.scale ({rung})")
    return out


def _check_variant(entry: dict, schema: dict, reg, where: str) -> None:
    definition = {**schema, "$ref": f"#/definitions/{reg.what}_{entry['kind']}"}
    errors = list(jsonschema.Draft7Validator(definition).iter_errors(entry))
    if errors:
        raise ConfigError(f"config key {where}: {errors[0].message}")
    reg.check_entry(entry, where)


def _merged(block: dict, overrides: Mapping) -> dict:
    """``block`` with ``overrides`` applied, nested mappings merged key by key."""
    out = copy.deepcopy(block)
    for key, val in overrides.items():
        if isinstance(val, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merged(out[key], val)
        else:
            out[key] = copy.deepcopy(val)
    return out


def _renamed(node: Any, old: str, new: str) -> Any:
    """``node`` with every string value and mapping key equal to ``old`` replaced by ``new``."""
    if isinstance(node, dict):
        return {(new if k == old else k): _renamed(v, old, new) for k, v in node.items()}
    if isinstance(node, list):
        return [_renamed(v, old, new) for v in node]
    return new if node == old else node
