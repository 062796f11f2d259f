"""`snakemake decide` on the tiny config, planned only (dry runs): the plan step builds the
plan alone; with a plan applied (a config overlay that extends the tiny FA study's seeds and
records the looks) the added seed's jobs are ordinary jobs of the study and the look's ledger
is built; decide.dry then plans the next look, over this look's ledger."""

from __future__ import annotations

import pytest
from smk_helpers import TINY, parse_dry_run, snakemake, write_yaml

pytestmark = pytest.mark.workflow

LOOKS = [{"fa.seeds": 2, "fa.scaling.seeds": 1}, {"fa.seeds": 3, "fa.scaling.seeds": 1}]


def test_decide_plans_first(tmp_path):
    plan = parse_dry_run(snakemake(tmp_path, "-n", "decide", timeout=120))
    assert plan.stats == {"decide_plan": 1, "decide": 1}
    assert not (tmp_path / "results").exists(), "a dry run must not write results"


def test_an_applied_plan_runs_the_new_seed_as_ordinary_jobs(tmp_path):
    overlay = write_yaml(
        tmp_path / "plan.yaml",
        {"studies": {"fa": {"seeds": [0, 1, 2]}}, "decide": {"looks": LOOKS}},
    )
    run = snakemake(tmp_path, "-n", "decide", configfiles=(TINY, overlay), timeout=120)
    plan = parse_dry_run(run)
    assert plan.stats["decide_ledger"] == 1 and "decide_plan" not in plan.stats
    seeds = {j.wildcards.get("seed") for j in plan.of("train")}
    assert "2" in seeds  # the added seed trains like the others
    dry = write_yaml(tmp_path / "dry.yaml", {"decide": {"dry": True}})
    again = parse_dry_run(
        snakemake(tmp_path, "-n", "decide", configfiles=(TINY, overlay, dry), timeout=120)
    )
    # the next look's plan, over this look's ledger (which it builds first)
    assert again.stats["decide_plan"] == 1 and again.stats["decide_ledger"] == 1


def test_a_look_builds_the_parts_of_a_study_already_built(tmp_path):
    # only the FA figures exist (a partial earlier run): the look targets them (rerun over
    # the new seed; forced here because the stand-in file has no Snakemake metadata for the
    # input trigger), and leaves the never-built scaling sweep unbuilt (the plan priced none
    # of it), even when its rule is forced too
    overlay = write_yaml(
        tmp_path / "plan.yaml",
        {"studies": {"fa": {"seeds": [0, 1, 2]}}, "decide": {"looks": LOOKS}},
    )
    force = ("--forcerun", "fa_figures", "fa_scaling_figure")
    base = parse_dry_run(
        snakemake(tmp_path, "-n", "decide", *force, configfiles=(TINY, overlay), timeout=120)
    )
    assert base.stats.get("fa_scaling_figure") == 1  # never built: the whole study
    built = tmp_path / "results" / "fa" / "figures" / "summary.csv"
    built.parent.mkdir(parents=True)
    built.write_text("x\n")
    plan = parse_dry_run(
        snakemake(tmp_path, "-n", "decide", *force, configfiles=(TINY, overlay), timeout=120)
    )
    assert plan.stats.get("fa_figures") == 1 and "fa_scaling_figure" not in plan.stats
    assert "2" in {j.wildcards.get("seed") for j in plan.of("train")}
