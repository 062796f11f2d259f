"""Figure, table and ledger jobs never touch a tensor, so they must not pay torch's import
(~2 CPU-seconds per job): importing what such a script imports leaves torch unloaded. Nor
do figure jobs pay seaborn's and scipy's (~1.6 CPU-s; ibrobust.plotting.style draws what
the figures took from seaborn)."""

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
TORCH_NEEDED: dict[str, str] = {}
LIGHT = sorted(
    p.name
    for p in SCRIPTS.glob("*.py")
    if p.stem.endswith(("_figure", "_figures", "_table")) or p.stem.startswith("claims_")
) + ["_job.py", "_figures.py"]


FIGURES = [s for s in LIGHT if "_figure" in s]

# one interpreter for all scripts: the packages in argv[2] are blocked, and a script whose
# imports need one fails to import (a failed module leaves sys.modules, so the next script
# that needs it fails too)
PROBE = """
import importlib.abc, json, sys
BLOCKED = json.loads(sys.argv[2])
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} blocked")
sys.meta_path.insert(0, Block())
needs = []
for script, modules in json.loads(sys.argv[1]).items():
    try:
        for m in modules:
            __import__(m)
    except ImportError as err:
        if "blocked" not in str(err):
            raise
        needs.append(script)
print(json.dumps(needs))
"""


def scripts_needing(scripts: list[str], blocked: list[str]) -> set[str]:
    """The scripts whose imports need a package in ``blocked``."""
    arg = json.dumps({s: imported_modules(SCRIPTS / s) for s in scripts})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(SCRIPTS)])}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, arg, json.dumps(blocked)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return set(json.loads(out.stdout))


def test_figure_table_and_ledger_jobs_do_not_import_torch():
    """Every figure/table/ledger script but the listed ones imports without torch; the
    listed ones do need it (else shrink the list), and so does training (the check can tell)."""
    needs = scripts_needing([*LIGHT, "train.py"], ["torch"])
    assert needs - set(TORCH_NEEDED) == {"train.py"}
    assert set(TORCH_NEEDED) <= needs, "now torch-free: drop from TORCH_NEEDED"


def test_figure_jobs_import_neither_seaborn_nor_scipy(tmp_path):
    """Torch allowed, so the figure scripts that need it are checked too; the last script,
    which imports the LP module (scipy at its top), shows that the check can tell."""
    lp = tmp_path / "lp_job.py"
    lp.write_text("import ibrobust.analysis.linear_margin\n")
    assert scripts_needing([*FIGURES, str(lp)], ["seaborn", "scipy"]) == {str(lp)}


def test_the_light_scripts_are_found():
    light = {"fa_figures.py", "prelu_figures.py", "margin_figures.py", "attack_audit_table.py"}
    assert light <= set(LIGHT)
    assert set(TORCH_NEEDED) <= set(LIGHT)
    assert {"fa_figures.py", "price_linear_figures.py", "_figures.py"} <= set(FIGURES)


def test_snakemake_process_imports_no_torch():
    """Every ``snakemake`` call validates and expands the config and loads the claims
    ledger's declarations (rules/claims.smk): none may import torch (~1.3 s of each call)."""
    code = (
        "import sys, ibrobust.config, ibrobust.studies, ibrobust.studies.expansion, "
        "ibrobust.attacks.policy, ibrobust.ledger.table, ibrobust.provenance; "
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
