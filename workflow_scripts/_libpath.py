"""The library of this checkout, for the Snakefile (code hashes) and for every job.

``use_checkout_library(basedir)`` puts ``<basedir>/src`` first on ``sys.path`` and on
``PYTHONPATH``; jobs inherit the environment (locally, and under SLURM with ``--export=ALL``),
so they import the same ``ibrobust`` as the Snakefile hashed, also inside a conda env of
``envs/`` (which installs only the dependencies: Snakemake copies env files before building
them, so a relative ``-e ../`` would point elsewhere).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def use_checkout_library(basedir: str | os.PathLike) -> str:
    src = str(Path(basedir) / "src")
    if src not in sys.path:
        sys.path.insert(0, src)
    rest = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != src]
    os.environ["PYTHONPATH"] = os.pathsep.join([src, *rest])
    return src
