"""``--config key=value``: Snakemake delivers every such value as a string (also inside
``key={a: b}``); :func:`coerce_command_line` parses the strings where the schema wants
another type, e.g. ``mlflow='{enabled: false}'``, ``threads=2``."""

from __future__ import annotations

import yaml


def coerce_command_line(cfg: dict, schema: dict) -> dict:
    """``cfg`` (changed in place, and returned) with each string parsed as YAML where the
    schema's ``properties`` want a type other than string, recursively into mappings; a
    string that is no YAML stays (the schema's error then names the key)."""
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
            coerce_command_line(value, sub)
    return cfg
