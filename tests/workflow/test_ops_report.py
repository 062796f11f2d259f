"""`snakemake --report`: one self-contained HTML file with every figure of every enabled
study, grouped by study, each with its caption (report/<kind>/<figure>.rst)."""

from __future__ import annotations

import shutil

import pytest
from ops_helpers import artifacts_dir, check_report
from smk_helpers import FIGURES_WITH_SCALING, snakemake

pytestmark = pytest.mark.workflow


def test_report_has_every_study_figure(state_copy):
    report = state_copy / "report.html"
    run = snakemake(state_copy, "--report", str(report), timeout=300)
    assert run.returncode == 0, run.describe()
    check_report(report, state_copy, "fa", FIGURES_WITH_SCALING)
    keep = artifacts_dir("report") / "report_fa.html"
    shutil.copy2(report, keep)
    print(f"report: {keep}")
