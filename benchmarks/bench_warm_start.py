"""Benchmark: the workflow with its jobs forked warm (config ``warm_start: true``) against
fresh interpreters (``false``), issue 28 lead 3, measured end to end in one alternating run.

Each round runs the same config in two fresh directories, one per setting, in alternating
order (fresh first in odd rounds), each as ``snakemake --cores N`` with nothing cached. Per
run it prints the jobs, how many started warm, the job CPU-s from the jobs' own logs
(``profile_workflow.read_jobs``: getrusage of each job, its client's start-up included, and
the warm server's own imports and forks as one more row), the CPU-s of the whole process
tree (``getrusage(RUSAGE_CHILDREN)`` around snakemake: snakemake itself, every job, the
server) and the wall; then the medians and the ratios warm / fresh. Never asserts; CPU-s
are the figure to trust on a shared machine, walls only on a quiet one.

    python benchmarks/bench_warm_start.py [--configfile tests/workflow/configs/tiny.yaml]
        [--target all] [--rounds 2] [--cores 2] [--workdir DIR] [--config KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from profile_workflow import read_jobs  # noqa: E402


def children_cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def run_once(workdir: Path, args, warm: bool) -> dict:
    cmd = [
        sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(workdir),
        "--cores", str(args.cores), "--nocolor", "--configfile", str(args.configfile),
        "--config", f"warm_start={str(warm).lower()}", *args.config, "--", *args.target,
    ]  # fmt: skip
    cpu0, t0 = children_cpu(), time.monotonic()
    proc = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True)
    wall, tree_cpu = time.monotonic() - t0, children_cpu() - cpu0
    if proc.returncode != 0:
        raise SystemExit(f"snakemake failed in {workdir}:\n{proc.stderr[-3000:]}")
    jobs, unprofiled = read_jobs(workdir)
    logs = workdir / "results" / "logs"
    starts = [p.read_text().split("\n", 1)[0] for p in logs.rglob("*.log")]
    return {
        "setting": "warm" if warm else "fresh",
        "jobs": sum(1 for j in jobs if j["rule"] != "warm_start") + unprofiled,
        "warm": sum(" launch=warm " in line for line in starts),
        "job_cpu": sum(j["cpu"] for j in jobs),
        "server_cpu": sum(j["cpu"] for j in jobs if j["rule"] == "warm_start"),
        "tree_cpu": tree_cpu,
        "wall": wall,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--configfile", type=Path, default=ROOT / "tests" / "workflow" / "configs" / "tiny.yaml"
    )
    ap.add_argument("--target", nargs="*", default=["all"])
    ap.add_argument("--config", nargs="*", default=[], help="more KEY=VALUE for --config")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--workdir", type=Path, help="where the run directories go (kept)")
    args = ap.parse_args(argv)
    args.configfile = args.configfile.resolve()
    base = args.workdir or Path(tempfile.mkdtemp(prefix="bench-warm-"))
    print("load average (1, 5, 15 min): " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    print(f"config {args.configfile.name}, target {' '.join(args.target)}, {args.cores} cores")
    print(f"{'round':>5} {'setting':>7} {'jobs':>5} {'warm':>5} {'job CPU-s':>10} "
          f"{'server':>7} {'tree CPU-s':>11} {'wall s':>7}")  # fmt: skip
    rows = []
    for r in range(args.rounds):
        order = (False, True) if r % 2 == 0 else (True, False)
        for warm in order:
            workdir = base / f"round{r}-{'warm' if warm else 'fresh'}"
            shutil.rmtree(workdir, ignore_errors=True)
            workdir.mkdir(parents=True)
            row = run_once(workdir, args, warm)
            rows.append(row)
            print(f"{r:>5} {row['setting']:>7} {row['jobs']:>5} {row['warm']:>5} "
                  f"{row['job_cpu']:>10.1f} {row['server_cpu']:>7.1f} {row['tree_cpu']:>11.1f} "
                  f"{row['wall']:>7.1f}", flush=True)  # fmt: skip
    med = {
        s: {k: statistics.median(x[k] for x in rows if x["setting"] == s) for k in rows[0]
            if k != "setting"}
        for s in ("fresh", "warm")
    }  # fmt: skip
    w, f = med["warm"], med["fresh"]
    per_job = (f["tree_cpu"] - w["tree_cpu"]) / f["jobs"]
    print(f"medians over {args.rounds} rounds: fresh {f['tree_cpu']:.1f} tree CPU-s / "
          f"{f['wall']:.1f} s wall, warm {w['tree_cpu']:.1f} / {w['wall']:.1f}")  # fmt: skip
    print(f"ratio warm / fresh: job CPU-s {w['job_cpu'] / f['job_cpu']:.2f}, tree CPU-s "
          f"{w['tree_cpu'] / f['tree_cpu']:.2f}, wall {w['wall'] / f['wall']:.2f}; "
          f"saved {per_job:.2f} CPU-s per job ({f['jobs']:.0f} jobs)")  # fmt: skip
    if not args.workdir:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
