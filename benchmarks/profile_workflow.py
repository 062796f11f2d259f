"""Time profile of a finished workflow run: CPU-seconds and wall per rule, study and phase.

Reads a run directory (the one Snakemake ran in):
  * ``results/logs/**.log``: each job's log. Its first line names the run
    (``start <rule> <wildcards> @<study> threads=...``); the job wrapper
    (workflow_scripts/_job.py) ends it with
    ``phases wall=.. cpu=.. startup=.. startup_cpu=.. data=.. compute=.. tracking=.. write=..``:
    the job process's wall and CPU seconds, and the wall seconds of its phases - interpreter
    start + imports (up to ``Job()``; with its CPU), reading inputs and writing outputs
    through ``ibrobust.io`` (writing a figure includes rendering it), MLflow streaming, and
    the rest (compute).
  * ``results/benchmarks/**.tsv``: Snakemake's benchmark file of the rules that declare one
    (same relative path as the log). Where present, its ``s`` is the job's wall (measured by
    Snakemake around the whole process), else the log's. CPU always comes from the log
    (``getrusage`` of the job process and its reaped children, up to the phases line):
    Snakemake's ``cpu_time`` is sampled, every 0.5 s for the first 30 samples (about 15 s)
    and then every 30 s (``snakemake.benchmark``, 9.27), so it misses the CPU after the last
    sample - in a 24 s training job it read 15.4 CPU-s against the process's own 23.0.

Jobs without a ``phases`` line (still running, failed, or from before the line existed) are
counted as "unprofiled" and left out. Wall times depend on the machine's load; CPU-seconds
much less so.

    python benchmarks/profile_workflow.py RUN_DIR [--baseline OTHER_RUN_DIR | JOBS.csv]
        [--save JOBS.csv] [--readme docs/results.md [--block NAME]] [--cores 2]

The run's span is the first job's start to the last job's end, from the logs' timestamps
(the Snakemake process's own start-up and planning before the first job are not in it).
Its packing (issue 28, lead 5) compares the span with the job CPU-s shared by ``--cores``
(the goal: within 10 %), with the share of the cores that jobs occupied and the tail at the
end with a core idle.
``--save`` writes one row per profiled job (rule, study, start, end, wall, CPU, phases),
so that a run can serve as a baseline after its directory is gone; ``--baseline`` takes
another run directory or such a file and adds its per-rule medians and its totals beside
this run's, per rule and per study (before/after). ``--readme`` rewrites the block between
``<!-- NAME:start -->`` and ``<!-- NAME:end -->`` of that file with the tables (never typed
by hand); NAME is ``--block``, ``profile`` by default (docs/results.md also keeps an
``overhead`` block: a tiny-config run against its baseline).
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import statistics
import sys
from collections import defaultdict
from datetime import datetime
from pathlib import Path

PHASES = ("startup", "data", "compute", "tracking", "write")
START = re.compile(r" start (\S+) (.*?) @(\S+) threads=")
STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) ")
TEXT_FIELDS = ("rule", "study", "source")
FIELDS = (*TEXT_FIELDS, "start", "end", "wall", "cpu", "startup_cpu", *PHASES)
PHASE_LINE = re.compile(r" phases ((?:\w+=[-\d.]+ ?)+)$")
BLOCK = "profile"  # the block --readme rewrites (in docs/results.md) unless --block names another


def markers(block: str = BLOCK) -> tuple[str, str]:
    return f"<!-- {block}:start -->", f"<!-- {block}:end -->"


def read_jobs(run_dir: Path) -> tuple[list[dict], int]:
    """One dict per profiled job (rule, study, wall, cpu, the phases); and the number of
    job logs without a phases line."""
    jobs, unprofiled = [], 0
    logs, bench = run_dir / "results" / "logs", run_dir / "results" / "benchmarks"
    for log in sorted(logs.rglob("*.log")):
        job = parse_log(log.read_text(errors="replace"))
        if job is None:
            unprofiled += 1
            continue
        tsv = bench / log.relative_to(logs).with_suffix(".tsv")
        if tsv.is_file():
            with open(tsv) as fh:
                row = next(csv.DictReader(fh, delimiter="\t"), None)
            if row and row.get("s") not in (None, "", "NA"):  # wall only: see the docstring
                job.update(wall=float(row["s"]), source="benchmark")
        jobs.append(job)
    return jobs, unprofiled


def parse_log(text: str) -> dict | None:
    lines = text.splitlines()
    start = START.search(lines[0]) if lines else None
    phases = next((m for line in reversed(lines) if (m := PHASE_LINE.search(line))), None)
    if start is None or phases is None:
        return None
    values = {k: float(v) for k, v in (kv.split("=") for kv in phases.group(1).split())}
    job = {"rule": start.group(1), "study": start.group(3), "source": "log", **values}
    first, last = STAMP.match(lines[0]), STAMP.match(phases.string)  # the phases line ends it
    if first and last:
        job.update(start=_epoch(first.group(1)), end=_epoch(last.group(1)))
    return job


def _epoch(stamp: str) -> float:
    return datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S").timestamp()


def span(jobs: list[dict]) -> float:
    """Seconds from the first job's start to the last job's end (nan without timestamps)."""
    starts = [j["start"] for j in jobs if "start" in j]
    ends = [j["end"] for j in jobs if "end" in j]
    return max(ends) - min(starts) if starts and ends else float("nan")


def packing(jobs: list[dict], cores: int) -> dict[str, float]:
    """How well the run kept ``cores`` busy (issue 28, lead 5): ``ratio`` = span / (job CPU-s
    / cores), the goal being at most 1.10; ``occupied`` = the share of cores x span during
    which a job ran (jobs beyond ``cores`` at once count as ``cores``); ``tail`` = seconds at
    the end of the run with fewer than ``cores`` jobs running (1 s resolution: the logs'
    timestamps)."""
    timed = [j for j in jobs if "start" in j and "end" in j]
    if not timed:
        return {"ratio": math.nan, "occupied": math.nan, "tail": math.nan}
    t0, t1 = min(j["start"] for j in timed), max(j["end"] for j in timed)
    events = sorted([(j["start"], 1) for j in timed] + [(j["end"], -1) for j in timed])
    running, last, busy, full_until = 0, t0, 0.0, t0
    for t, step in events:
        busy += min(running, cores) * (t - last)
        if running >= cores:
            full_until = t
        running, last = running + step, t
    width = t1 - t0
    return {
        "ratio": width / (_sum(jobs, "cpu") / cores) if width else math.nan,
        "occupied": busy / (cores * width) if width else math.nan,
        "tail": t1 - full_until,
    }


def save_jobs(path: Path, jobs: list[dict]) -> None:
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(jobs)


def load_jobs(path: Path) -> list[dict]:
    """The jobs of a run directory, or of a file written by ``--save``."""
    if path.is_dir():
        return read_jobs(path)[0]
    with open(path, newline="") as fh:
        return [
            {k: v if k in TEXT_FIELDS else float(v) for k, v in row.items() if v}
            for row in csv.DictReader(fh)
        ]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def rule_table(jobs: list[dict], baseline: list[dict] | None) -> list[str]:
    """Per rule of this run or the baseline (a rule only one of them has gets zeros or "-"
    on the other side), by this run's CPU-s, then the baseline's."""
    by_rule, base = _group(jobs, "rule"), _group(baseline or [], "rule")
    rows = _header(
        ["rule", "jobs", "CPU-s", "wall-s", "median CPU", "median wall", "median start-up (CPU)"],
        ["jobs", "CPU-s", "median CPU", "median wall", "median start-up (CPU)"],
        baseline is not None,
    )
    for rule in _by_cpu(by_rule, base):
        js = by_rule.get(rule, [])
        row = (
            f"| {rule} | {len(js)} | {_sum(js, 'cpu'):.0f} | {_sum(js, 'wall'):.0f} | "
            f"{_med(js, 'cpu')} | {_med(js, 'wall')} | "
            f"{_med(js, 'startup')} ({_med(js, 'startup_cpu')}) |"
        )
        if baseline is not None:
            b = base.get(rule, [])
            row += (
                f" {len(b)} | {_sum(b, 'cpu'):.0f} | {_med(b, 'cpu')} | {_med(b, 'wall')} | "
                f"{_med(b, 'startup')} ({_med(b, 'startup_cpu')}) |"
            )
        rows.append(row)
    return rows


def study_table(jobs: list[dict], baseline: list[dict] | None = None) -> list[str]:
    rows = _header(
        ["study", "jobs", "CPU-s", "wall-s", "start-up CPU-s"],
        ["jobs", "CPU-s", "start-up CPU-s"],
        baseline is not None,
    )
    by_study, base = _group(jobs, "study"), _group(baseline or [], "study")
    for study in _by_cpu(by_study, base):
        js = by_study.get(study, [])
        row = (
            f"| {study} | {len(js)} | {_sum(js, 'cpu'):.0f} | {_sum(js, 'wall'):.0f} | "
            f"{_sum(js, 'startup_cpu'):.0f} |"
        )
        if baseline is not None:
            b = base.get(study, [])
            row += f" {len(b)} | {_sum(b, 'cpu'):.0f} | {_sum(b, 'startup_cpu'):.0f} |"
        rows.append(row)
    return rows


def _by_cpu(this: dict[str, list[dict]], base: dict[str, list[dict]]) -> list[str]:
    """The keys of both runs, by this run's CPU-s, then the baseline's (both descending)."""
    keys = set(this) | set(base)
    return sorted(
        keys, key=lambda k: (-_sum(this.get(k, []), "cpu"), -_sum(base.get(k, []), "cpu"))
    )


def phase_table(jobs: list[dict]) -> list[str]:
    total = sum(_sum(jobs, p) for p in PHASES) or float("nan")
    rows = ["| phase | wall-s (sum over jobs) | share |", "|---|---:|---:|"]
    for p in PHASES:
        name = "interpreter + imports" if p == "startup" else p
        rows.append(f"| {name} | {_sum(jobs, p):.0f} | {100 * _sum(jobs, p) / total:.0f} % |")
    cpu, start_cpu = _sum(jobs, "cpu"), _sum(jobs, "startup_cpu")
    rows.append(f"| (CPU: all / start-up) | {cpu:.0f} / {start_cpu:.0f} | |")
    return rows


def packing_line(jobs: list[dict], cores: int) -> str:
    p = packing(jobs, cores)
    return (
        f"packing on {cores} cores: span = {p['ratio']:.2f} x (job CPU-s / {cores}), jobs "
        f"occupied {100 * p['occupied']:.0f} % of the cores, the last {p['tail']:.0f} s ran "
        f"fewer than {cores} jobs"
    )


def report(
    jobs: list[dict], unprofiled: int, baseline: list[dict] | None = None, cores: int = 2
) -> str:
    head = (
        f"{len(jobs)} jobs profiled ({unprofiled} without a phases line), "
        f"{_sum(jobs, 'cpu'):.0f} CPU-s, {_sum(jobs, 'wall'):.0f} s of job wall time in all; "
        f"run span (first job start to last job end) {span(jobs):.0f} s; "
        f"{packing_line(jobs, cores)}."
    )
    if baseline is not None:
        head += (
            f" Baseline: {len(baseline)} jobs, {_sum(baseline, 'cpu'):.0f} CPU-s, "
            f"span {span(baseline):.0f} s; {packing_line(baseline, cores)}."
        )
    parts = [
        *(head, "", *rule_table(jobs, baseline), "", *study_table(jobs, baseline)),
        *("", *phase_table(jobs)),
    ]
    return "\n".join(parts) + "\n"


def rewrite_readme(readme: Path, text_block: str, block: str = BLOCK) -> None:
    text = readme.read_text()
    a, b = markers(block)
    if a not in text or b not in text:
        raise SystemExit(f"{readme}: markers {a} ... {b} not found")
    pre, rest = text.split(a, 1)
    _, post = rest.split(b, 1)
    readme.write_text(f"{pre}{a}\n{text_block}{b}{post}")


def _header(columns: list[str], baseline_columns: list[str], with_baseline: bool) -> list[str]:
    """A markdown table's two header lines: the first column left-aligned, the rest numbers;
    ``baseline_columns`` appended (the first prefixed "baseline: ") when comparing."""
    if with_baseline:
        columns = [*columns, f"baseline: {baseline_columns[0]}", *baseline_columns[1:]]
    return ["| " + " | ".join(columns) + " |", "|---|" + "---:|" * (len(columns) - 1)]


def _group(jobs: list[dict], key: str) -> dict[str, list[dict]]:
    out = defaultdict(list)
    for j in jobs:
        out[j[key]].append(j)
    return out


def _sum(jobs: list[dict], key: str) -> float:
    return sum(j.get(key, 0.0) for j in jobs)


def _med(jobs: list[dict], key: str) -> str:
    m = median([j[key] for j in jobs if key in j])
    return "-" if m != m else f"{m:.2f}"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("run_dir", type=Path)
    ap.add_argument(
        "--baseline", type=Path, help="another run directory, or a --save file, to compare with"
    )
    ap.add_argument("--save", type=Path, help="write this run's per-job rows to a CSV file")
    ap.add_argument("--readme", type=Path, help="rewrite this file's marked block")
    ap.add_argument("--block", default=BLOCK, help="the marked block's name (default: profile)")
    ap.add_argument(
        "--cores", type=int, default=2, help="the cores the run had, for its packing (default 2)"
    )
    args = ap.parse_args(argv)
    jobs, unprofiled = read_jobs(args.run_dir)
    if not jobs:
        raise SystemExit(f"no profiled job logs under {args.run_dir / 'results' / 'logs'}")
    baseline = load_jobs(args.baseline) if args.baseline else None
    text = report(jobs, unprofiled, baseline, args.cores)
    sys.stdout.write(text)
    if args.save:
        save_jobs(args.save, jobs)
    if args.readme:
        rewrite_readme(args.readme, text, args.block)


if __name__ == "__main__":
    main()
