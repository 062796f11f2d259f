"""The measured cost of a unit: CPU-s per new seed or draw of a study, from the runs' records.

Two measured tables go in:

* **the jobs' CPU-s** (one row per finished job: ``rule``, ``study``, ``cpu``), as
  ``benchmarks/profile_workflow.py RUN_DIR --save JOBS.csv`` writes them from a run's logs
  (each job's ``phases ... cpu=`` line: getrusage of the job process and its children, the
  number MLflow records as ``job.cpu_s``); the committed ones are
  ``benchmarks/profiles/reproduce-<commit>.csv``; or read straight from a run's job logs
  (``decide.profile: results/logs``, :func:`jobs_from_logs`);
* **the jobs one unit adds** (``study``, ``key``, ``rule``, ``jobs``), from Snakemake's own
  plan with the unit list extended by one (``benchmarks/decide_unit_jobs.py``): e.g. a
  PRICE-NN CNN seed adds one ``train`` job per (n, eps, optimizer) cell and their attacks.

A unit of list ``key`` costs ``sum over rules of jobs(key, rule) x cpu(study, rule)``
(mode ``adds``), where
``cpu(study, rule)`` is the mean CPU-s of that rule's jobs of that study (a rule the study
never ran: its mean over the other studies, then the study's median job; the table says
which). A list that a job loops over (mode ``reruns``: PRICE-LIN's draws, all trained in
one ``price_train`` job per (regime, n)) reruns every job of the rule with the longer list:
extending ``R`` units by ``u`` costs the rule's CPU-s of the study times ``(R + u) / R``, a
fixed part (the rerun of the units already there, ``fixed_key``) plus ``1 / R`` of it per
unit. Adding any unit to a study also reruns its aggregate jobs once (its rules that the
units do not multiply: figures, tables) and the ledger: the study's **fixed** cost. Means per
(study, rule) pool the study's parts (PRICE-NN's FC and CNN training jobs share one mean):
the profile records no wildcards. Pure pandas.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

START = re.compile(r" start (\S+) (.*?) ?@(\S+) threads=")  # workflow_scripts/_job.py
PHASES = re.compile(r" phases (?:\w+=[-\d.]+ )*cpu=([\d.]+)")
LEDGER_RULES = ("claims_all",)  # rerun once after any unit: the ledger itself
SHARED = "shared"  # the profile's study of jobs that belong to no study (datasets, ledger)
COST_COLUMNS = ["study", "key", "rule", "mode", "jobs", "cpu_per_job", "cpu", "measured"]
ADDS, RERUNS = "adds", "reruns"  # the unit-jobs table's modes


@dataclass(frozen=True)
class CostModel:
    """CPU-s per unit of each unit list (``per_unit``, by ``UnitKey.name``), the fixed
    CPU-s of extending a list at all (``fixed_key``: the rerun of a looped list's jobs) and
    of touching a study (``fixed``, by study), and the derivation (``table``:
    :data:`COST_COLUMNS`, one row per unit list and rule; ``cpu`` is per unit; ``measured``
    says where the rule's CPU-s per job came from)."""

    per_unit: dict[str, float]
    fixed: dict[str, float]
    table: pd.DataFrame = field(repr=False)
    fixed_key: dict[str, float] = field(default_factory=dict)

    def extension_cost(self, key: str, study: str, added: int, touched: bool) -> float:
        """CPU-s of adding ``added`` units to list ``key`` (0: nothing), with the study's
        fixed cost unless it is already ``touched`` by another list of the plan."""
        if added <= 0:
            return 0.0
        once = self.fixed_key.get(key, 0.0) + (0.0 if touched else self.fixed.get(study, 0.0))
        return added * self.unit_cost(key) + once

    def unit_cost(self, key: str) -> float:
        if key not in self.per_unit:
            raise KeyError(
                f"no measured cost for the unit list {key}: the unit-jobs table has no row "
                "for it (rerun benchmarks/decide_unit_jobs.py)"
            )
        return self.per_unit[key]


def _require(df: pd.DataFrame, columns: Iterable[str], what: str) -> None:
    missing = [c for c in columns if c not in df]
    if missing:
        raise ValueError(f"{what}: missing columns {missing} (has {list(df.columns)})")


def cost_model(
    jobs: pd.DataFrame, unit_jobs: pd.DataFrame, units: dict[str, int] | None = None
) -> CostModel:
    """The cost model from the jobs' CPU-s (``rule``, ``study``, ``cpu``; extra columns are
    ignored) and the jobs a unit adds (``study``, ``key``, ``rule``, ``jobs``, optional
    ``mode``). ``units``: the length of each looped list (``reruns`` rows) in the run the
    jobs' table measured (key -> units)."""
    _require(jobs, ("rule", "study", "cpu"), "the jobs' CPU-s table")
    _require(unit_jobs, ("study", "key", "rule", "jobs"), "the unit-jobs table")
    jobs = jobs.assign(cpu=pd.to_numeric(jobs["cpu"], errors="raise"))
    if "mode" not in unit_jobs:
        unit_jobs = unit_jobs.assign(mode=ADDS)
    bad = sorted(set(unit_jobs["mode"]) - {ADDS, RERUNS})
    if bad:
        raise ValueError(f"the unit-jobs table's mode must be {ADDS} or {RERUNS}, got {bad}")
    total = jobs.groupby(["study", "rule"]).cpu.sum().to_dict()
    fixed_key: dict[str, float] = {}
    by_study_rule = jobs.groupby(["study", "rule"]).cpu.mean().to_dict()
    by_rule = jobs.groupby("rule").cpu.mean().to_dict()
    median = jobs.groupby("study").cpu.median().to_dict()
    rows = []
    for r in unit_jobs.itertuples(index=False):
        if r.mode == RERUNS:
            n = (units or {}).get(r.key)
            if not n:
                raise ValueError(f"the unit list {r.key} is looped over: its length is needed")
            if (r.study, r.rule) not in total:
                raise ValueError(
                    f"{r.key} reruns {r.rule}: the jobs' table has none of study {r.study}"
                )
            whole = total[(r.study, r.rule)]
            fixed_key[r.key] = fixed_key.get(r.key, 0.0) + whole
            rows.append([r.study, r.key, r.rule, r.mode, 0, whole, whole / n, "this study's jobs"])
            continue
        if (r.study, r.rule) in by_study_rule:
            cpu, how = by_study_rule[(r.study, r.rule)], "this study's jobs"
        elif (SHARED, r.rule) in by_study_rule:
            cpu, how = by_study_rule[(SHARED, r.rule)], "shared jobs"
        elif r.rule in by_rule:
            cpu, how = by_rule[r.rule], "other studies' jobs"
        elif r.study in median:
            cpu, how = median[r.study], "unmeasured rule: this study's median job"
        else:
            raise ValueError(
                f"the unit list {r.key} adds {r.rule} jobs, and the jobs' table has neither "
                f"that rule nor any job of study {r.study}: no measured cost"
            )
        rows.append([r.study, r.key, r.rule, r.mode, int(r.jobs), cpu, int(r.jobs) * cpu, how])
    table = pd.DataFrame(rows, columns=COST_COLUMNS)
    per_unit = table.groupby("key", sort=False).cpu.sum().to_dict()
    unit_rules = set(zip(unit_jobs.study, unit_jobs.rule, strict=True))
    ledger = sum(by_study_rule.get((SHARED, rule), 0.0) for rule in LEDGER_RULES)
    fixed = {}
    for study in unit_jobs.study.unique():
        own = jobs[(jobs.study == study)]
        aggregates = own[[(study, rule) not in unit_rules for rule in own.rule]]
        # each aggregate rule reruns once per job it has (e.g. one figures job per part)
        fixed[study] = float(aggregates.cpu.sum()) + ledger
    return CostModel(per_unit, fixed, table, fixed_key)


def jobs_from_logs(texts: Iterable[str]) -> pd.DataFrame:
    """(rule, study, cpu) of every finished job among the log texts: its first line's
    ``start <rule> <wildcards> @<study> threads=`` and its ``phases ... cpu=`` line (a job
    still running or failed has none and is left out)."""
    rows = []
    for text in texts:
        start, cpu = START.search(text), PHASES.findall(text)
        if start and cpu:
            rows.append((start.group(1), start.group(3), float(cpu[-1])))
    return pd.DataFrame(rows, columns=["rule", "study", "cpu"])


def read_jobs(path) -> pd.DataFrame:
    """The jobs' CPU-s: a CSV (``rule``, ``study``, ``cpu``), or a folder of job logs."""
    path = Path(path)
    if path.is_dir():
        jobs = jobs_from_logs(f.read_text(errors="replace") for f in sorted(path.rglob("*.log")))
        if jobs.empty:
            raise ValueError(f"{path}: no finished job's log (a phases line) under it")
        return jobs
    return pd.read_csv(path)


def read_cost_model(jobs_csv, unit_jobs_csv, units: dict[str, int] | None = None) -> CostModel:
    """:func:`cost_model` of the two CSV files, naming a file that lacks a column."""
    try:
        return cost_model(read_jobs(jobs_csv), pd.read_csv(unit_jobs_csv), units)
    except ValueError as err:
        raise ValueError(f"{jobs_csv} / {unit_jobs_csv}: {err}") from err
