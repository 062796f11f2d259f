"""docs/config.md: every configuration key, generated from the schema's descriptions.

The keys are documented once, where they are validated: ``schemas/config.schema.yaml``
(the top level and shared pieces) and each kind's fragment beside its module (assembled by
:func:`ibrobust.config.schema.load_schema`). This module renders them as markdown: the top-level
keys, then per registry (datasets, models, optimizers, attacks, studies) one section per
kind with a table of its settings (type, default, description) and nested blocks flattened
to dotted keys.

    ibrobust config docs > docs/config.md      # (or python -m ibrobust.config.docs)
    ibrobust config docs --check               # so does tests/unit/test_config_docs.py
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ibrobust import kinds
from ibrobust.config.schema import load_schema

SHARED = ("adversarial", "radius_grid", "scale")  # the central schema's pieces entries refer to
SCHEMA = Path(__file__).resolve().parents[3] / "schemas" / "config.schema.yaml"
HEADER = """# Configuration reference

Generated from the schema (`schemas/config.schema.yaml` and each kind's fragment beside its
module) by `ibrobust config docs > docs/config.md`; never edited by hand (`ibrobust config
docs --check` and `tests/unit/test_config_docs.py` fail when it is stale). `config.yaml` is
the default configuration; overlay another file with `--configfile FILE` or set a value
with `--config key=value`. Every value is checked before any job starts, and an error names
its key path.
"""


def _type(node: dict) -> str:
    if "$ref" in node:
        return node["$ref"].rsplit("/", 1)[1].replace("_", " ")
    t = node.get("type", "")
    types = t if isinstance(t, list) else [t]
    text = " or ".join(str(x) for x in types if x)
    if "enum" in node:
        text = " / ".join(f"`{v}`" for v in node["enum"])
    if text == "array" and isinstance(node.get("items"), dict) and node["items"].get("type"):
        text = f"list of {node['items']['type']}"
    return text


def _default(node: dict) -> str:
    if "default" not in node:
        return ""
    return f"`{json.dumps(node['default'])}`"


def _desc(node: dict) -> str:
    return " ".join(str(node.get("description", "")).split()).replace("|", "\\|")


def rows(props: dict, required: list[str], prefix: str = "") -> Iterator[tuple[str, ...]]:
    """(key, type, default, description) of every property, nested objects flattened."""
    for key, node in props.items():
        name = f"{prefix}{key}"
        req = " (required)" if key in required else ""
        yield f"`{name}`{req}", _type(node), _default(node), _desc(node)
        if node.get("type") == "object" and isinstance(node.get("properties"), dict):
            yield from rows(node["properties"], node.get("required", []), f"{name}.")


def table(props: dict, required: list[str]) -> list[str]:
    out = ["| key | type | default | description |", "|---|---|---|---|"]
    out += ["| " + " | ".join(r) + " |" for r in rows(props, required)]
    return out


def render(schema: dict[str, Any]) -> str:
    defs = schema["definitions"]
    top = {k: v for k, v in schema["properties"].items() if k not in kinds.REGISTRIES}
    out = [HEADER, "## Top level", ""] + table(top, schema.get("required", [])) + [""]
    for section, registry in kinds.REGISTRIES.items():
        node = schema["properties"][section]
        out += [f"## `{section}`: named {registry.what} entries", "", _desc(node), ""]
        out += [_desc(defs[registry.what]), ""]
        for kind in registry.kinds():
            frag = defs[f"{registry.what}_{kind}"]
            props = {k: v for k, v in frag.get("properties", {}).items() if k != "kind"}
            caps = registry.capabilities(kind)
            out += [f"### {registry.what} kind `{kind}`", ""]
            out += [f"Module `{registry.module_name(kind)}`. {_desc(frag)}".strip(), ""]
            kind_desc = _desc(frag.get("properties", {}).get("kind", {}))
            if kind_desc:
                out += [kind_desc, ""]
            shown = {k: v for k, v in caps.items() if v not in (None, False, [], {}, "")}
            if shown:
                caps_text = ", ".join(f"`{k}`: {json.dumps(v)}" for k, v in shown.items())
                out += [f"Capabilities: {caps_text}", ""]
            out += (table(props, frag.get("required", [])) if props else ["(no settings)"]) + [""]
    for name in SHARED:
        node = defs[name]
        out += [f"## Shared: `{name}`", "", _desc(node), ""]
        if isinstance(node.get("properties"), dict):
            out += table(node["properties"], node.get("required", [])) + [""]
    return "\n".join(out).rstrip() + "\n"


def main() -> None:
    sys.stdout.write(render(load_schema(SCHEMA)))


if __name__ == "__main__":
    main()
