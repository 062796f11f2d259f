"""Validation of a configuration: the schema with its defaults, then each entry's own value
checks and the cross-references, each problem as a :class:`~ibrobust.errors.ConfigError`.

:func:`validate_config` fills schema defaults, then raises a ConfigError whose message
names the offending key path (``studies.fa.seeds[1]``) and value - before the workflow
schedules anything. It reaches the kinds only through the registries of
:mod:`ibrobust.kinds`: an entry's value checks are its kind's ``check``, a study's
cross-checks its study kind's ``check``; nothing here lists a kind or its fields. The
expanded config a study plan runs (sweep variants, scale-ladder rungs) is
:mod:`ibrobust.studies.expansion`'s, applied to the validated config.
"""

from __future__ import annotations

import copy

import jsonschema

from ibrobust import kinds
from ibrobust.config.command_line import coerce_command_line
from ibrobust.config.values import key_path, value_problems
from ibrobust.device import cuda_build_problem
from ibrobust.errors import ConfigError


def validate_config(config: dict, schema: dict) -> dict:
    """Validated copy of ``config`` with defaults filled; ConfigError on the first problem:
    the schema on what the user wrote, then (defaults filled) each entry's kind's own value
    checks (an optimizer's robust-ERM block among them), then the cross-references (the
    studies' checks, ``only_studies``)."""
    cfg = coerce_command_line(copy.deepcopy(config), schema)
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
    cuda_problem = cuda_build_problem(str(cfg.get("device", "auto")))
    if cuda_problem:  # device: cuda can never run on a torch without CUDA (any host)
        raise ConfigError(cuda_problem)
    _check_entries(cfg)
    _check_references(cfg)
    return cfg


# ---- the schema, with its defaults ------------------------------------------------------------
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


# ---- the schema's error messages ------------------------------------------------------------
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


# ---- beyond the schema: the kinds' checks -----------------------------------------------------
def _check_entries(cfg: dict) -> None:
    """Each registry entry's own value checks (its kind's ``check``, where it declares one;
    an optimizer kind's checks its robust-ERM block ``adversarial``)."""
    for section, reg in kinds.REGISTRIES.items():
        if section == kinds.STUDIES.section:  # a study's check is a cross-check (below)
            continue
        for name, entry in cfg.get(section, {}).items():
            reg.check_entry(entry, f"{section}.{name}")


def _check_references(cfg: dict) -> None:
    """Each study's cross-checks (its study kind's ``check``), then ``only_studies``."""
    for sname, st in cfg["studies"].items():
        kinds.STUDIES.load(st["kind"]).check(cfg, st, f"studies.{sname}")
    for i, sname in enumerate(cfg.get("only_studies") or []):
        if sname not in cfg["studies"]:
            raise ConfigError(
                f"config key only_studies[{i}]: {sname!r} is not defined under studies "
                f"(defined: {sorted(cfg['studies'])})"
            )
