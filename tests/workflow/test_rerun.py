"""Reruns after a change plan exactly the jobs the change touches.

Every test works on its own ``cp -a`` copy of the finished tiny run (``state_copy``);
library edits additionally on a copy of the repository (``repo_copy``) imported through
``PYTHONPATH=<copy>/src`` by the Snakefile (code hashes) and by the jobs.
"""

from __future__ import annotations

import subprocess
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from smk_helpers import (
    FIGURE_RULES,
    PYTHON,
    TINY,
    base_env,
    finished_rules,
    parse_dry_run,
    png_size,
    snakemake,
    write_yaml,
)

pytestmark = pytest.mark.workflow

UPSTREAM = {"dataset", "train", "analyze", "decompose"}
# the claims ledger reads the summaries and the scaling figure's CSV: it reruns with them
LEDGER = {"claims": 1}


def test_radii_change_reruns_main_attacks_only(state_copy, tmp_path):
    overlay = write_yaml(
        tmp_path / "radii.yaml", {"studies": {"fa": {"radii": [0.0, 1.0, 2.0, 3.0, 5.0]}}}
    )
    plan = parse_dry_run(snakemake(state_copy, "-n", configfiles=(TINY, overlay)))
    # main-grid attacks: 2 binary + 2 reference nets once, 2 k-class nets once for all 3
    # readouts; the scaling grid uses radius_fractions, not radii; then only what reads
    # attack/main outputs (and the margin-gradient view, whose radius grid ends at the
    # largest radius), and the main grid's refined radii (2 seeds x worst, universal)
    assert plan.stats == Counter(
        attack=4,
        attack_readouts_fa=2,
        fa_refine=4,
        fa_figures=1,
        fa_margin_gradient=1,
        claims=1,
        all=1,
    )
    assert not UPSTREAM & set(plan.stats)
    for job in plan.of("attack") + plan.of("attack_readouts_fa"):
        assert job.wildcards["grid"] == "main", job
        assert job.reason.startswith("Params have changed"), job


# what reads the k-class attack tables (and the readouts list): figures, summary, ledger
READOUT_READERS = Counter(
    fa_figures=1,
    fa_scaling_figure=1,
    fa_margin_gradient=1,
    claims=1,
    all=1,
)


def _readouts_written(job) -> list[str]:
    return [f.split("/")[-2] for f in job.output if f.endswith("/robust_accuracy.csv")]


def test_dropping_a_readout_reruns_the_k_class_attack_jobs_only(state_copy, tmp_path):
    """A k-class net's attack job serves the whole readouts list (an attack aiming at the
    fine labels runs once for all readouts, on the union of their live points), so its
    numbers depend on the set: dropping a readout reruns it, for the remaining readouts.
    No training and no 2-class or reference attack reruns."""
    overlay = write_yaml(
        tmp_path / "readouts.yaml", {"studies": {"fa": {"readouts": ["argmax", "sum"]}}}
    )
    plan = parse_dry_run(snakemake(state_copy, "-n", configfiles=(TINY, overlay)))
    assert plan.stats == READOUT_READERS + Counter(attack_readouts_fa=5)
    for job in plan.of("attack_readouts_fa"):
        assert job.reason.startswith("Params have changed"), job
        assert _readouts_written(job) == ["argmax", "sum"], job.output
    for rule in ("fa_figures", "fa_scaling_figure"):
        assert plan.of(rule)[0].reason.startswith("Input files updated by another job"), rule


def test_reordering_the_readouts_reruns_no_attack(state_copy, tmp_path):
    """The order of the list is the figures' and tables' order only: the attack jobs take
    the set (sorted), and the library attacks in READOUTS order whatever the order given."""
    overlay = write_yaml(
        tmp_path / "readouts.yaml", {"studies": {"fa": {"readouts": ["log_odds", "argmax", "sum"]}}}
    )
    plan = parse_dry_run(snakemake(state_copy, "-n", configfiles=(TINY, overlay)))
    assert not {"attack", "attack_readouts_fa"} & set(plan.stats), plan.stats
    assert set(plan.stats) <= set(READOUT_READERS), plan.stats


def test_adding_a_readout_reruns_the_k_class_attack_jobs_for_all_readouts(state_copy, tmp_path):
    """From a finished run with readouts [argmax, sum], adding log_odds reruns each k-class
    attack job once, writing all three readouts (the two it had are recomputed: the shared
    attack now runs on the union of three readouts' live points); nothing upstream and no
    2-class or reference attack reruns."""
    two = write_yaml(tmp_path / "two.yaml", {"studies": {"fa": {"readouts": ["argmax", "sum"]}}})
    off = write_yaml(tmp_path / "off.yaml", {"mlflow": {"enabled": False}})
    # bring the k-class attack jobs to the two-readout list for real
    run = snakemake(state_copy, "--cores", "2", "--until", "attack_readouts_fa",
                    configfiles=(TINY, two, off), timeout=600)  # fmt: skip
    assert finished_rules(run.check()) == Counter(attack_readouts_fa=5)
    plan = parse_dry_run(snakemake(state_copy, "-n", configfiles=(TINY, off)))
    assert plan.stats["attack_readouts_fa"] == 5
    assert not {"attack", *UPSTREAM} & set(plan.stats), plan.stats
    for job in plan.of("attack_readouts_fa"):
        assert job.reason.startswith(("Missing output files", "Params have changed")), job
        assert _readouts_written(job) == ["argmax", "log_odds", "sum"], job.output


def test_noop_rerun_plans_nothing(state_copy):
    """Nothing changed: the dry run plans no job (its time is printed, not asserted)."""
    run = snakemake(state_copy, "-n")
    assert parse_dry_run(run).nothing_to_do, run.stdout
    print(f"no-op dry run of the tiny workflow: {run.seconds:.1f} s")


def test_added_seed_reruns_only_its_jobs(state_copy, tmp_path):
    """A third seed: every planned per-run job is of seed 2 (its dataset, models, analyses
    and attacks), the rest are the figures, tables and ledger that gather all seeds."""
    overlay = write_yaml(tmp_path / "seed.yaml", {"studies": {"fa": {"seeds": [0, 1, 2]}}})
    plan = parse_dry_run(snakemake(state_copy, "-n", configfiles=(TINY, overlay)))
    per_run = [j for j in plan.jobs if "seed" in j.wildcards]
    assert {j.wildcards["seed"] for j in per_run} == {"2"}, per_run
    assert {"dataset", "train", "attack"} <= {j.rule for j in per_run}
    gathering = {*FIGURE_RULES, "claims", "all"}
    assert {j.rule for j in plan.jobs if "seed" not in j.wildcards} <= gathering, plan.stats
    assert all(j.reason.startswith("Missing output") for j in per_run), per_run


def test_plot_option_change_reruns_only_figures(state_copy, tmp_path):
    figs = state_copy / "results" / "fa" / "figures"
    sizes = {p.name: png_size(p) for p in figs.glob("*.png")}
    summary = (figs / "summary.csv").read_bytes()
    # (mlflow off only to save the tracking start-up; it is not a job param)
    overlay = write_yaml(
        tmp_path / "dpi.yaml",
        {"mlflow": {"enabled": False}, "studies": {"fa": {"plots": {"dpi": 120}}}},
    )
    configs = (TINY, overlay)

    plan = parse_dry_run(snakemake(state_copy, "-n", configfiles=configs))
    # the summary table is drawn in fa_figures' job, so it reruns with the figures (they are
    # cheap); no upstream job reruns
    assert plan.stats == Counter({**dict.fromkeys(FIGURE_RULES, 1), **LEDGER, "all": 1})
    for rule in FIGURE_RULES:
        assert plan.of(rule)[0].reason.startswith("Params have changed"), plan.of(rule)

    # rerun one figures job for real: the new dpi reaches its two PNGs (cosine heatmaps and
    # robust curves), the other jobs' PNGs stay as they were, the summary is unchanged
    target = "results/fa/figures/cosine_heatmaps.png"
    run = snakemake(state_copy, "--cores", "1", target, configfiles=configs, timeout=300)
    assert finished_rules(run.check()) == Counter(fa_figures=1)
    redrawn = {"cosine_heatmaps.png", "robust_accuracy_vs_radius.png"}
    assert redrawn <= set(sizes), sorted(sizes)
    for name, (w, h) in sizes.items():
        w2, h2 = png_size(figs / name)
        if name in redrawn:
            assert w2 > 1.5 * w and h2 > 1.5 * h, (name, (w, h), (w2, h2))  # dpi 60 -> 120
        else:
            assert (w2, h2) == (w, h), name
    assert (figs / "summary.csv").read_bytes() == summary
    # the rerun recorded its new params: only the other three figure jobs remain
    rest = parse_dry_run(snakemake(state_copy, "-n", configfiles=configs))
    assert rest.stats == Counter({**dict.fromkeys(FIGURE_RULES[1:], 1), **LEDGER, "all": 1})


# edited module -> exact job counts it must trigger (from each script's import closure)
LIBRARY_EDITS = {
    # imported by three FA figure scripts only (fa_figures, fa_lambda_figure,
    # fa_scaling_figure; not by the margin-gradient view)
    "studies/feature_averaging/plots.py": Counter(
        {**dict.fromkeys(FIGURE_RULES[:3], 1), **LEDGER, "all": 1}
    ),
    # the generic cosine view: drawn in fa_figures' job, which also writes the summary the
    # ledger reads, so the ledger reruns after it
    "plotting/cosines.py": Counter({"fa_figures": 1, **LEDGER, "all": 1}),
    # imported by attack.py (through attacks.suite) and the margin-gradient view: both grids
    # (10 own-score + 5 k-class jobs, each for all readouts), then their readers
    "attacks/pgd.py": Counter(
        attack=10,
        attack_readouts_fa=5,
        fa_refine=7,  # the refined radii bisect with the same attacks (rule fa_refine)
        fa_figures=1,
        fa_scaling_figure=1,
        fa_margin_gradient=1,
        claims=1,
        all=1,
    ),
    # the training path of the trained two-layer nets (ibrobust.kinds.TRAINERS["gram_gd"]):
    # their 8 train jobs (not the 4 hand-built references) and everything downstream of them
    # (2-class: main 2 + scaling 3 attacks; k-class: main 2 + scaling 3, all readouts each;
    # decompose: main 4 + the sweep's 2 on tiny_clusters@k=2)
    "training/full_batch.py": Counter(
        train=8,
        analyze=4,
        decompose=6,
        attack=5,
        attack_readouts_fa=5,
        fa_refine=7,  # the 2-class trained nets' refined radii: main 2 x 2 + scaling 3
        fa_figures=1,
        fa_lambda_figure=1,
        fa_scaling_figure=1,
        fa_margin_gradient=1,
        claims=1,
        all=1,
    ),
    # the hand-built reference's kind (ibrobust.kinds.MODELS): its 4 train jobs (main 2 seeds +
    # the 2 scaling variants) and 5 attack jobs (main 2 + scaling 3), then what reads them;
    # not the trained nets' jobs (their attack jobs load the reference's module no more)
    "models/robust_reference.py": Counter(
        train=4,
        attack=5,
        fa_figures=1,
        fa_scaling_figure=1,
        fa_margin_gradient=1,
        claims=1,
        all=1,
    ),
}
DIRECT = {
    "studies/feature_averaging/plots.py": FIGURE_RULES[:3],
    "plotting/cosines.py": ["fa_figures"],
    "attacks/pgd.py": ["attack", "attack_readouts_fa"],
    "training/full_batch.py": ["train"],
    # (its attack jobs' code changes too; their reason names the rerun model first)
    "models/robust_reference.py": ["train"],
}
# modules of other kinds (ibrobust.kinds): loaded on demand, so the tiny Study FA (clusters,
# two-layer nets, Gram-space GD) does not depend on them and nothing reruns
OTHER_KINDS = [
    "data/images.py",
    "data/teacher.py",
    "models/image.py",
    "models/cnn.py",
    "models/mlp.py",
    "models/resnet18.py",
    "training/network.py",
    # the optimizer kinds (gd: the two-layer nets train on the gram_gd path, which reads the
    # entry itself; the claims ledger reads the linear kinds' algorithms)
    "optimizers/gd.py",
    "optimizers/adam.py",
    "optimizers/steepest.py",
    # Study PRELU's model, training path and analysis math, and its package's analysis job,
    # tables, figures and reference radii (the radii: PRELU's figures, tables and claims)
    "models/prelu.py",
    "training/prelu.py",
    "analysis/prelu.py",
    "studies/prelu/experiment.py",
    "studies/prelu/tables.py",
    "studies/prelu/plots.py",
    "studies/prelu/radii.py",
]


@pytest.mark.parametrize("module", list(LIBRARY_EDITS))
def test_library_edit_reruns_importing_rules(state_copy, repo_copy, module):
    src = repo_copy.parent / "src"
    env = base_env(PYTHONPATH=str(src))
    # the copy's ibrobust is the one imported (find_spec drives the code hashes)
    found = subprocess.run(
        [PYTHON, "-c", "from ibrobust.provenance import _package_dir; print(_package_dir())"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert found == str((src / "ibrobust").resolve())

    def plan():
        return parse_dry_run(snakemake(state_copy, "-n", snakefile=repo_copy, env=env))

    # an untouched copy hashes like the original: nothing to do
    assert plan().nothing_to_do
    path = src / "ibrobust" / module
    path.write_text(path.read_text() + "\n# edited by tests/workflow\n")
    after = plan()
    assert after.stats == LIBRARY_EDITS[module]
    assert "dataset" not in after.stats
    for rule in DIRECT[module]:
        assert all(j.reason.startswith("Params have changed") for j in after.of(rule)), rule


@pytest.mark.parametrize("module", OTHER_KINDS)
def test_other_kinds_modules_rerun_nothing(state_copy, repo_copy, module):
    env = base_env(PYTHONPATH=str(repo_copy.parent / "src"))
    path = repo_copy.parent / "src" / "ibrobust" / module
    path.write_text(path.read_text() + "\n# edited by tests/workflow\n")
    plan = parse_dry_run(snakemake(state_copy, "-n", snakefile=repo_copy, env=env))
    # no Study FA job; the claims ledger imports every kind's claim declarations (and the
    # constants they read, e.g. studies/prelu/radii.py's reference radii), so it may rerun alone
    assert plan.nothing_to_do or set(plan.stats) == {"claims", "all"}, plan.stats
    if not plan.nothing_to_do:
        assert plan.of("claims")[0].reason.startswith("Params have changed"), plan.of("claims")


def test_a_kind_fragment_is_hashed_with_its_module(state_copy, repo_copy):
    """The schema fragment beside a kind's module is part of the kind: editing it reruns
    exactly what editing the module reruns (here the two-layer nets and the reference,
    whose module imports theirs)."""
    env = base_env(PYTHONPATH=str(repo_copy.parent / "src"))
    models = repo_copy.parent / "src" / "ibrobust" / "models"

    def edited(name):
        path = models / name
        before = path.read_text()
        path.write_text(before + "\n# edited by tests/workflow\n")
        try:
            return parse_dry_run(snakemake(state_copy, "-n", snakefile=repo_copy, env=env)).stats
        finally:
            path.write_text(before)

    module, fragment = edited("two_layer.py"), edited("two_layer.schema.yaml")
    assert fragment == module and module["train"] == 12, (fragment, module)


def test_ledger_level_reruns_only_the_ledger(state_copy, tmp_path):
    """The interval level (config ``ledger.level``) decides every verdict but no study output:
    given on the command line, it plans the claims job alone; run, the ledger's intervals are
    the 90 % ones and nothing else reran."""
    level = ("--config", "ledger={level: 0.9}")
    plan = parse_dry_run(snakemake(state_copy, "-n", *level))
    assert plan.stats == Counter({**LEDGER, "all": 1})
    assert plan.of("claims")[0].reason.startswith("Params have changed"), plan.of("claims")
    out = state_copy / "results" / "claims"
    ledger = out / "claims.csv"
    before = pd.read_csv(ledger)
    names = ("claims.csv", "claims.md", "claims.html", "claims.png", "claims.pdf")
    mtimes = {name: (out / name).stat().st_mtime_ns for name in names}
    off = write_yaml(tmp_path / "off.yaml", {"mlflow": {"enabled": False}})
    run = snakemake(
        state_copy, "--cores", "1", "claims", *level, configfiles=(TINY, off), timeout=600
    ).check()
    assert finished_rules(run) == Counter(claims=1)
    assert all((out / name).stat().st_mtime_ns > t for name, t in mtimes.items()), mtimes
    after = pd.read_csv(ledger)
    ran = after[after.verdict != "not run"]
    assert len(ran) and ran.rule.str.startswith("holds: the 90 % interval of").all()
    # the same numbers (a 'not applicable' claim has none: NaN in both ledgers)
    assert ran.ours_mean.notna().any()
    np.testing.assert_array_equal(ran.ours_mean.to_numpy(), before.loc[ran.index].ours_mean)
    # two seeds: t(1 df) at 90 % is 6.31, at 95 % 12.71: every two-seed interval halves
    two = ran.ci_method.eq("t over seeds") & ran.n.eq(2) & (ran.ci_hi > ran.ci_lo)
    assert two.any()
    ratio = (ran.ci_hi - ran.ci_lo)[two] / (before.ci_hi - before.ci_lo)[two.index[two]]
    assert ratio.to_numpy() == pytest.approx(6.313751514675 / 12.706204736175)
    assert "Ours = mean [90 % interval]" in (out / "claims.md").read_text()


@pytest.mark.parametrize("module", ["claims/intervals.py", "plotting/claims.py"])
def test_interval_or_figure_code_edit_reruns_only_the_ledger(state_copy, repo_copy, module):
    """How intervals are computed (ibrobust.claims.intervals) and how the ledger is drawn
    reach no study job: an edit of either plans the claims job alone."""
    env = base_env(PYTHONPATH=str(repo_copy.parent / "src"))

    def plan():
        return parse_dry_run(snakemake(state_copy, "-n", snakefile=repo_copy, env=env))

    assert plan().nothing_to_do
    path = repo_copy.parent / "src" / "ibrobust" / module
    path.write_text(path.read_text() + "\n# edited by tests/workflow\n")
    after = plan()
    assert after.stats == Counter({**LEDGER, "all": 1})
    assert after.of("claims")[0].reason.startswith("Params have changed"), after.of("claims")


def test_jobs_import_the_library_copy(state_copy, repo_copy, tmp_path):
    """PYTHONPATH=<copy>/src reaches the jobs, not only the Snakefile."""
    src = repo_copy.parent / "src"
    marker = tmp_path / "imported_from.txt"
    fa = src / "ibrobust" / "plotting" / "cosines.py"
    fa.write_text(
        fa.read_text() + "\n# edited by tests/workflow: record where jobs import this from\n"
        "import os as _os\n\n"
        "if _os.environ.get('WFTEST_IMPORT_MARKER'):\n"
        "    with open(_os.environ['WFTEST_IMPORT_MARKER'], 'a') as _fh:\n"
        "        _fh.write(__file__ + '\\n')\n"
    )
    env = base_env(PYTHONPATH=str(src), WFTEST_IMPORT_MARKER=str(marker))
    off = write_yaml(tmp_path / "off.yaml", {"mlflow": {"enabled": False}})
    target = "results/fa/figures/cosine_heatmaps.png"
    run = snakemake(
        state_copy,
        "--cores",
        "1",
        target,
        snakefile=repo_copy,
        configfiles=(TINY, off),
        env=env,
        timeout=300,
    ).check()
    assert finished_rules(run) == Counter(fa_figures=1)
    assert marker.read_text().split() == [str(fa.resolve())]
