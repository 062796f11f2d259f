"""Figure, table and ledger jobs never touch a tensor, so they must not pay torch's import
(~2 CPU-seconds per job): importing what such a script imports leaves torch unloaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ibrobust.provenance import imported_modules

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "workflow_scripts"

# scripts that still import torch, and why (shrink this list; do not grow it)
TORCH_NEEDED = {
    "fa_lambda_figure.py": "feature_averaging_index is tensor math (topk over lambdas)",
    "price_cosine_figure.py": "labels and tables live in ibrobust.experiments.price_linear",
    "price_gap_difference_figure.py": "labels and tables live in ibrobust.experiments.price_linear",
    "price_gap_figure.py": "labels and tables live in ibrobust.experiments.price_linear",
    "price_summary_table.py": "labels and tables live in ibrobust.experiments.price_linear",
    "claims_ledger.py": "ibrobust.claims.prelu imports ibrobust.analysis.prelu (not prelu_radii)",
    "claims_readme_excerpt.py": "the same ledger modules as claims_ledger.py",
}
LIGHT = sorted(
    p.name
    for p in SCRIPTS.glob("*.py")
    if p.stem.endswith(("_figure", "_table", "_table1")) or p.stem.startswith("claims_")
) + ["_job.py", "_figures.py"]


# one interpreter for all scripts: torch is blocked, and a script whose imports need it fails
# to import (a failed module leaves sys.modules, so the next script that needs it fails too)
PROBE = """
import importlib.abc, json, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("torch blocked")
sys.meta_path.insert(0, Block())
needs = []
for script, modules in json.loads(sys.argv[1]).items():
    try:
        for m in modules:
            __import__(m)
    except ImportError as err:
        if "torch blocked" not in str(err):
            raise
        needs.append(script)
print(json.dumps(needs))
"""


def scripts_needing_torch(scripts: list[str]) -> set[str]:
    arg = json.dumps({s: imported_modules(SCRIPTS / s) for s in scripts})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(SCRIPTS)])}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, arg], env=env, capture_output=True, text=True, check=True
    )
    return set(json.loads(out.stdout))


def test_figure_table_and_ledger_jobs_do_not_import_torch():
    """Every figure/table/ledger script but the listed ones imports without torch; the
    listed ones do need it (else shrink the list), and so does training (the check can tell)."""
    needs = scripts_needing_torch([*LIGHT, "train.py"])
    assert needs - set(TORCH_NEEDED) == {"train.py"}
    assert set(TORCH_NEEDED) <= needs, "now torch-free: drop from TORCH_NEEDED"


def test_the_light_scripts_are_found():
    assert {"fa_robust_figure.py", "fa_summary_table.py", "prelu_table1.py"} <= set(LIGHT)
    assert set(TORCH_NEEDED) <= set(LIGHT)
