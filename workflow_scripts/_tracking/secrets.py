"""The warning for a password given with ``--config``.

Snakemake writes its whole command line into ``.snakemake/log/<time>.snakemake.log`` (and
hands ``--config`` on to every cluster job's command line), so a password given with
``--config`` is kept in clear however carefully the MLflow side masks it. The way that
puts it on no command line is MLflow's own environment variable ``MLFLOW_TRACKING_URI``
(docs/operations.md, "Secrets"); the Snakemake process reads it and removes it from the
environment its jobs inherit (they never write to the store).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .masking import mask_secrets

# config keys that hold a store URI -> the environment variable to give it in instead
URI_KEYS = {("mlflow", "tracking_uri"): "MLFLOW_TRACKING_URI"}


def command_line_warning(command_line_config: Mapping | None) -> str | None:
    """The warning for secrets in ``--config`` (Snakemake's ``config_settings.config``),
    naming each key and what to use instead; None if there is none."""
    fixes = []
    for path, value in _leaves(command_line_config or {}):
        if isinstance(value, str) and mask_secrets(value) != value:
            key, var = ".".join(path), URI_KEYS.get(path)
            fixes.append(
                f"instead of --config {key}, set the environment variable {var}"
                if var
                else f"instead of --config {key}, use a config file (--configfile)"
            )
    if not fixes:
        return None
    fix = "; ".join(fixes)
    return (
        "ibrobust: WARNING: a password given with --config is kept in clear: Snakemake "
        "prints its command line and writes it into .snakemake/log/<time>.snakemake.log "
        "(cluster jobs get --config on theirs too), although MLflow receives it masked. "
        f"{fix[0].upper()}{fix[1:]} (docs/operations.md, 'Secrets'); then delete the "
        "log files that hold the password."
    )


def _leaves(value: Any, path: tuple[str, ...] = ()):
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from _leaves(v, (*path, str(k)))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _leaves(v, (*path, str(i)))
    else:
        yield path, value
