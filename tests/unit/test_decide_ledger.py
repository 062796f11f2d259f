"""The ledger after a look of `snakemake decide` (ibrobust.decide.looks): each study's rows at
its look's spent level, earlier looks rebuilt from the outputs cut to their units, the
columns the ledger gains, and `ibrobust claims diff` on the before/after ledgers."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from claims_fixtures import (
    default_config,
    fa_curve,
    fa_margin_gradient,
    fa_scaling,
    fa_summary,
    write,
)

from ibrobust.decide.looks import (
    DECIDE_COLUMNS,
    deciding_look,
    evaluate_looks,
    job_cpu,
    look_units,
    looks_html,
    looks_markdown,
    looks_rows,
    with_looks,
)
from ibrobust.decide.spending import spending
from ibrobust.ledger.diff import diff_ledgers
from ibrobust.ledger.render import ledger_html, ledger_markdown, read_ledger
from ibrobust.ledger.table import COLUMNS, evaluate_study, study_outputs

FA = ("fa", "figures/summary.csv")  # as tests/unit/test_claims.py names them
FA_SCALING = ("fa", "figures/critical_radius_scaling.csv")
FA_MARGIN = ("fa", "figures/margin_gradient_summary.csv")
FA_CURVE = ("fa", "figures/robust_accuracy_vs_radius.csv")
LOOKS = [{"fa.seeds": 2, "fa.scaling.seeds": 2}, {"fa.seeds": 3, "fa.scaling.seeds": 2}]


def _fa(tmp_path, summary, curve=None):
    cfg = default_config()
    curve = fa_curve() if curve is None else curve
    for (study, rel), df in {FA: summary, FA_SCALING: fa_scaling(),
                             FA_MARGIN: fa_margin_gradient(), FA_CURVE: curve}.items():  # fmt: skip
        write(tmp_path, study, rel, df)
    return next(so for so in study_outputs(cfg, tmp_path) if so.ctx.name == "fa")


def _by_id(rows):
    return {(r["id"], r["setting"]): r for r in rows}


def test_each_look_at_its_spent_level_and_the_first_rebuilt_from_its_units(tmp_path):
    spend = spending(0.95)
    so = _fa(tmp_path / "all", fa_summary())
    now, records = evaluate_looks(so, LOOKS, spend)
    # the current look (2) at its level, on all three seeds
    full = _by_id(evaluate_study(so, spend.level_at(2)))
    row = _by_id(now)[("fa.binary_radius", "clusters_d1000 (d=1000, k=10)")]
    want = full[("fa.binary_radius", "clusters_d1000 (d=1000, k=10)")]
    assert row["level"] == pytest.approx(0.95) and row["n"] == 3  # the level kept overall
    assert (row["ci_lo"], row["ci_hi"]) == pytest.approx((want["ci_lo"], want["ci_hi"]))
    assert "look 2, union-bound alpha spending" in row["ci_method"]
    # look 1: the same as the outputs of seeds 0 and 1 alone, at look 1's level
    two = fa_summary(binary=(9.0, 9.5), multiclass=(25.0, 26.0), reference=(math.nan,) * 2,
                     universal=(10.0, 10.0), clean=(1.0, 1.0), fa_binary=(0.95, 0.97),
                     other_class=(0.05, 0.06), fa_multi=(0.05, 0.06),
                     cosine_binary=(0.44, 0.45))  # fmt: skip
    first = _by_id(evaluate_study(_fa(tmp_path / "two", two, fa_curve(zero=(9.0, 9.5))),
                                  spend.level_at(1)))  # fmt: skip
    rec = [r for r in records if r["id"] == "fa.binary_radius" and r["look"] == 1]
    assert len(rec) == 1 and rec[0]["n"] == 2 and rec[0]["units"] == "2 seeds"
    f = first[("fa.binary_radius", "clusters_d1000 (d=1000, k=10)")]
    assert (rec[0]["ci_lo"], rec[0]["ci_hi"]) == pytest.approx((f["ci_lo"], f["ci_hi"]))
    assert rec[0]["level"] == pytest.approx(spend.level_at(1))


def test_no_looks_is_one_look_and_unchanged_lists_are_no_new_look(tmp_path):
    so = _fa(tmp_path, fa_summary())
    now, records = evaluate_looks(so, [], spending(0.95))
    assert {r["look"] for r in records} == {1}
    assert "96.96 %" in now[0]["ci_method"] and now[0]["level"] == pytest.approx(0.95)
    same = [LOOKS[0], LOOKS[0], LOOKS[1]]
    assert len(look_units(same, "fa", so.ctx.config)) == 2
    assert look_units(LOOKS, "fa", so.ctx.config)[0] == {"seed": [0, 1]}


def test_the_ledger_gains_the_looks_and_claims_diff_reads_it(tmp_path):
    spend = spending(0.95)
    so = _fa(tmp_path, fa_summary())
    now, records = evaluate_looks(so, LOOKS, spend)
    table = pd.DataFrame(records)
    ledger = with_looks(pd.DataFrame(now, columns=COLUMNS), table, {"fa": 1234.0})
    assert list(ledger.columns) == [*COLUMNS, *DECIDE_COLUMNS]
    row = ledger[ledger.id == "fa.binary_radius"].iloc[0]
    assert row.looks == "2 -> 3" and row.decide_cpu_s == 1234.0
    assert row.look_level == pytest.approx(spend.level_at(2))
    assert row.deciding_look == deciding_look(list(table[table.id == "fa.binary_radius"].verdict))
    shown = looks_rows(ledger, table)
    assert "fa.binary_radius" in set(shown["claim id"])
    assert "2 -> 3" in looks_markdown(shown) and "<table" in looks_html(shown)
    # the ledger renders (one stated level; each look's level in ci_method)
    assert "fa.binary_radius" in ledger_markdown(ledger) and "<html" in ledger_html(ledger)
    # ibrobust claims diff on the ledger before (look 1) and after (look 2)
    before = pd.DataFrame(evaluate_study(so, spend.level_at(1)), columns=COLUMNS)
    before.to_csv(tmp_path / "before.csv", index=False)
    ledger.to_csv(tmp_path / "after.csv", index=False)
    d = diff_ledgers(read_ledger(tmp_path / "before.csv"), read_ledger(tmp_path / "after.csv"))
    assert len(d) == len(ledger) and set(d.status) <= {"changed", "unchanged"}


def test_deciding_look_and_job_cpu():
    assert deciding_look(["inconclusive", "holds", "holds"]) == 2
    assert deciding_look(["holds", "holds"]) == 1
    assert math.isnan(deciding_look(["holds", "inconclusive"]))
    assert deciding_look(["does not hold", "holds weaker"]) == 2
    line = "2026-01-01 00:00:00 INFO x: phases wall=3.1 cpu=2.5 startup=1.0 data=0.1\n"
    assert job_cpu("start x\n" + line) == 2.5 and job_cpu("no phases here") is None


def test_measured_cpu_is_split_by_the_study_in_each_job_logs_path():
    from ibrobust.decide.tables import cpu_by_study, look_summary

    jobs = [
        ("results/logs/train/fa/clusters/two_layer/gd/binary/seed3.log", 10.0),
        ("results/logs/attack/fa/clusters/x/seed3.log", 2.5),
        ("results/logs/train/prelu/p/seed2.log", 4.0),
        ("results/logs/dataset/clusters/seed3.log", 1.0),  # a dataset: no study
        ("results/logs/figures/fa/fa.log", None),  # no phases line: not counted
    ]
    by = cpu_by_study(jobs, ["fa", "prelu", "margin"])
    assert by == {"fa": 12.5, "prelu": 4.0, "shared": 1.0}
    ledger = pd.DataFrame({"verdict": ["holds"], "fragile": [False]})
    text = look_summary(ledger, ledger, {"fa": 11.0, "prelu": 3.0}, by)
    assert "measured (the jobs' own records since the plan): 18" in text
    assert "| fa | 11 | 12 |" in text and "| shared | - | 1 |" in text
