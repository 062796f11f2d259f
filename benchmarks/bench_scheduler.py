"""CPU of the Snakemake process itself: Snakemake's scheduler as shipped vs with
``workflow_scripts/_scheduler.py`` (one pending re-evaluation timer instead of one per job).

Runs the same throw-away workflow twice in one go: ``--jobs`` independent jobs that each
read 8 input files and sleep ``--sleep`` seconds (no CPU of their own), ``--cores`` at a
time, so that ready jobs wait as they do in ``reproduce``. Prints, per variant, the wall time, the CPU-seconds of
the whole run (Snakemake + its job processes, from ``RUSAGE_CHILDREN``) and the peak number
of threads of the Snakemake process, and the ratio of the two CPU figures.

    python benchmarks/bench_scheduler.py [--jobs 300] [--sleep 0.5] [--cores 2]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[1] / "workflow_scripts"
SNAKEFILE = """
import sys
if config.get("coalesce"):
    sys.path.insert(0, {scripts!r})
    import _scheduler
    assert _scheduler.coalesce_reevaluations()

rule all:
    input: expand("out/{{i}}.txt", i=range({jobs}))

rule one:  # inputs as a study job has them: Snakemake stats them on every pass
    input: expand("in/{{k}}.txt", k=range(8))
    output: "out/{{i}}.txt"
    shell: "sleep {sleep} && touch {{output}}"

rule inputs:
    output: expand("in/{{k}}.txt", k=range(8))
    shell: "touch {{output}}"
"""


def threads_of(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("Threads:"))
    except (OSError, StopIteration):
        return 0


def run(workdir: Path, cores: int, coalesce: bool) -> tuple[float, float, int]:
    """(wall s, CPU s of snakemake and its jobs, peak threads of the snakemake process)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cmd = [sys.executable, "-m", "snakemake", "--cores", str(cores), "--quiet", "all"]
    cmd += ["--config", f"coalesce={int(coalesce)}", "--workflow-profile", "none"]
    t0 = time.monotonic()
    proc = subprocess.Popen(
        cmd, cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    peak = 0
    while proc.poll() is None:
        peak = max(peak, threads_of(proc.pid))
        time.sleep(0.2)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        sys.exit(f"snakemake failed ({proc.returncode}):\n{proc.stderr.read()[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, peak


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--jobs", type=int, default=300)
    ap.add_argument("--sleep", type=float, default=0.5)
    ap.add_argument("--cores", type=int, default=2)
    args = ap.parse_args()
    print(
        f"{args.jobs} jobs of sleep {args.sleep} s, --cores {args.cores}; load {os.getloadavg()[0]:.1f}"
    )
    cpu = {}
    for coalesce in (False, True):
        with tempfile.TemporaryDirectory(prefix="bench-scheduler-") as tmp:
            work = Path(tmp)
            text = SNAKEFILE.format(scripts=str(SCRIPTS), jobs=args.jobs, sleep=args.sleep)
            (work / "Snakefile").write_text(text)
            wall, cpu[coalesce], peak = run(work, args.cores, coalesce)
        name = "one timer (patched)" if coalesce else "Snakemake as shipped"
        print(f"{name:>22}: wall {wall:6.1f} s, CPU {cpu[coalesce]:6.1f} s, peak threads {peak}")
    print(f"CPU ratio shipped / patched = {cpu[False] / cpu[True]:.2f}")


if __name__ == "__main__":
    main()
