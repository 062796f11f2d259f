"""Store URIs that may hold a password: where they come from, and a warning when one
arrives on the command line.

Snakemake writes its whole command line into ``.snakemake/log/<time>.snakemake.log`` (and
hands ``--config`` on to every cluster job's command line), so a password given with
``--config`` is kept in clear however carefully the MLflow side masks it. The way that
puts it on no command line is the environment (docs/operations.md, "Secrets"):

* ``IBROBUST_BACKEND_STORE_URI``: the backend store of the tracking server the workflow
  starts (``mlflow.server.start: true``); wins over ``mlflow.server.backend_store_uri``.
  :func:`backend_store` is the one place that decides; :func:`take_backend_store` also
  removes the variable from the environment the jobs inherit (they need only the
  server's http URI);
* ``MLFLOW_TRACKING_URI`` (MLflow's own): the store or server the jobs write to directly;
  wins over ``mlflow.tracking_uri`` (``uri.resolve_tracking_uri``).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .masking import mask_secrets

ENV_BACKEND_STORE = "IBROBUST_BACKEND_STORE_URI"
# config keys that hold a store URI -> the environment variable to give it in instead
URI_KEYS = {
    ("mlflow", "server", "backend_store_uri"): ENV_BACKEND_STORE,
    ("mlflow", "tracking_uri"): "MLFLOW_TRACKING_URI",
}


def has_secret(text: str) -> bool:
    """Whether ``text`` holds something :func:`mask_secrets` hides (a URI password, ...)."""
    return mask_secrets(text) != text


@dataclass(frozen=True)
class StoreURI:
    """A store URI and where it came from: ``source`` names the setting in messages
    (``config key mlflow.server.backend_store_uri`` or ``environment variable ...``);
    ``variable`` is the environment variable it was read from, if any."""

    uri: str
    source: str
    variable: str | None = None

    def for_shell(self) -> str:
        """The URI as a printed command gives it: ``"$VARIABLE"`` when it holds a password
        and came from the environment, else the URI itself, masked and quoted."""
        if self.variable and has_secret(self.uri):
            return f'"${self.variable}"'
        return shlex.quote(mask_secrets(self.uri))


def backend_store(ml: dict) -> StoreURI:
    """The tracking server's backend store: IBROBUST_BACKEND_STORE_URI if set (and not
    empty), else ``mlflow.server.backend_store_uri``, else ``mlflow.tracking_uri``."""
    env = os.environ.get(ENV_BACKEND_STORE, "").strip()
    if env:
        return StoreURI(env, f"environment variable {ENV_BACKEND_STORE}", ENV_BACKEND_STORE)
    if ml["server"]["backend_store_uri"]:
        key = "config key mlflow.server.backend_store_uri"
        return StoreURI(ml["server"]["backend_store_uri"], key)
    return StoreURI(ml["tracking_uri"], "config key mlflow.tracking_uri")


def take_backend_store(ml: dict) -> StoreURI:
    """:func:`backend_store`, and IBROBUST_BACKEND_STORE_URI removed from this process's
    environment, so no job (local or SLURM, which exports the environment) inherits it."""
    store = backend_store(ml)
    os.environ.pop(ENV_BACKEND_STORE, None)
    return store


def command_line_warning(command_line_config: Mapping | None) -> str | None:
    """The warning for secrets in ``--config`` (Snakemake's ``config_settings.config``; its
    ``overwrite_config`` also holds the ``--configfile`` files), naming each key and the
    environment variable to use instead; None if there is none."""
    fixes = []
    for path, value in _leaves(command_line_config or {}):
        if isinstance(value, str) and has_secret(value):
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
