"""The cost model on a hand-built profile (ibrobust.decide.cost), a study's unit lists
(ibrobust.decide.units) and the planner (ibrobust.decide.planner) on hand-made ledger rows."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from scipy import stats

from ibrobust.decide.cost import cost_model, read_jobs
from ibrobust.decide.planner import PlanSettings, overlay, plan_units
from ibrobust.decide.power import chance_to_decide, units_for
from ibrobust.decide.spending import spending
from ibrobust.decide.units import extended, key_of_row, study_look, unit_keys

JOBS = pd.DataFrame(
    [
        ("train", "s", 10.0), ("train", "s", 20.0), ("attack", "s", 4.0), ("attack", "s", 6.0),
        ("figures", "s", 3.0), ("dataset", "shared", 1.0), ("dataset", "shared", 3.0),
        ("claims_all", "shared", 7.0), ("price_train", "lin", 8.0),
        ("price_train", "lin", 12.0), ("figures", "lin", 2.0),
    ],
    columns=["rule", "study", "cpu"],
).assign(wall=1.0)  # an extra column is ignored  # fmt: skip
UNIT_JOBS = pd.DataFrame(
    [
        ("s", "s.seeds", "train", 2, "adds"), ("s", "s.seeds", "attack", 1, "adds"),
        ("s", "s.seeds", "dataset", 1, "adds"), ("lin", "lin.draws", "price_train", 0, "reruns"),
    ],
    columns=["study", "key", "rule", "jobs", "mode"],
)  # fmt: skip


def test_cost_model_hand_computed():
    cm = cost_model(JOBS, UNIT_JOBS, units={"lin.draws": 4})
    # a seed: 2 train jobs (mean 15) + 1 attack (mean 5) + 1 dataset (shared mean 2)
    assert cm.unit_cost("s.seeds") == pytest.approx(2 * 15 + 5 + 2)
    # the study's aggregates (figures 3) rerun once, and the ledger (7)
    assert cm.fixed["s"] == pytest.approx(3 + 7)
    # a looped list: the whole price_train rerun (20) once, 20 / 4 per draw
    assert cm.unit_cost("lin.draws") == pytest.approx(5)
    assert cm.fixed_key["lin.draws"] == pytest.approx(20)
    assert cm.extension_cost("lin.draws", "lin", 2, touched=False) == pytest.approx(10 + 20 + 9)
    assert cm.extension_cost("s.seeds", "s", 3, touched=True) == pytest.approx(3 * 37)
    assert cm.extension_cost("s.seeds", "s", 0, touched=False) == 0
    seeds = cm.table[cm.table.key == "s.seeds"]
    how = dict(zip(seeds.rule, seeds.measured, strict=True))
    assert how == {"train": "this study's jobs", "attack": "this study's jobs",
                   "dataset": "shared jobs"}  # fmt: skip


def test_cost_model_unmeasured_rule_and_bad_tables():
    extra = pd.DataFrame([("s", "s.seeds", "decompose", 1, "adds")], columns=UNIT_JOBS.columns)
    cm = cost_model(JOBS, pd.concat([UNIT_JOBS, extra]), units={"lin.draws": 4})
    # no decompose job anywhere: the study's median job (10, 20, 4, 6, 3 -> 6)
    assert cm.unit_cost("s.seeds") == pytest.approx(37 + 6)
    assert "unmeasured" in cm.table.measured.iloc[-1]
    with pytest.raises(ValueError, match="cpu"):
        cost_model(JOBS.drop(columns="cpu"), UNIT_JOBS)
    with pytest.raises(ValueError, match="length"):
        cost_model(JOBS, UNIT_JOBS)  # the looped list's length is needed
    with pytest.raises(KeyError, match="x.seeds"):
        cost_model(JOBS, UNIT_JOBS, {"lin.draws": 4}).unit_cost("x.seeds")


def test_jobs_from_a_run_s_logs(tmp_path):
    log = (
        "2026-01-01 00:00:00 INFO ibrobust.train: start train seed0/binary/gd/m/ds @fa threads=1 "
        "mlflow=off host=h\n2026-01-01 00:00:09 INFO ibrobust.train: phases wall=9.0 cpu=8.5 "
        "startup=2.0 data=0.1\n"
    )  # fmt: skip
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "train.log").write_text(log)
    (tmp_path / "b.log").write_text(log.replace("seed0/binary/gd/m/ds ", "").split("\n")[0])
    (tmp_path / "c.log").write_text("... start decide_plan - @shared threads=1\n phases cpu=1.5\n")
    jobs = read_jobs(tmp_path)  # b.log: still running (no phases line), left out
    assert jobs.to_dict("records") == [
        {"rule": "train", "study": "fa", "cpu": 8.5},
        {"rule": "decide_plan", "study": "shared", "cpu": 1.5},
    ]
    with pytest.raises(ValueError, match="no finished job"):
        read_jobs(_empty(tmp_path))


def _empty(tmp_path):
    (tmp_path / "empty").mkdir()
    return tmp_path / "empty"


def test_unit_lists_and_rows():
    price_nn = {"fc": {"seeds": [0, 1, 2]}, "cnn": {"seeds": [0, 1, 2], "eps": [0.1]},
                "scale": {"overrides": {"cnn": {"seeds": [0]}}}, "attack_points": 500}  # fmt: skip
    keys = unit_keys("price_nn", price_nn)
    assert [k.name for k in keys] == ["price_nn.fc.seeds", "price_nn.cnn.seeds"]
    assert key_of_row(keys, "price_nn.cnn_gd_ahead", "CNN, n = 20").name == "price_nn.cnn.seeds"
    assert key_of_row(keys, "price_nn.fc_erm_alike", "FC net, MNIST 2 vs 7").part == "fc"
    assert key_of_row(keys, "price_nn.other", "both") is None  # parts only, none named
    fa = unit_keys("fa", {"seeds": [0, 1, 2], "scaling": {"seeds": [0, 1]}, "seed": 0})
    assert key_of_row(fa, "fa.scaling_slope", "scaling sweep over k").name == "fa.scaling.seeds"
    assert key_of_row(fa, "fa.binary_radius", "clusters_d1000").name == "fa.seeds"
    assert unit_keys("lin", {"draws": [0, 1, 2, 3], "seed": 0})[0].kind == "draws"
    assert extended([0, 1, 2], 2) == [0, 1, 2, 3, 4] and extended([5, 2], 1) == [5, 2, 6]


def _row(**kw):
    base = dict(
        level=0.95, study="s", id="s.claim", setting="", verdict="inconclusive", fragile=False,
        ours_mean=1.0, ours_spread=1.0, ci_method="t over seeds", n=3, unit="seeds",
        lower_bound=False, reason="", strong_lo=0.0, strong_hi=math.inf, weak_lo=0.0,
        weak_hi=math.inf,
    )  # fmt: skip
    base.update(kw)
    half = stats.t.ppf(0.975, base["n"] - 1) * base["ours_spread"] / math.sqrt(base["n"])
    base.setdefault("ci_lo", base["ours_mean"] - half)
    base.setdefault("ci_hi", base["ours_mean"] + half)
    return base


STUDIES = {"s": {"seeds": [0, 1, 2]}, "lin": {"draws": [0, 1, 2, 3]}}
LEDGER = pd.DataFrame(
    [
        _row(),  # mean 1, sd 1, 3 seeds: [-1.48, 3.48] straddles 0
        _row(id="s.other", ours_mean=0.8),  # the same seeds serve it too
        _row(id="s.decided", verdict="holds", ours_mean=9.0),  # neither: not planned
        _row(id="s.fine", reason="resolution-limited: a finer measurement would decide"),
        _row(id="s.points", unit="points", n=500, ci_method="Wilson over points"),
    ]
)


def test_planner_chooses_within_the_budget_and_shares_units():
    cm = cost_model(JOBS, UNIT_JOBS, units={"lin.draws": 4})
    spend = spending(0.95)
    p = plan_units(LEDGER, STUDIES, cm, spend, settings=PlanSettings(2000, max_units=30))
    rows = p.rows.set_index("id")
    assert list(rows.index) == ["s.claim", "s.other", "s.fine", "s.points"]
    assert "resolution" in rows.loc["s.fine", "outcome"]
    assert "points" in rows.loc["s.points", "outcome"]
    m = int(rows.loc["s.claim", "units_planned"])
    assert 3 < m <= 30 and rows.loc["s.other", "units_planned"] == m  # one list for both
    assert p.predicted_cpu_s == pytest.approx((m - 3) * 37 + 10) and p.predicted_cpu_s <= 2000
    level2 = spend.level_at(2)
    assert rows.loc["s.claim", "level"] == pytest.approx(level2)
    # the measured spread recovered from the interval: sd 1 over 3 seeds
    assert rows.loc["s.claim", "chance"] == pytest.approx(chance_to_decide(1.0, 1.0, 3, m, level2))
    assert rows.loc["s.claim", "units_needed"] == units_for(1.0, 1.0, 3, level2, 0.8, 10_000)
    keys = p.keys.set_index("key")
    assert keys.loc["s.seeds", "rows"] == 2 and keys.loc["s.seeds", "cpu_s"] == p.predicted_cpu_s


def test_planner_reads_the_interval_level_of_a_decide_ledger():
    """A look's ledger states 0.95 in ``level`` and its interval's own level in
    ``look_level``: the spread is backed out at the latter."""
    cm = cost_model(JOBS, UNIT_JOBS, units={"lin.draws": 4})
    half = stats.t.ppf(0.5 + 0.9924 / 2, 2) * 1.0 / math.sqrt(3)  # sd 1 at 99.24 %
    row = _row(ci_lo=1.0 - half, ci_hi=1.0 + half, look_level=0.9924)
    p = plan_units(pd.DataFrame([row]), STUDIES, cm, spending(0.95), settings=PlanSettings(0))
    assert p.rows.units_needed.iloc[0] == units_for(1.0, 1.0, 3, spending(0.95).level_at(2),
                                                    0.8, 10_000)  # fmt: skip


def test_planner_budget_zero_and_cap():
    cm = cost_model(JOBS, UNIT_JOBS, units={"lin.draws": 4})
    p = plan_units(LEDGER, STUDIES, cm, spending(0.95), settings=PlanSettings(0))
    assert p.predicted_cpu_s == 0 and (p.rows.added == 0).all()
    assert "not within the budget" in p.rows.outcome.iloc[0]
    # a direction from 0 capped: the equivalence read
    near = pd.DataFrame([_row(ours_mean=0.01)])
    q = plan_units(near, STUDIES, cm, spending(0.95), settings=PlanSettings(10**6, max_units=6))
    assert q.rows.units_planned.iloc[0] <= 6
    assert "no effect larger than" in q.rows.outcome.iloc[0]
    assert "cap 6" in q.rows.outcome.iloc[0]


def test_overlay_and_looks():
    cm = cost_model(JOBS, UNIT_JOBS, units={"lin.draws": 4})
    p = plan_units(LEDGER, STUDIES, cm, spending(0.95), settings=PlanSettings(2000))
    m = p.counts["s.seeds"]
    o = overlay(p, STUDIES, looks=[])
    assert o["studies"] == {"s": {"seeds": list(range(m))}}
    assert o["decide"]["looks"] == [{"s.seeds": 3, "lin.draws": 4}, {"s.seeds": m, "lin.draws": 4}]
    # a look that names only some lists: the others kept their lengths
    assert overlay(p, STUDIES, looks=[{"s.seeds": 3}])["decide"]["looks"][0] == {"s.seeds": 3}
    with pytest.raises(ValueError, match="outside a decide plan"):
        overlay(p, STUDIES, looks=[{"s.seeds": 5, "lin.draws": 4}])
    looks = [
        {"a.seeds": 3, "b.seeds": 2},
        {"a.seeds": 5, "b.seeds": 2},
        {"a.seeds": 9, "b.seeds": 2},
    ]
    assert study_look(looks, "a") == 3 and study_look(looks, "b") == 1 and study_look([], "a") == 1


def test_plan_settings_reject_bad_values():
    for kw, key in (({"budget_cpu_s": -1}, "budget"), ({"max_units": 1}, "max_units"),
                    ({"target": 1.0}, "target")):  # fmt: skip
        with pytest.raises(ValueError, match=key):
            PlanSettings(**kw)


def test_the_printed_apply_command_parses_as_the_decide_target_with_the_plan():
    # `--configfile` takes every word after it: with the target last, Snakemake reads a config
    # file named "decide" and fails (the README once printed it so)
    import shlex

    from snakemake.cli import get_argument_parser

    from ibrobust.decide.tables import apply_command

    args = get_argument_parser().parse_args(shlex.split(apply_command("x/plan.yaml"))[1:])
    assert args.targets == ["decide"]
    assert [str(p) for p in args.configfile] == ["x/plan.yaml"]
    wrong = get_argument_parser().parse_args(["--configfile", "x/plan.yaml", "decide"])
    assert [str(p) for p in wrong.configfile] == ["x/plan.yaml", "decide"]  # the trap itself
