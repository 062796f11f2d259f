"""Helpers of the config tests."""

from __future__ import annotations

import copy


def merged(base: dict, overlay: dict) -> dict:
    """Snakemake's --configfile semantics: mappings merge, everything else replaces."""
    out = copy.deepcopy(base)
    for k, v in overlay.items():
        out[k] = merged(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out
