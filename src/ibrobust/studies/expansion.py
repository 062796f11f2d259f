"""The expanded config a study plan runs: derived dataset and optimizer variants,
scale-ladder rungs.

A validated config (:func:`ibrobust.config.validate_config`) names the entries the user
wrote. The studies derive more from them, all named ``<base>@<key>=<value>``:

* **dataset sweeps** - a study kind's ``sweeps`` (e.g. k at fixed d, the noise level
  alpha): the variants of a ``datasets`` entry (:func:`derived_datasets`);
* **optimizer sweeps** - a study kind's ``optimizer_sweeps``: robust ERM at each training
  radius, variants of an ``optimizers`` entry (:func:`derived_optimizers`);
* **scale ladders** - a study's ``scale`` block: per rung, the scaled dataset or model
  entry and the rung study ``<study>@<key>=<value>``, added to the config by
  :func:`expand_scale` (checked like any entry and study), listed by :func:`scale_rungs`.

The workflow validates, then expands (``rules/common.smk``); each step raises
:class:`~ibrobust.errors.ConfigError` naming the key path. Imports nothing heavy: the
Snakefile reads it while parsing.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema

from ibrobust import kinds, studies
from ibrobust.errors import ConfigError


# ---- optimizer sweeps: variants <base>@<key>=<value> of an optimizers entry ------------------
def derived_optimizers(cfg: dict) -> dict[str, dict]:
    """Every optimizer variant a study derives (its kind's optional ``optimizer_sweeps``:
    (base optimizer, key, values); key ``eps`` sets the robust-ERM radius
    ``adversarial.eps``) -> its entry. eps 0 is plain ERM."""
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
    return [s for st in cfg["studies"].values() for s in studies.hook(st["kind"], "sweeps")(st)]


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
    """The validated ``cfg`` with every scale ladder's rungs added: for each rung value v of a
    study's ``scale`` block, the entry variant ``<entry>@<key>=<v>`` (the dataset or model
    entry with key = v, checked against its kind's fragment in ``schema`` and by its kind's
    ``check``) and the rung study ``<study>@<key>=<v>``: the study block with the ladder's
    ``overrides`` applied, every reference to the entry renamed to the variant, ``enabled:
    false`` and no ``scale``, checked by its study kind's ``check`` (ConfigError naming the
    scale block on a bad rung). Rungs build only with the ``scale`` target; a rung equal to
    the base study is the base study itself (:func:`scale_rungs`)."""
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
        _check_overrides(block, sc["overrides"], schema, where)
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
            try:
                kinds.STUDIES.load(st["kind"]).check(out, st, f"studies.{r.ladder}.scale ({rung})")
            except ConfigError as err:  # the message starts with the key the user wrote
                raise ConfigError(
                    f"config key studies.{r.ladder}.scale: the rung {rung}: {err}"
                ) from None
    return out


def _check_variant(entry: dict, schema: dict, reg: kinds.Registry, where: str) -> None:
    definition = {**schema, "$ref": f"#/definitions/{reg.what}_{entry['kind']}"}
    errors = list(jsonschema.Draft7Validator(definition).iter_errors(entry))
    if errors:
        raise ConfigError(f"config key {where}: {errors[0].message}")
    reg.check_entry(entry, where)


def _check_overrides(block: dict, overrides: Mapping, schema: dict, where: str) -> None:
    """A ladder's ``overrides`` are keys of its study: the study block with them applied is
    checked against its study kind's schema in ``schema``. ConfigError at the first problem,
    naming its key under ``<where>.overrides`` (an unknown key, at any depth, by its own
    path; the schema's ``overrides: {type: object}`` alone would take any key silently)."""
    if not overrides:
        return
    if "scale" in overrides:
        raise ConfigError(f"config key {where}.overrides.scale: a rung climbs no ladder of its own")
    rung = _merged(block, overrides)
    definition = {**schema, "$ref": f"#/definitions/{kinds.STUDIES.what}_{block['kind']}"}
    errors = jsonschema.Draft7Validator(definition).iter_errors(rung)
    for e in sorted(errors, key=lambda e: [str(p) for p in e.absolute_path]):
        path = list(e.absolute_path)
        what = e.message
        if e.validator == "additionalProperties":
            allowed = sorted(e.schema.get("properties", {}))
            extra = [k for k in e.instance if k not in allowed]
            path.append(next((k for k in extra if _inside(overrides, [*path, k])), extra[0]))
            what = f"unknown key (allowed: {allowed})"
        if _inside(overrides, path):
            raise ConfigError(f"config key {where}.overrides{_suffix(path)}: {what}")
        raise ConfigError(  # an override that breaks a key it does not name (e.g. kind)
            f"config key {where}.overrides: the rung study's {_suffix(path)[1:] or 'block'}: {what}"
        )


def _inside(overrides: Mapping, path: list) -> bool:
    """``path`` (below a study block) is a key the overrides write, or lies below one."""
    node: Any = overrides
    for part in path:
        if not isinstance(node, Mapping):
            return True  # below a value the overrides replace whole (a list, a block)
        if part not in node:
            return False
        node = node[part]
    return True


def _suffix(path: list) -> str:
    """``["cnn", "eps", 0]`` -> ``.cnn.eps[0]``."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


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
