"""Helpers of the config tests."""

from __future__ import annotations

import copy


def merged(base: dict, overlay: dict) -> dict:
    """Snakemake's --configfile semantics: mappings merge, everything else replaces."""
    out = copy.deepcopy(base)
    for k, v in overlay.items():
        out[k] = merged(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def validated(cfg: dict, schema: dict) -> dict:
    """What the workflow plans from (rules/common.smk): ``cfg`` validated with defaults filled,
    then the studies' scale-ladder rungs added."""
    from ibrobust.config import validate_config
    from ibrobust.studies.expansion import expand_scale

    return expand_scale(validate_config(cfg, schema), schema)


def bad_cases(rows):
    """pytest params (overlay, key, fragment) from rows (id, overlay, key, fragment)."""
    import pytest

    return [pytest.param(o, k, f, id=i) for i, o, k, f in rows]


def assert_rejected(cfg: dict, schema: dict, key: str, fragment: str) -> None:
    """The validation or the expansion (:func:`validated`) refuses ``cfg`` with a message
    naming ``key`` and saying ``fragment``."""
    import pytest

    from ibrobust.config import ConfigError

    with pytest.raises(ConfigError) as err:
        validated(cfg, schema)
    msg = str(err.value)
    assert f"config key {key}" in msg and fragment in msg, msg
