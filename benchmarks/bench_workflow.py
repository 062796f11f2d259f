"""Benchmark: the workflow's fixed costs and wall times (printed, never asserted).

* per-job fixed overhead: wall time of jobs whose compute is negligible (the tiny
  config's dataset and train jobs: process start, imports, data I/O, MLflow run
  creation and logging), read from Snakemake's benchmark files, MLflow on and off;
* wall time of the default target on this machine (--cores 2) with --default;
* a no-op rerun (nothing changed) of the completed workflow.

  python benchmarks/bench_workflow.py            # overhead + no-op rerun (tiny config)
  python benchmarks/bench_workflow.py --default  # + each default study and the whole default target
  python benchmarks/bench_workflow.py --default --workdir runs/default  # and keep its results
"""

from __future__ import annotations

import argparse
import csv
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "tests" / "workflow" / "configs" / "tiny.yaml"
SNAKEMAKE = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile")]


def run(workdir: Path, *args: str, target: str = "all", cores: int = 2) -> float:
    t = time.perf_counter()
    subprocess.run(
        # the target first: --quiet and --configfile take several values and would eat it
        [*SNAKEMAKE, target, *args, "-d", str(workdir), "--cores", str(cores), "--quiet"],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - t


def job_seconds(workdir: Path, rule: str) -> list[float]:
    out = []
    for f in (workdir / "results" / "benchmarks" / rule).rglob("*.tsv"):
        with open(f) as fh:
            out.append(float(next(csv.DictReader(fh, delimiter="\t"))["s"]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--default", action="store_true", help="also time the default target from scratch"
    )
    ap.add_argument(
        "--studies",
        nargs="+",
        default=["fa", "price_linear"],
        help="the default target's studies, timed one after the other (--default)",
    )
    ap.add_argument(
        "--tiny-cores",
        type=int,
        default=2,
        help="--cores of the tiny runs; 1 = one job at a time, so a job's MLflow sink "
        "overlaps on the other core instead of competing with a second job",
    )
    ap.add_argument(
        "--skip-tiny", action="store_true", help="only the default target (with --default)"
    )
    ap.add_argument(
        "--workdir",
        type=Path,
        help="run the default target here and keep its results (default: a temporary dir)",
    )
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for tracking in () if args.skip_tiny else ("on", "off"):
            wd = Path(tmp) / f"tiny_{tracking}"
            extra = ["--configfile", str(TINY)]
            if tracking == "off":
                extra += ["--config", "mlflow={enabled: false}"]
            wall = run(wd, *extra, cores=args.tiny_cores)
            for rule in ("dataset", "train"):
                s = sorted(job_seconds(wd, rule))
                rows.append(
                    (
                        f"per-job wall, {rule} (tiny, MLflow {tracking}, --cores {args.tiny_cores})",
                        f"median {s[len(s) // 2]:.2f} s  (min {s[0]:.2f}, max {s[-1]:.2f}, {len(s)} jobs)",
                    )
                )
            rows.append((f"tiny config end to end (MLflow {tracking})", f"{wall:.1f} s"))
            if tracking == "on":
                noop = run(wd, *extra, cores=args.tiny_cores)
                rows.append(("no-op rerun (tiny, nothing changed)", f"{noop:.2f} s"))
        if args.default:
            # each study of the default target from scratch, then the whole target on top
            # (a no-op if the studies are all of it), then a no-op rerun
            wd = args.workdir.resolve() if args.workdir else Path(tmp) / "default"
            total = 0.0
            for study in args.studies:
                wall = run(wd, target=study)
                total += wall
                rows.append((f"`{study}` from scratch, --cores 2", f"{wall / 60:.1f} min"))
            rest = run(wd)
            rows.append(("rest of the default target (`all` after those)", f"{rest / 60:.1f} min"))
            rows.append(
                ("default target (`all`) from scratch, --cores 2", f"{(total + rest) / 60:.1f} min")
            )
            rows.append(("no-op rerun (default target, nothing changed)", f"{run(wd):.2f} s"))
            if not args.workdir:
                shutil.rmtree(wd, ignore_errors=True)
    width = max(len(r[0]) for r in rows)
    print(f"\nworkflow benchmark ({time.strftime('%Y-%m-%d %H:%M')})")
    for name, val in rows:
        print(f"{name:<{width}}  {val}")


if __name__ == "__main__":
    main()
