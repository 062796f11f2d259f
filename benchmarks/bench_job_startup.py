"""Benchmark: start-up and exit cost of each workflow script's job, this checkout vs a baseline.

A job's fixed cost is a fresh interpreter importing what its script imports (the snakemake
object, the job wrapper, the library modules) and then exiting the way a job that ended
cleanly exits (``_job.end_process_now`` where the checkout has it: no interpreter teardown;
else the normal exit, whose teardown costs ~0.4 s once torch is loaded). For each script
this starts ``--repeats``
interpreters per checkout, alternating baseline and this checkout so both see the same
machine load, and prints the median CPU-seconds (user + system of the child) and wall
seconds, whether torch got imported, and the ratio this / baseline. Never asserts.

    python benchmarks/bench_job_startup.py [--baseline OTHER_CHECKOUT] [--repeats 3]
        [--scripts dataset.py fa_robust_figure.py ...]

Without ``--baseline`` only this checkout is measured. ``python -X importtime`` on the same
imports shows where the time goes; torch alone is ~2 CPU-seconds here.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from ibrobust.provenance import imported_modules

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = [
    "dataset.py",
    "train.py",
    "attack.py",
    "analyze.py",
    "price_train.py",
    "fa_robust_figure.py",
    "fa_summary_table.py",
    "prelu_robust_figure.py",
    "prelu_summary_table.py",
    "price_gap_figure.py",
    "claims_ledger.py",
]
PROBE = (
    "import sys\n{imports}\nprint('torch' in sys.modules)\n"
    "import _job\ngetattr(_job, 'end_process_now', lambda: None)()"  # how a clean job ends
)


def start_once(checkout: Path, script: str) -> tuple[float, float, bool]:
    """(CPU-s, wall-s, torch imported) of one fresh interpreter importing the script's modules."""
    scripts = checkout / "workflow_scripts"
    imports = "\n".join(f"import {m}" for m in imported_modules(scripts / script))
    return run_probe(checkout, PROBE.format(imports=imports))


def checkout_env(checkout: Path) -> dict[str, str]:
    """This environment with the checkout's library and workflow scripts on the path."""
    paths = [str(checkout / "src"), str(checkout / "workflow_scripts")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def run_probe(checkout: Path, code: str) -> tuple[float, float, bool]:
    """(CPU-s, wall-s, torch imported) of a fresh interpreter running ``code`` on the
    checkout's library and scripts."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=checkout_env(checkout),
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, out.stdout.strip() == "True"


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--baseline", type=Path, help="another checkout to compare with")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--scripts", nargs="+", default=DEFAULT)
    args = ap.parse_args()
    trees = {"this": ROOT} | ({"baseline": args.baseline} if args.baseline else {})
    print(f"load {' '.join(f'{v:.1f}' for v in os.getloadavg())}; medians of {args.repeats}")
    print("| script | checkout | torch | CPU-s | wall-s | CPU this/baseline |")
    print("|---|---|---|---:|---:|---:|")
    for script in args.scripts:
        runs = {name: [] for name in trees}
        for _ in range(args.repeats):
            for name, tree in reversed(trees.items()):  # baseline first, then this
                runs[name].append(start_once(tree, script))
        cpu = {n: statistics.median(r[0] for r in rs) for n, rs in runs.items()}
        for name, rs in runs.items():
            wall = statistics.median(r[1] for r in rs)
            ratio = f"{cpu['this'] / cpu['baseline']:.2f}" if "baseline" in cpu else "-"
            ratio = ratio if name == "this" else ""
            print(f"| {script} | {name} | {rs[0][2]} | {cpu[name]:.2f} | {wall:.2f} | {ratio} |")


if __name__ == "__main__":
    main()
