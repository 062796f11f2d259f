"""Data preflight (Snakefile ``onstart``): before the first job, check the real image data
the planned dataset jobs will read (``ibrobust.data.preflight``: headers, not pixels).

Only datasets that read files under ``data_root`` (their kind's ``reads_data_root``) and
whose ``dataset`` job is planned are checked: the default target (synthetic data only), or
a rerun whose image datasets are already made, reads nothing under ``data_root`` and is
never stopped by it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from snakemake.exceptions import WorkflowError

from ibrobust.kinds import DATASETS

DATASET_RULE = "dataset"  # rules/data.smk: the one rule that reads data_root


def planned_data_root_datasets(workflow, datasets: Mapping[str, Mapping]) -> dict[str, Mapping]:
    """name -> entry of every dataset reading data_root that a planned ``dataset`` job makes."""
    names = {
        job.wildcards.dataset
        for job in workflow.dag.needrun_jobs()
        if job.rule.name == DATASET_RULE
    }
    return {n: datasets[n] for n in sorted(names) if DATASETS.of(datasets[n])["reads_data_root"]}


def check_data(workflow, datasets: Mapping[str, Mapping], data_root: str) -> None:
    """WorkflowError listing every problem (one line each, naming the path) before any job
    starts; a line on stdout with what was checked and how long it took otherwise."""
    needed = planned_data_root_datasets(workflow, datasets)
    if not needed:
        return
    t0 = time.monotonic()
    problems = []
    for kind in sorted({e["kind"] for e in needed.values()}):  # each kind checks its own files
        entries = {n: e for n, e in needed.items() if e["kind"] == kind}
        problems += DATASETS.load(kind).preflight(entries, data_root)
    took = time.monotonic() - t0
    if problems:
        raise WorkflowError(
            f"data preflight: {len(problems)} problem(s) with the image data under data_root "
            f"{data_root!r} (no job was started; checked in {took:.1f} s):\n"
            + "\n".join(f"  - {p}" for p in problems)
        )
    print(
        f"data preflight: {', '.join(needed)} under data_root {data_root!r} look fine "
        f"({took:.1f} s)",
        flush=True,
    )
