"""The library of this checkout, for the Snakefile (code hashes) and for every job.

``use_checkout_library(basedir)`` puts ``<basedir>/src`` first on ``sys.path`` and on
``PYTHONPATH``; jobs inherit the environment (locally, and under SLURM with ``--export=ALL``),
so they import the same ``ibrobust`` as the Snakefile hashed, also inside a conda env of
``envs/`` (which installs only the dependencies: Snakemake copies env files before building
them, so a relative ``-e ../`` would point elsewhere). An ``ibrobust`` already imported from
elsewhere (a venv installed editable from another checkout) is dropped from
``sys.modules``, so the Snakefile validates, plans and hashes with this checkout's library.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

PACKAGE = "ibrobust"


def use_checkout_library(basedir: str | os.PathLike) -> str:
    src = str(Path(basedir).resolve() / "src")
    sys.path[:] = [src, *(p for p in sys.path if p != src)]
    rest = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != src]
    os.environ["PYTHONPATH"] = os.pathsep.join([src, *rest])
    loaded = sys.modules.get(PACKAGE)
    where = getattr(loaded, "__file__", None) or ""
    if loaded is not None and not Path(where).resolve().is_relative_to(src):
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            del sys.modules[name]
    return src
