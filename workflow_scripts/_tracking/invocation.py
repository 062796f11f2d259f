"""What one ``snakemake`` invocation asked for and runs, read from Snakemake's DAG in
``onstart`` (after the DAG is built, before any job starts): the name and the ``studies``
and ``targets`` params of its parent MLflow run.

* targets: what was requested on the command line (rules by name, files by path), else
  the default target rule (``all``);
* studies: those of the jobs this invocation runs (its parent run's children), from a
  job's ``study`` wildcard or its output path ``results/<study>/...``; when no job that
  runs belongs to a study (only datasets or the claims ledger are redone), those of every
  job of the DAG.

Duck-typed on Snakemake 9's ``workflow`` object (``dag_settings.targets``,
``default_target``, ``is_rule``, ``dag.needrun_jobs``, ``dag.jobs``); no import of it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

NAMED_TARGETS = 3  # rule targets the run name lists before "+N"


@dataclass(frozen=True)
class Invocation:
    targets: tuple[str, ...] = ()
    studies: tuple[str, ...] = ()
    rules: frozenset[str] = frozenset()  # the targets that are rule names (not files)

    @classmethod
    def of(cls, workflow: Any, known_studies: Iterable[str]) -> Invocation:
        """The invocation of ``workflow`` (Snakemake's object in ``onstart``); studies are
        those of ``known_studies`` (the config's) its jobs belong to."""
        requested = sorted(workflow.dag_settings.targets or ())
        if not requested and workflow.default_target:
            requested = [workflow.default_target]
        known = set(known_studies)
        dag = workflow.dag
        studies = _studies(dag.needrun_jobs(exclude_finished=False), known)
        if not studies:
            studies = _studies(dag.jobs, known)
        rules = frozenset(t for t in requested if workflow.is_rule(t))
        return cls(tuple(requested), tuple(sorted(studies)), rules)

    def targets_label(self) -> str:
        """``reproduce``, ``fa, price_linear``, ``2 files``, ``fa, 3 files``: rules by name,
        files counted (the full list is the ``targets`` param)."""
        rules = [t for t in self.targets if t in self.rules]
        files = len(self.targets) - len(rules)
        parts = rules[:NAMED_TARGETS]
        if len(rules) > NAMED_TARGETS:
            parts.append(f"+{len(rules) - NAMED_TARGETS} rules")
        if files:
            parts.append(f"{files} file{'s' if files > 1 else ''}")
        return ", ".join(parts) or "-"

    def run_name(self, when: float | None = None) -> str:
        """``workflow fa+price_linear (reproduce) 2026-01-31 12:00:00``: the studies that
        run, then what was asked for, then when (the runs table shows the first ~15
        characters of a name, so the studies come first)."""
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(when))
        return f"workflow {'+'.join(self.studies) or '-'} ({self.targets_label()}) {stamp}"


def _studies(jobs: Iterable[Any], known: set[str]) -> set[str]:
    return {s for s in map(lambda job: _study_of(job, known), jobs) if s}


def _study_of(job: Any, known: set[str]) -> str | None:
    """The study of a job: its ``study`` wildcard, else the first output ``results/<study>/...``
    of a known study; None for jobs of no study (datasets, the claims ledger)."""
    wildcards = getattr(job, "wildcards_dict", None) or {}
    if wildcards.get("study") in known:
        return str(wildcards["study"])
    for path in getattr(job, "output", ()):
        parts = str(path).split("/")
        if len(parts) > 2 and parts[0] == "results" and parts[1] in known:
            return parts[1]
    return None
