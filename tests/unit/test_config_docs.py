"""docs/config.md is generated from the schema: it is up to date, and it lists every key."""

from __future__ import annotations

from pathlib import Path

from ibrobust import kinds
from ibrobust.config import load_schema
from ibrobust.config.docs import SCHEMA, render

DOC = Path(__file__).resolve().parents[2] / "docs" / "config.md"


def test_docs_config_md_is_the_generated_text():
    assert DOC.read_text() == render(load_schema(SCHEMA)), (
        "docs/config.md is stale: ibrobust config docs > docs/config.md"
    )


def test_every_kind_and_every_setting_is_documented():
    schema = load_schema(SCHEMA)
    text = render(schema)
    for registry in kinds.REGISTRIES.values():
        for kind in registry.kinds():
            assert f"### {registry.what} kind `{kind}`" in text
            props = schema["definitions"][f"{registry.what}_{kind}"].get("properties", {})
            for key in set(props) - {"kind"}:
                assert f"| `{key}`" in text, (kind, key)
    for key in schema["properties"]:
        assert f"`{key}`" in text
