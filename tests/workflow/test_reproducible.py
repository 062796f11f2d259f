"""Two runs of the tiny config in fresh directories give byte-identical results/ trees
(issue 16 item 4): model files, datasets, tables, CSVs and figures alike. Excluded: job
logs and benchmarks (timings) and the MLflow store (run ids, times)."""

from __future__ import annotations

from pathlib import Path

import pytest
from smk_helpers import snakemake

# top-level folders of results/ that record how a run went rather than what it computed
EXCLUDED = ("logs", "benchmarks", "mlflow")


def result_files(results: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(results)): p.read_bytes()
        for p in sorted(results.rglob("*"))
        if p.is_file() and p.relative_to(results).parts[0] not in EXCLUDED
    }


def test_two_fresh_runs_give_identical_results(tiny_run, tmp_path):
    second = snakemake(tmp_path, "--cores", "2", timeout=1200)
    if second.returncode != 0:
        pytest.fail("the second tiny workflow failed\n" + second.describe(), pytrace=False)
    a, b = result_files(tiny_run.results), result_files(tmp_path / "results")
    assert sorted(a) == sorted(b)
    kinds = {Path(name).suffix for name in a}
    assert {".pt", ".npz", ".csv", ".json", ".png", ".pdf", ".md"} <= kinds, kinds
    differ = [name for name in a if a[name] != b[name]]
    assert not differ, f"{len(differ)} of {len(a)} files differ between two runs: {differ}"
