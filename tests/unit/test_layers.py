"""The library's layers (pyproject.toml, [tool.importlinter]): ``lint-imports`` keeps every
contract, so ``pytest`` checks that nothing in src/ibrobust imports upward."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")  # the venv's entry point


def test_the_import_contracts_are_kept():
    assert LINT_IMPORTS.is_file(), f"{LINT_IMPORTS} missing: install the test extra"
    # this checkout's library, whatever the venv was installed from
    paths = [str(ROOT / "src"), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    out = subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stdout + out.stderr
