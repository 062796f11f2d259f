"""The config schema, assembled from the central schema and the kinds' fragments.

``schemas/config.schema.yaml`` holds the top level and the shared pieces; every kind's
settings, defaults and ranges live in its schema fragment beside its module
(:mod:`ibrobust.kinds`). :func:`load_schema` fills the five registries in, so nothing here
lists a kind or its fields.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from ibrobust import kinds


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
                definition["properties"]["claims"] = {"$ref": "#/definitions/study_claims"}
            entry["allOf"].append(
                {
                    "if": {"required": ["kind"], "properties": {"kind": {"const": kind}}},
                    "then": {"$ref": f"#/definitions/{reg.what}_{kind}"},
                }
            )
    return schema
