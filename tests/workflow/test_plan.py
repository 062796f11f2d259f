"""Fast checks that need no job to run: lint, the planned DAG, config validation."""

from __future__ import annotations

from collections import Counter

import pytest
from smk_helpers import (
    EXPECTED_JOBS,
    READOUTS,
    REPO,
    TINY,
    parse_dry_run,
    snakemake,
    write_yaml,
)

pytestmark = pytest.mark.workflow

# EXPECTED_JOBS (smk_helpers) holds the hand-derived job counts of tiny.yaml; see there.


def test_lint(tmp_path):
    run = snakemake(tmp_path, "--lint", timeout=120)
    print(run.describe())  # lint findings (if any) stay visible with -s / on failure
    assert run.returncode == 0, run.describe()


def test_dry_run_plans_every_rule(tmp_path):
    plan = parse_dry_run(snakemake(tmp_path, "-n", timeout=120))
    assert plan.stats == EXPECTED_JOBS
    assert sum(plan.stats.values()) == 54
    # the refined radii: the 2-class trained nets only, worst and universal on the main grid,
    # worst on the scaling grid (config.yaml's fa.refine)
    refine = Counter((j.wildcards["grid"], j.wildcards["radius"]) for j in plan.of("fa_refine"))
    assert refine == {("main", "worst"): 2, ("main", "universal"): 2, ("scaling", "worst"): 3}
    assert {(j.wildcards["supervision"], j.wildcards["model"]) for j in plan.of("fa_refine")} == {
        ("binary", "two_layer_m2")
    }
    grids = Counter(j.wildcards["grid"] for j in plan.of("attack"))
    assert grids == {"main": 4, "scaling": 6}
    # only k-class nets are attacked under the readouts, in one job per (net, grid) writing
    # every readout's table; 2-class nets and references once, on their own score
    assert {j.wildcards["supervision"] for j in plan.of("attack")} == {"binary"}
    multi = plan.of("attack_readouts_fa")
    assert Counter(j.wildcards["grid"] for j in multi) == {"main": 2, "scaling": 3}
    assert {j.wildcards["supervision"] for j in multi} == {"multiclass"}
    for job in multi:
        assert "readout" not in job.wildcards
        assert _readout_outputs(job) == sorted(READOUTS), job.output
    datasets = Counter(j.wildcards["dataset"] for j in plan.of("dataset"))
    assert datasets == {"tiny_clusters": 2, "tiny_clusters@k=2": 1, "tiny_clusters@d=20": 1}
    refs = [j for j in plan.of("train") if j.wildcards["model"] == "robust_reference"]
    assert len(refs) == 4 and all(j.wildcards["optimizer"] == "handbuilt" for j in refs)
    assert all(j.wildcards["model"] == "two_layer_m2" for j in plan.of("analyze"))
    assert all(j.wildcards["model"] == "two_layer_m2" for j in plan.of("decompose"))
    # the sweep's nets are decomposed where the decomposition is defined (n_train <= d):
    # @k=2 (n = d = 40), not @d=20 (n = 40 > d); the base's are the main runs' jobs
    dec = Counter((j.wildcards["dataset"], j.wildcards["seed"]) for j in plan.of("decompose"))
    assert dec == {("tiny_clusters", "0"): 2, ("tiny_clusters", "1"): 2,
                   ("tiny_clusters@k=2", "0"): 2}  # fmt: skip
    (scaling,) = plan.of("fa_scaling_figure")
    tables = [f for f in scaling.input if f.endswith("analysis/decomposition.json")]
    assert (
        sorted(f.split("/")[2] for f in tables) == ["tiny_clusters"] * 2 + ["tiny_clusters@k=2"] * 2
    )
    (figures,) = plan.of("fa_figures")  # the trained nets' metrics.json (fine_acc)
    assert sum(f.endswith("/metrics.json") for f in figures.input) == 4
    assert not (tmp_path / "results").exists(), "a dry run must not write results"


def test_sweep_decompose_false_plans_no_sweep_decompose_job(tmp_path):
    off = write_yaml(tmp_path / "off.yaml", {"studies": {"fa": {"scaling": {"decompose": False}}}})
    plan = parse_dry_run(snakemake(tmp_path, "-n", configfiles=(TINY, off), timeout=120))
    assert {j.wildcards["dataset"] for j in plan.of("decompose")} == {"tiny_clusters"}
    assert plan.stats["decompose"] == 4


def _readout_outputs(job) -> list[str]:
    """The readouts whose robust_accuracy.csv a multi-readout attack job writes (in order)."""
    return [
        f.split("/")[-2] for f in job.output if f.endswith("/robust_accuracy.csv")
    ]  # .../attack/<grid>/<readout>/robust_accuracy.csv


def test_readouts_list_changes_what_each_k_class_attack_job_writes_not_the_jobs(tmp_path):
    """One readout or three: the same attack jobs (same wildcards), 2-class / reference and
    k-class alike; each k-class job writes one table and summary per readout of the list
    (in sorted order, whatever the list's order); nothing upstream of the attacks changes."""
    one = write_yaml(tmp_path / "one.yaml", {"studies": {"fa": {"readouts": ["argmax"]}}})
    few = parse_dry_run(snakemake(tmp_path, "-n", configfiles=(TINY, one), timeout=120))
    turned = write_yaml(
        tmp_path / "turned.yaml", {"studies": {"fa": {"readouts": ["log_odds", "sum"]}}}
    )
    two = parse_dry_run(snakemake(tmp_path, "-n", configfiles=(TINY, turned), timeout=120))
    full = parse_dry_run(snakemake(tmp_path, "-n", timeout=120))
    assert few.stats == full.stats == two.stats == EXPECTED_JOBS

    def wildcards(plan, rule):
        return sorted(tuple(sorted(j.wildcards.items())) for j in plan.of(rule))

    for rule in ("attack", "attack_readouts_fa"):
        assert wildcards(few, rule) == wildcards(full, rule) == wildcards(two, rule)
    assert {tuple(_readout_outputs(j)) for j in few.of("attack_readouts_fa")} == {("argmax",)}
    assert {tuple(_readout_outputs(j)) for j in two.of("attack_readouts_fa")} == {
        ("log_odds", "sum")
    }
    assert all(len(j.output) == 2 for j in full.of("attack"))  # no readout folder


# (id, overlay on tiny.yaml, offending key path the message must name, message fragment)
MALFORMED = [
    ("unknown-top-level-key", {"colour": "blue"}, "colour", "unknown key"),
    ("unknown-study-key", {"studies": {"fa": {"epochs": 3}}}, "studies.fa.epochs", "unknown key"),
    ("negative-seed", {"studies": {"fa": {"seeds": [-1, 1]}}}, "studies.fa.seeds[0]", "minimum"),
    (
        "negative-radius",
        {"studies": {"fa": {"radii": [0.0, -1.0, 2.0]}}},
        "studies.fa.radii[1]",
        "minimum",
    ),
    (
        "supervision-enum",
        {"studies": {"fa": {"supervisions": ["binary", "fine"]}}},
        "studies.fa.supervisions[1]",
        "'fine' is not one of",
    ),
    (
        "undefined-dataset",
        {"studies": {"fa": {"datasets": ["nope"]}}},
        "studies.fa.datasets[0]",
        "not defined under datasets",
    ),
    ("odd-k", {"datasets": {"tiny_clusters": {"k": 3}}}, "datasets.tiny_clusters.k", "even"),
    ("k-above-d", {"datasets": {"tiny_clusters": {"d": 3}}}, "datasets.tiny_clusters.k", "k <= d"),
    (
        "attack-loss-enum",
        {"attacks": {"pgd_margin": {"loss": "foo"}}},
        "attacks.pgd_margin.loss",
        "'foo' is not one of",
    ),
    ("lr-zero", {"optimizers": {"gd_tiny": {"lr": 0}}}, "optimizers.gd_tiny.lr", "minimum of 0"),
    (
        "lr-negative",
        {"optimizers": {"gd_tiny": {"lr": -0.1}}},
        "optimizers.gd_tiny.lr",
        "minimum of 0",
    ),
    (
        "reference-model-trained",
        {"studies": {"fa": {"models": ["robust_reference"]}}},
        "studies.fa.models[0]",
        "robust_reference",
    ),
    (
        "ce-attack-without-multiclass",
        {"studies": {"fa": {"supervisions": ["binary"]}}},
        "studies.fa.attacks[1]",
        "no multiclass model",
    ),
    (
        "beta-on-two-layer",
        {"models": {"two_layer_m2": {"beta": 0.5}}},
        "models.two_layer_m2.beta",
        "not a setting of kind 'two_layer'",
    ),
    (
        "scaling-key-unknown",
        {"studies": {"fa": {"scaling": {"sweeps": {"n_test": [100, 200]}}}}},
        "studies.fa.scaling.sweeps.n_test",
        "unknown key",
    ),
    (
        "dataset-without-kind",
        {"datasets": {"nokind": {"d": 10, "k": 2}}},
        "datasets.nokind.kind",
        "'kind' is a required property",
    ),
    (
        "unknown-model-kind",
        {"models": {"two_layer_m2": {"kind": "tanh_mlp"}}},
        "models.two_layer_m2.kind",
        "'tanh_mlp' is not a model kind (known: [",
    ),
    ("threads-zero", {"threads": 0}, "threads", "minimum"),
    (
        "dpi-too-low",
        {"studies": {"fa": {"plots": {"dpi": 10}}}},
        "studies.fa.plots.dpi",
        "minimum of 50",
    ),
    ("mlflow-unknown-key", {"mlflow": {"uri": "x"}}, "mlflow.uri", "unknown key"),
    (
        "reference-not-robust",
        {"studies": {"fa": {"reference": "two_layer_m2"}}},
        "studies.fa.reference",
        "robust_reference",
    ),
    (
        "positive-all-clusters",
        {"datasets": {"tiny_clusters": {"positive": [0, 1, 2, 3]}}},
        "datasets.tiny_clusters.positive",
        "1 to k-1",
    ),
    (
        "scaling-k-not-integer",
        {"studies": {"fa": {"scaling": {"sweeps": {"k": [2, 2.5]}}}}},
        "studies.fa.scaling.sweeps.k[1]",
        "integer",
    ),
    (
        "steps-not-a-number",
        {"attacks": {"pgd_margin": {"steps": "five"}}},
        "attacks.pgd_margin.steps",
        "not of type 'integer'",
    ),
]


@pytest.mark.parametrize(
    ("overlay", "key", "fragment"),
    [pytest.param(o, k, f, id=i) for i, o, k, f in MALFORMED],
)
def test_malformed_config_rejected(tmp_path, overlay, key, fragment):
    work = tmp_path / "work"
    work.mkdir()
    bad = write_yaml(tmp_path / "bad.yaml", overlay)
    run = snakemake(work, "-n", configfiles=(TINY, bad), timeout=120)
    assert run.returncode != 0, run.describe()
    assert "invalid configuration" in run.output, run.describe()
    assert f"config key {key}:" in run.output, f"{key!r} not named\n{run.describe()}"
    assert fragment in run.output, f"{fragment!r} not in the message\n{run.describe()}"
    # rejected while parsing, before the DAG is built or anything is written
    assert "Building DAG" not in run.output and "Job stats" not in run.output, run.describe()
    assert not (work / "results").exists()


# config.yaml has a study of every kind; these kinds' rules all write
# results/{study}/figures/summary.csv (each study's one figures-and-tables job)
SUMMARY_RULES = {
    "fa": "fa_figures",
    "fa_images": "fa_images_figures",
    "price_linear": "price_linear_figures",
    "prelu": "prelu_figures",
    "margin": "margin_figures",
    "attack_audit": "attack_audit_table",
    "price_nn": "price_nn_figures",
}


def test_each_kind_rule_matches_its_own_studies_only(tmp_path):
    """Each study's summary is planned by its own kind's rule. No rule of a kind's rules file
    states a study constraint: the Snakefile applies ``study_constraint(kind)`` to every rule
    of the file (a rule that forgot its own used to match every network study, and a
    summary target of another kind was ambiguous)."""
    targets = [f"results/{s}/figures/summary.csv" for s in SUMMARY_RULES]
    off = write_yaml(tmp_path / "off.yaml", {"mlflow": {"enabled": False}})
    run = snakemake(tmp_path, "-n", *targets, configfiles=(REPO / "config.yaml", off))
    plan = parse_dry_run(run)
    for study, rule in SUMMARY_RULES.items():
        assert [j.wildcards["study"] for j in plan.of(rule)] == [study], (rule, run.stdout)
    for rules in (REPO / "rules").glob("*.smk"):
        assert "study=" not in rules.read_text().replace("study=study_constraint(", ""), rules


def test_n_train_above_d_rejected_before_scheduling(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    bad = write_yaml(tmp_path / "bad.yaml", {"datasets": {"tiny_clusters": {"n_train": 60}}})
    run = snakemake(work, "-n", configfiles=(TINY, bad), timeout=120)
    assert run.returncode != 0 and "config key datasets.tiny_clusters.n_train" in run.output
