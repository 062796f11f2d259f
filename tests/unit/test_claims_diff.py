"""Two ledgers compared (ibrobust.ledger.diff) on hand-made ledger CSVs: a changed verdict, a
value that moved beyond the intervals (the difference's interval computed by hand), one
within them, rows without an interval, added and removed keys, a ledger from before this
round's columns and one from before intervals; the markdown and CSV renderings."""

from __future__ import annotations

import io
import math

import pandas as pd
import pytest

from ibrobust.claims.core import SummaryError
from ibrobust.ledger.diff import (
    ADDED,
    CHANGED,
    DIFF_COLUMNS,
    MOVED,
    NO_INTERVAL,
    REMOVED,
    UNCHANGED,
    WITHIN,
    diff_csv,
    diff_ledgers,
    diff_markdown,
)
from ibrobust.ledger.render import read_ledger
from ibrobust.ledger.table import COLUMNS
from ibrobust.ledger.trend import difference

NAN, INF = math.nan, math.inf
NEW_COLUMNS = ["source", "quote", "scope", "derivation", "fragile", "fragile_reason"]


def row(study, cid, setting, mean, lo, hi, verdict="holds", reason="", points=0):
    r = dict.fromkeys(COLUMNS, "")
    r.update(level=0.95, study=study, id=cid, setting=setting, claim=f"{cid} holds",
             source="Paper 2024, Sec. 1", quote="q", ours_mean=mean, ours_spread=0.0,
             ci_lo=lo, ci_hi=hi, n=3, unit="seeds", points=points, lower_bound=hi == INF,
             verdict=verdict, reason=reason, fragile=False)  # fmt: skip
    return r


BEFORE = [
    row("fa", "fa.verdict", "d1000", 1.0, 0.9, 1.1),
    row("fa", "fa.moved", "d1000", 1.0, 0.9, 1.1),
    row("fa", "fa.censored", "d1000", 0.5, 0.3, INF, verdict="inconclusive", reason="censored"),
    row("price", "price.steady", "n=8", 0.2, 0.1, 0.3),
    row("margin", "margin.loss", "training", -320.0, -321.0, -319.0),
    row("margin", "margin.gone", "sample", 0.5, 0.4, 0.6, verdict="does not hold", reason="r"),
    row("prelu", "prelu.off", "mnist", NAN, NAN, NAN, verdict="not run", reason="off"),
]
AFTER = [
    row("fa", "fa.verdict", "d1000", 0.95, 0.8, 1.1, verdict="holds weaker", reason="straddles"),
    row("fa", "fa.moved", "d1000", 2.0, 1.7, 2.3),
    row("fa", "fa.censored", "d1000", 0.2, 0.1, 0.3, verdict="does not hold"),
    row("price", "price.steady", "n=8", 0.25, 0.15, 0.35),
    row("margin", "margin.loss", "training", -120.0, NAN, NAN, verdict="holds"),
    row("prelu", "prelu.off", "mnist", NAN, NAN, NAN, verdict="not run", reason="off"),
    row("margin", "margin.certificate", "pairs", 1.0, 0.99, 1.0, points=500),
]


def written(tmp_path, rows, name, drop=()) -> pd.DataFrame:
    pd.DataFrame(rows, columns=COLUMNS).drop(columns=list(drop)).to_csv(
        tmp_path / name, index=False
    )
    return read_ledger(tmp_path / name)


@pytest.fixture
def table(tmp_path):
    # the before ledger in the older format: without this round's columns
    before = written(tmp_path, BEFORE, "before.csv", drop=NEW_COLUMNS)
    return diff_ledgers(before, written(tmp_path, AFTER, "after.csv"), ("before.csv", "after.csv"))


def by_id(table: pd.DataFrame) -> pd.DataFrame:
    return table.set_index("id")


def test_matched_added_and_removed_rows(table):
    assert list(table.columns) == DIFF_COLUMNS
    # the after ledger's order, then the removed rows
    assert list(table.id) == [r["id"] for r in AFTER] + ["margin.gone"]
    t = by_id(table)
    assert t.loc["margin.certificate", "status"] == ADDED
    assert t.loc["margin.gone", "status"] == REMOVED
    assert t.loc["margin.gone", "verdict_before"] == "does not hold"
    assert t.loc["fa.verdict", "status"] == CHANGED  # the verdict changed, the value did not
    assert (t.loc["fa.verdict", "verdict_before"], t.loc["fa.verdict", "verdict_after"]) == (
        "holds",
        "holds weaker",
    )
    assert t.loc["fa.verdict", "reason_after"] == "straddles"
    assert t.loc["fa.verdict", "value"] == WITHIN
    assert t.loc["price.steady", "status"] == UNCHANGED
    assert t.loc["prelu.off", "status"] == UNCHANGED  # not run in both
    assert t.loc["prelu.off", "value"] == NO_INTERVAL


def test_a_moved_value_and_its_difference_interval_by_hand(table):
    t = by_id(table)
    # 1.0 [0.9, 1.1] -> 2.0 [1.7, 2.3]: 1.0 +- sqrt(0.3^2 + 0.1^2) = 1 +- 0.3162
    moved = t.loc["fa.moved"]
    assert moved.value == MOVED and moved.status == CHANGED
    assert moved.difference == pytest.approx(1.0)
    assert moved.difference_lo == pytest.approx(1.0 - 0.316227766)
    assert moved.difference_hi == pytest.approx(1.0 + 0.316227766)
    # 0.2 [0.1, 0.3] -> 0.25 [0.15, 0.35]: 0.05 +- sqrt(0.1^2 + 0.1^2) = 0.05 +- 0.1414
    steady = t.loc["price.steady"]
    assert steady.value == WITHIN and steady.difference_lo == pytest.approx(0.05 - 0.141421356)
    # censored before (0.5 [0.3, inf]) -> 0.2 [0.1, 0.3]: no lower end, the upper end
    # -0.3 + sqrt(0.1^2 + 0.2^2) = -0.0764 < 0: moved down however high it really was
    cens = t.loc["fa.censored"]
    assert cens.value == MOVED and cens.difference_lo == -INF
    assert cens.difference_hi == pytest.approx(-0.3 + 0.223606798)


def test_a_row_without_an_interval_in_one_ledger(table):
    loss = by_id(table).loc["margin.loss"]
    assert loss.value == NO_INTERVAL and loss.status == UNCHANGED  # holds, and holds
    assert loss.difference == pytest.approx(200.0)
    assert math.isnan(loss.difference_lo) and math.isnan(loss.difference_hi)


def test_difference_is_trends_rule_with_asymmetric_halves():
    before = dict(ours_mean=1.0, ci_lo=0.8, ci_hi=1.1)  # halves 0.2 below, 0.1 above
    after = dict(ours_mean=1.5, ci_lo=1.2, ci_hi=1.9)  # 0.3 below, 0.4 above
    d, lo, hi = difference(before, after)
    assert d == pytest.approx(0.5)
    assert lo == pytest.approx(0.5 - math.hypot(0.3, 0.1))  # after's low, before's high half
    assert hi == pytest.approx(0.5 + math.hypot(0.4, 0.2))


def test_a_ledger_from_before_intervals_reads_and_has_no_intervals(tmp_path):
    old = pd.DataFrame(BEFORE)[["study", "id", "setting", "ours_mean", "verdict", "reason"]]
    old.to_csv(tmp_path / "old.csv", index=False)
    t = diff_ledgers(read_ledger(tmp_path / "old.csv"), written(tmp_path, AFTER, "after.csv"))
    matched = t[t.status.isin([CHANGED, UNCHANGED])]
    assert len(matched) == 6 and (matched.value == NO_INTERVAL).all()
    assert by_id(t).loc["fa.verdict", "status"] == CHANGED


def test_a_key_twice_names_the_ledger(tmp_path):
    twice = written(tmp_path, [*AFTER, AFTER[0]], "twice.csv")
    with pytest.raises(SummaryError, match=r"twice.csv: the key .*'fa.verdict'.* on two rows"):
        diff_ledgers(written(tmp_path, BEFORE, "before.csv"), twice, ("before.csv", "twice.csv"))


def test_markdown_counts_then_tables(table):
    md = diff_markdown(table, ("before.csv", "after.csv"))
    first = md.splitlines()[0]
    assert first == (
        "Before: `before.csv` (7 claims); after: `after.csv` (7 claims). 6 in both: 2 changed "
        "verdict, 0 changed rule; values 2 moved beyond their intervals, 2 within them, 2 without an interval "
        "in one ledger or both. 1 added, 1 removed."
    )
    sections = [ln for ln in md.splitlines() if ln.startswith("**")]
    assert sections == [
        "**Rule changes** (0)",
        "**Verdict changes** (2)",
        "**Values that moved beyond their intervals** (2)",
        "**Added** (1)",
        "**Removed** (1)",
    ]
    assert (
        "| fa | `fa.verdict` | d1000 | holds | holds weaker | 1 [0.9, 1.1] (3 seeds) | "
        "0.95 [0.8, 1.1] (3 seeds) |  | straddles |"
    ) in md
    assert (
        "| fa | `fa.moved` | d1000 | holds | 1 [0.9, 1.1] (3 seeds) | 2 [1.7, 2.3] (3 seeds) | "
        "+1 [0.6838, 1.316] |" in md
    )
    assert (
        "| fa | `fa.censored` | d1000 | inconclusive -> does not hold | 0.5 [0.3, inf] (3 seeds) |"
        in md
    )
    assert (
        "| margin | `margin.certificate` | pairs | holds | 1 [0.99, 1] (3 seeds x 500 points) |"
        in md
    )
    assert "| margin | `margin.gone` | sample | does not hold | 0.5 [0.4, 0.6] (3 seeds) |" in md
    assert "price.steady" not in md and "Unchanged" not in md
    every = diff_markdown(table, show_unchanged=True)
    assert "**Unchanged** (3)" in every
    assert (
        "| price | `price.steady` | n=8 | holds | 0.2 [0.1, 0.3] (3 seeds) | 0.25 [0.15, 0.35] (3 seeds) |"
        in every
    )
    assert "| prelu | `prelu.off` | mnist | not run | - | - | - |" in every


def test_markdown_of_identical_ledgers(tmp_path):
    same = written(tmp_path, AFTER, "a.csv")
    md = diff_markdown(diff_ledgers(same, same))
    assert "7 in both: 0 changed verdict, 0 changed rule; values 0 moved" in md
    assert md.count("(none)") == 5


def test_csv_lists_the_changes_and_reads_back(table):
    back = pd.read_csv(io.StringIO(diff_csv(table)), keep_default_na=False)
    assert list(back.columns) == DIFF_COLUMNS
    assert sorted(back.status) == sorted([CHANGED] * 3 + [ADDED, REMOVED])
    moved = back[back.id == "fa.moved"].iloc[0]
    assert float(moved.difference_lo) == pytest.approx(1.0 - 0.316227766)
    assert back[back.id == "fa.censored"].iloc[0].difference_lo == "-inf"
    every = pd.read_csv(io.StringIO(diff_csv(table, show_unchanged=True)))
    assert len(every) == len(table) == 8


def test_a_changed_rule_is_reported_as_such(tmp_path):
    """fa.kclass_over_binary's strong bound 1.5 -> 1.0 with the same value and verdict
    change (holds weaker -> holds): the diff says the rule changed, not only the verdict; a
    form and a measure that changed too; a ledger without the rule columns says nothing."""

    def ruled(verdict, strong_lo, form="bound", measure="ratio"):
        r = row("fa", "fa.kclass_over_binary", "sum", 1.284, 1.2, 1.37, verdict=verdict)
        return r | dict(strong_lo=strong_lo, strong_hi=INF, weak_lo=1.0, weak_hi=INF,
                        form=form, measure=measure)  # fmt: skip

    before = written(tmp_path, [ruled("holds weaker", 1.5)], "b.csv")
    after = written(tmp_path, [ruled("holds", 1.0, form="direction", measure="ratio, per seed")],
                    "a.csv")  # fmt: skip
    t = diff_ledgers(before, after)
    got = t.iloc[0]
    assert got.status == CHANGED
    assert got.rule == "strong [1.5, inf] -> [1, inf]; form bound -> direction; measure changed"
    md = diff_markdown(t, ("b.csv", "a.csv"))
    assert "1 changed verdict, 1 changed rule" in md and "**Rule changes** (1)" in md
    assert "| fa | `fa.kclass_over_binary` | sum | strong [1.5, inf] -> [1, inf];" in md
    # the same value and verdict under a new rule is still a change
    same = written(tmp_path, [ruled("holds", 1.0, form="direction")], "s.csv")
    assert diff_ledgers(same, after).iloc[0].status == CHANGED
    old = written(tmp_path, [row("fa", "fa.kclass_over_binary", "sum", 1.284, 1.2, 1.37)],
                  "old.csv", drop=["strong_lo", "strong_hi", "weak_lo", "weak_hi", "form",
                                   "measure"])  # fmt: skip
    assert diff_ledgers(old, after).iloc[0].rule == ""


def test_a_value_that_is_not_a_number_names_file_row_and_column(tmp_path):
    path = tmp_path / "bad.csv"
    rows = [row("fa", "fa.a", "d", 1.0, 0.9, 1.1), row("fa", "fa.b", "d", 1.0, 0.9, 1.1)]
    df = pd.DataFrame(rows, columns=COLUMNS)
    df["ci_lo"] = df["ci_lo"].astype(object)
    df.loc[1, "ci_lo"] = "0.9x"
    df.to_csv(path, index=False)
    with pytest.raises(SummaryError, match=r"bad\.csv: row 3 \(claim fa\.b\), column 'ci_lo': "
                       r"'0\.9x' is not a number"):  # fmt: skip
        read_ledger(path)
    broken = tmp_path / "broken.csv"
    broken.write_text('study,id,setting,verdict\nfa,"fa.a,d,holds\n')
    with pytest.raises(SummaryError, match=r"broken\.csv: not a readable CSV"):
        read_ledger(broken)
