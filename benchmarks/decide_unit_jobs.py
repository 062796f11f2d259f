"""Which jobs one more unit of a study adds: Snakemake's own plan, before and after.

For every unit list of every study of the config (ibrobust.decide.units: ``seeds`` and
``draws`` lists, e.g. ``studies.price_nn.cnn.seeds``), runs ``snakemake -n --quiet rules``
on the ``reproduce`` target with that list extended by one unit (a config overlay), and
diffs its job counts per rule against the unextended plan: the jobs a new seed or draw adds
(train, attack, analysis jobs; a dataset job where data is drawn per seed). Rules whose
count does not change are the study's aggregates (figures, tables, the ledger): a new unit
reruns them once. A list that adds no jobs is one a job loops over (PRICE-LIN's draws: one
``price_train`` job per (regime, n) trains every draw): the rules of the study kind's rules
file that take the list as a parameter (``draws=`` under ``params:``) rerun every job, their
CPU-s growing with the list. Writes one row per (unit list, rule):
``study,key,rule,jobs,mode`` (mode ``adds``: jobs per unit; ``reruns``: every job of the
rule reruns, jobs 0); the planner's cost model (ibrobust.decide.cost) prices them with each
rule's measured CPU-s per job. About 6 CPU-s per dry run (one per unit list, plus one).

Usage: .venv/bin/python benchmarks/decide_unit_jobs.py --out benchmarks/profiles/unit-jobs.csv
    [--config data_root=DIR ...]
"""

from __future__ import annotations

import argparse
import csv
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from ibrobust.decide.units import extended, overlay_path, unit_keys
from ibrobust.kinds import STUDIES

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
ROW = re.compile(r"^(\w+)\s+(\d+)$")


def job_counts(overlay: dict | None, config_args: list[str]) -> dict[str, int]:
    """rule -> jobs of a dry run of ``reproduce`` (with ``overlay`` as a config file)."""
    cmd = [str(SNAKEMAKE), "-n", "--quiet", "rules", "--cores", "1"]
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as fh:
        yaml.safe_dump(overlay or {}, fh)
    cmd += ["--configfile", str(REPO / "config.yaml"), fh.name]
    if config_args:
        cmd += ["--config", *config_args]
    out = subprocess.run([*cmd, "--", "reproduce"], cwd=REPO, capture_output=True, text=True)
    Path(fh.name).unlink()
    if out.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
    counts: dict[str, int] = {}
    for line in out.stdout.splitlines():
        m = ROW.match(line.strip())
        if m and m.group(1) not in ("total",):
            counts[m.group(1)] = int(m.group(2))  # the table is printed twice: same numbers
    return counts


def rules_taking(kind: str, param: str) -> list[str]:
    """The rules of a study kind's rules file with ``param=`` among their params."""
    text = (REPO / "rules" / STUDIES.of({"kind": kind})["rules"]).read_text()
    out = []
    for block in re.split(r"^(?=rule \w+:)", text, flags=re.M):
        head = re.match(r"rule (\w+):", block)
        params = re.search(r"^    params:\n((?:        .*\n|\s*\n)+)", block, flags=re.M)
        if head and params and re.search(rf"^\s+{param}=", params.group(1), flags=re.M):
            out.append(head.group(1))
    return out


def nested(path: tuple[str, ...], value) -> dict:
    out: dict = value
    for key in reversed(path):
        out = {key: out}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--config", nargs="*", default=[], help="passed to snakemake --config")
    a = ap.parse_args()
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    base = job_counts(None, a.config)
    rows = []
    for study, block in config["studies"].items():
        for key in unit_keys(study, block):
            more = job_counts(nested(overlay_path(key), extended(key.values, 1)), a.config)
            for rule in sorted(set(base) | set(more)):
                added = more.get(rule, 0) - base.get(rule, 0)
                if added:
                    rows.append(
                        {"study": study, "key": key.name, "rule": rule, "jobs": added,
                         "mode": "adds"}
                    )  # fmt: skip
            if not any(r["key"] == key.name for r in rows):
                for rule in rules_taking(block["kind"], key.kind):
                    rows.append(
                        {"study": study, "key": key.name, "rule": rule, "jobs": 0,
                         "mode": "reruns"}
                    )  # fmt: skip
            print(f"{key.name}: {sum(r['jobs'] for r in rows if r['key'] == key.name)} jobs")
    with open(a.out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=["study", "key", "rule", "jobs", "mode"])
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {a.out}: {len(rows)} rows")


if __name__ == "__main__":
    main()
