"""Study PRICE-LIN end to end on tests/workflow/configs/tiny_price.yaml (overlaid on config.yaml;
Study FA switched off): lint, the planned DAG, a full run with every declared output and
sane values, and reruns that plan only what a new n value or regime needs."""

from __future__ import annotations

import sqlite3
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from smk_helpers import (
    Run,
    copy_state,
    finished_rules,
    parse_dry_run,
    png_size,
    snakemake,
    write_yaml,
)

pytestmark = pytest.mark.workflow

TINY_PRICE = Path(__file__).resolve().parent / "configs" / "tiny_price.yaml"
CFG = yaml.safe_load(TINY_PRICE.read_text())
STUDY = CFG["studies"]["price_linear"]
REGIMES, OPTIMIZERS = STUDY["datasets"], STUDY["optimizers"]
NS, FRACTIONS, DRAWS = STUDY["n_train"], STUDY["eps_fractions"], STUDY["draws"]
MAX_ITERS = STUDY["stopping"]["max_iters"]

# Jobs of the tiny price config, by hand:
#   price_test_data:      one per regime                                          2
#   price_train:          regime x n = 2 x 2 (draws the training sets and runs
#                         every algorithm on them)                                4
#   price_linear_figures: the study's figures and tables                          1
#   claims:               the claims ledger over the summary                      1
#   all                                                                           1   -> 9
EXPECTED_JOBS = Counter(
    price_test_data=2,
    price_train=4,
    price_linear_figures=1,
    claims=1,
    all=1,
)
FIGURES = ["gap_vs_n", "gap_difference_robust", "gap_difference_clean", "solution_cosines"]
# the figures and tables; the claims ledger reads the summary, so it reruns with it
FIGURE_JOBS = Counter(price_linear_figures=1, claims=1)
# what one price_train job (one regime, one n) writes
TRAIN_FILES = ["data.npz", "data.json", "metrics.csv", "margin_path.csv", "weights.npz"]


def run_price(workdir: Path, *args: str, extra: tuple[Path, ...] = (), timeout: float = 900) -> Run:
    return snakemake(workdir, *args, configfiles=(TINY_PRICE, *extra), timeout=timeout)


def declared_outputs(study: str = "price_linear") -> list[str]:
    out = []
    for ds in REGIMES:
        out += [f"results/{study}/{ds}/data/test.npz", f"results/{study}/{ds}/data/test.json"]
        for n in NS:
            out += [f"results/{study}/{ds}/n{n}/{f}" for f in TRAIN_FILES]
    for f in FIGURES:
        out += [f"results/{study}/figures/{f}{ext}" for ext in (".png", ".pdf", ".csv")]
    tables = ("summary.csv", "summary.md", "margin_path.csv")
    return out + [f"results/{study}/figures/{t}" for t in tables]


@dataclass
class PriceRun:
    workdir: Path
    run: Run

    @property
    def results(self) -> Path:
        return self.workdir / "results"


@pytest.fixture(scope="module")
def price_run(tmp_path_factory) -> PriceRun:
    workdir = tmp_path_factory.mktemp("price_run")
    run = run_price(workdir, "--cores", "2")
    print(f"tiny price workflow: {run.seconds:.1f} s")
    if run.returncode != 0:
        pytest.fail("the tiny price workflow failed\n" + run.describe(), pytrace=False)
    return PriceRun(workdir, run)


def test_lint(tmp_path):
    run = run_price(tmp_path, "--lint", timeout=120)
    print(run.describe())
    assert run.returncode == 0, run.describe()


def test_dry_run_plans_every_price_rule(tmp_path):
    plan = parse_dry_run(run_price(tmp_path, "-n", timeout=120))
    assert plan.stats == EXPECTED_JOBS
    train = plan.of("price_train")
    assert {(j.wildcards["dataset"], int(j.wildcards["n"])) for j in train} == {
        (ds, n) for ds in REGIMES for n in NS
    }
    assert {j.wildcards["dataset"] for j in plan.of("price_test_data")} == set(REGIMES)
    (figures,) = plan.of("price_linear_figures")
    assert figures.wildcards == {"study": "price_linear"}
    assert not (tmp_path / "results").exists(), "a dry run must not write results"


def test_full_run_writes_every_declared_output(price_run):
    assert finished_rules(price_run.run) == EXPECTED_JOBS
    missing = [f for f in declared_outputs() if not (price_run.workdir / f).is_file()]
    assert not missing, missing
    for f in FIGURES:
        w, h = png_size(price_run.results / "price_linear" / "figures" / f"{f}.png")
        assert w > 100 and h > 100
    bench, logs = price_run.results / "benchmarks", price_run.results / "logs"
    for ds in REGIMES:
        assert (bench / "price_test_data" / "price_linear" / f"{ds}.tsv").is_file()
        assert (logs / "price_test_data" / "price_linear" / f"{ds}.log").is_file()
        for n in NS:
            assert (bench / "price_train" / "price_linear" / ds / f"n{n}.tsv").is_file()
            assert (logs / "price_train" / "price_linear" / ds / f"n{n}.log").is_file()
    assert (logs / "figures" / "price_linear" / "price_linear.log").is_file()
    # one job per (regime, n): no per-algorithm run folders and no separate data files
    for ds in REGIMES:
        study_dir = price_run.results / "price_linear" / ds
        assert sorted(p.name for p in study_dir.iterdir()) == sorted(
            ["data", *(f"n{n}" for n in NS)]
        )
        assert sorted(p.name for p in (study_dir / "data").iterdir()) == ["test.json", "test.npz"]


def test_metrics_are_sane(price_run):
    fig = price_run.results / "price_linear" / "figures"
    df = pd.read_csv(fig / "gap_vs_n.csv")
    assert len(df) == len(REGIMES) * len(NS) * len(OPTIMIZERS) * len(DRAWS) * len(FRACTIONS)
    assert set(df.dataset) == set(REGIMES) and set(df.optimizer) == set(OPTIMIZERS)
    assert sorted(set(df.n)) == NS and sorted(set(df.eps_fraction)) == FRACTIONS
    for col in ("train_robust_acc", "test_robust_acc", "train_clean_acc", "test_clean_acc"):
        assert df[col].between(0, 1).all(), col
    np.testing.assert_allclose(df.robust_gap, df.train_robust_acc - df.test_robust_acc)
    assert (df.test_clean_acc >= df.test_robust_acc - 1e-12).all()  # robust <= clean accuracy
    assert df.iters.between(0, MAX_ITERS).all() and not df.diverged.any()
    conv = df[df.converged]
    assert len(conv) > len(df) / 2 and (conv.train_robust_acc == 1.0).all()
    assert (df[~df.converged].iters == MAX_ITERS).all()  # identical stopping rule for all
    erm = df[df.eps_fraction == 0]
    np.testing.assert_allclose(erm.eps, 0.0)
    np.testing.assert_allclose(erm.robust_gap, erm.clean_gap)
    assert (df.l1_norm >= df.l2_norm - 1e-12).all() and (df.l2_norm > 0).all()
    # gamma* is per draw: the same for every algorithm and eps at a given (regime, n, draw)
    assert (df.groupby(["dataset", "n", "draw"]).gamma.nunique() == 1).all()
    # each price_train job: every algorithm on every draw x eps fraction of its own draws,
    # with the gamma* of the training sets it wrote
    for ds in REGIMES:
        for n in NS:
            run = price_run.results / "price_linear" / ds / f"n{n}"
            m = pd.read_csv(run / "metrics.csv")
            assert len(m) == len(OPTIMIZERS) * len(DRAWS) * len(FRACTIONS)
            assert list(dict.fromkeys(m.optimizer)) == OPTIMIZERS
            assert set(zip(m.draw, m.eps_fraction, strict=True)) == {
                (r, f) for r in DRAWS for f in FRACTIONS
            }
            data = np.load(run / "data.npz")
            assert data["x"].shape[:2] == (len(DRAWS), n) and list(data["draws"]) == DRAWS
            assert (data["gamma"] > 0).all()
            gamma = dict(zip(data["draws"].tolist(), data["gamma"].tolist(), strict=True))
            np.testing.assert_allclose(m.gamma, m.draw.map(gamma))
            np.testing.assert_allclose(m.eps, m.eps_fraction * m.gamma)
            w = np.load(run / "weights.npz")
            assert list(w["optimizer"]) == OPTIMIZERS
            assert w["w"].shape == (
                len(OPTIMIZERS),
                len(DRAWS) * len(FRACTIONS),
                data["x"].shape[2],
            )
    cos = pd.read_csv(fig / "solution_cosines.csv")
    assert cos.cosine.between(-1 - 1e-9, 1 + 1e-9).all()
    assert len(cos) == len(REGIMES) * len(NS) * 3 * len(DRAWS) * len(FRACTIONS)  # 3 pairs
    for gap in ("robust", "clean"):
        t = pd.read_csv(fig / f"gap_difference_{gap}.csv")
        assert len(t) == len(REGIMES) * len(FRACTIONS) and t.difference.between(-1, 1).all()
        assert (t.n_values == len(NS)).all()
    summary = pd.read_csv(fig / "summary.csv")
    assert len(summary) == len(REGIMES) * len(OPTIMIZERS) * len(FRACTIONS) * len(NS)
    md = (fig / "summary.md").read_text()
    assert "Robust generalization gap" in md and "Cosine" in md and "Stopping record" in md


def test_every_job_is_an_mlflow_run(price_run):
    db = price_run.results / "mlflow" / "mlflow.db"
    with sqlite3.connect(db) as con:
        rows = con.execute(
            "select value, count(*) from tags where key = 'ibrobust.rule' group by value"
        ).fetchall()
        metrics = dict(
            con.execute(
                "select key, count(*) from metrics where key like '%gap.robust' "
                "or key = 'data.gamma' group by key"
            ).fetchall()
        )
    rules = dict(rows)
    for rule, count in EXPECTED_JOBS.items():
        if rule != "all":
            assert rules.get(rule) == count, rules
    # every price_train job logs each algorithm's mean gaps once and gamma* once per draw
    assert metrics == {
        **{f"{o}.gap.robust": EXPECTED_JOBS["price_train"] for o in OPTIMIZERS},
        "data.gamma": EXPECTED_JOBS["price_train"] * len(DRAWS),
    }, metrics


def test_nothing_to_do_after_a_run(price_run, tmp_path):
    work = copy_state(price_run.workdir, tmp_path / "work")
    plan = parse_dry_run(run_price(work, "-n", timeout=120))
    assert plan.nothing_to_do, plan.stats


def test_adding_one_n_plans_only_its_jobs_and_the_figures(price_run, tmp_path):
    work = copy_state(price_run.workdir, tmp_path / "work")
    extra = write_yaml(
        tmp_path / "more_n.yaml", {"studies": {"price_linear": {"n_train": [*NS, 32]}}}
    )
    plan = parse_dry_run(run_price(work, "-n", extra=(extra,), timeout=120))
    assert plan.stats == Counter(price_train=len(REGIMES), all=1) + FIGURE_JOBS
    assert {(j.wildcards["dataset"], j.wildcards["n"]) for j in plan.of("price_train")} == {
        (ds, "32") for ds in REGIMES
    }


def test_adding_one_regime_plans_only_its_jobs_and_the_figures(price_run, tmp_path):
    work = copy_state(price_run.workdir, tmp_path / "work")
    extra = write_yaml(
        tmp_path / "more_regimes.yaml",
        {
            "datasets": {
                "tiny_w16_x2": {"kind": "teacher", "d": 16, "k_w": 16, "k_x": 2, "n_test": 200}
            },
            "studies": {"price_linear": {"datasets": [*REGIMES, "tiny_w16_x2"]}},
        },
    )
    plan = parse_dry_run(run_price(work, "-n", extra=(extra,), timeout=120))
    assert plan.stats == Counter(price_test_data=1, price_train=len(NS), all=1) + FIGURE_JOBS
    new = plan.of("price_test_data") + plan.of("price_train")
    assert {j.wildcards["dataset"] for j in new} == {"tiny_w16_x2"}
    assert {int(j.wildcards["n"]) for j in plan.of("price_train")} == set(NS)


def test_plot_options_rerun_only_figures(price_run, tmp_path):
    work = copy_state(price_run.workdir, tmp_path / "work")
    extra = write_yaml(
        tmp_path / "plots.yaml", {"studies": {"price_linear": {"plots": {"dpi": 70}}}}
    )
    plan = parse_dry_run(run_price(work, "-n", extra=(extra,), timeout=120))
    assert plan.stats == FIGURE_JOBS + Counter(all=1)
    # the figures job reruns for its changed plot options; the claims ledger takes no plot
    # options: it reruns only because the summary it reads is rewritten
    (figures,) = plan.of("price_linear_figures")
    assert "Params have changed" in figures.reason, figures.reason
    (claims,) = plan.of("claims")
    assert "Params have changed" not in claims.reason, claims.reason


def test_report_has_every_figure(price_run, tmp_path):
    from ops_helpers import check_report

    work = copy_state(price_run.workdir, tmp_path / "work")
    report = work / "report.html"
    run_price(work, "--report", str(report), timeout=300).check()
    check_report(report, work, "price_linear", FIGURES)
