"""ibrobust.ledger.carry: an output-absent row takes the earlier ledger's measurement and is
decided again under its own (new) rule, only where one stored interval decides it."""

from __future__ import annotations

import pandas as pd

from ibrobust.ledger.carry import carry
from ibrobust.ledger.table import COLUMNS


def row(**kw) -> dict:
    r = dict.fromkeys(COLUMNS, "")
    r.update(study="s", id="x", setting="a", form="bound", rule="r1", measure="m",
             strong_lo=0.9, strong_hi=1.1, weak_lo=0.0, weak_hi=2.0, note="")  # fmt: skip
    r.update(kw)
    return r


ABSENT = dict(verdict="not run", reason="output absent: f.csv", ci_lo="", ci_hi="")
OLD = dict(verdict="holds", reason="", ours_mean=1.0, ci_lo=0.95, ci_hi=1.05, n=3, unit="seeds")


def test_the_same_rule_keeps_the_stored_verdict_and_measurement():
    out, log = carry(pd.DataFrame([row(**ABSENT)]), pd.DataFrame([row(**OLD)]), "L0")
    r = out.iloc[0]
    assert (r.verdict, r.ci_lo, r.ci_hi, r.n) == ("holds", 0.95, 1.05, 3)
    assert "measured in L0" in r.note and "re-decided" not in r.note
    assert log == ["x [a]: carried, holds -> holds"]


def test_a_changed_bound_rule_is_decided_again_from_the_stored_interval():
    # strong band now [1.1, 1.3]: [0.95, 1.05] lies in the weak region [0, 2] only
    new = row(**ABSENT, strong_lo=1.1, strong_hi=1.3)
    out, _ = carry(pd.DataFrame([new]), pd.DataFrame([row(**OLD)]), "L0")
    assert out.iloc[0].verdict == "holds weaker"
    assert "holds before" in out.iloc[0].note
    wholly_outside = row(**ABSENT, weak_lo=1.2, weak_hi=2.0, strong_lo=1.5)
    assert (
        carry(pd.DataFrame([wholly_outside]), pd.DataFrame([row(**OLD)]), "L0")[0].iloc[0].verdict
        == "does not hold"
    )


def test_a_changed_per_cell_form_or_measure_is_not_carried():
    new = row(**ABSENT, strong_lo=0.5, form="existential")
    out, log = carry(pd.DataFrame([new]), pd.DataFrame([row(**OLD)]), "L0")
    assert out.iloc[0].verdict == "not run" and "needs its run" in out.iloc[0].reason
    new = row(**ABSENT, measure="m2")
    out, log = carry(pd.DataFrame([new]), pd.DataFrame([row(**OLD)]), "L0")
    assert out.iloc[0].verdict == "not run" and "measure changed" in out.iloc[0].reason


def test_measured_rows_and_unmatched_rows_are_left_as_they_are():
    measured = row(verdict="inconclusive", reason="straddles", ci_lo=0.5, ci_hi=1.5)
    other = row(**ABSENT, setting="b")  # no earlier row for setting b
    out, log = carry(pd.DataFrame([measured, other]), pd.DataFrame([row(**OLD)]), "L0")
    assert list(out.verdict) == ["inconclusive", "not run"] and log == []


def test_a_row_not_applicable_before_is_so_again_and_listed_where_its_claim_is_judged():
    old = row(verdict="not applicable", reason="the study trains 1 run (judged in t)")
    judged = row(study="t", verdict="holds", ci_lo=0.95, ci_hi=1.05)
    out, log = carry(pd.DataFrame([row(**ABSENT), judged]), pd.DataFrame([old]), "L0")
    assert list(out.study) == ["t"]  # s's duplicate not-applicable row is gone
    assert log == ["x [a]: not applicable, as in L0"]
    alone, _ = carry(pd.DataFrame([row(**ABSENT)]), pd.DataFrame([old]), "L0")
    assert (alone.iloc[0].verdict, alone.iloc[0].reason) == ("not applicable", old["reason"])


def test_a_claim_with_one_row_is_matched_when_only_its_setting_text_changed():
    new = row(**ABSENT, setting="a (3 seeds)")
    out, log = carry(pd.DataFrame([new]), pd.DataFrame([row(**OLD)]), "L0")
    assert out.iloc[0].verdict == "holds" and log == ["x [a (3 seeds)]: carried, holds -> holds"]
    two = [row(**ABSENT, setting="a1"), row(**ABSENT, setting="a2")]  # which one: not guessed
    out, log = carry(pd.DataFrame(two), pd.DataFrame([row(**OLD)]), "L0")
    assert list(out.verdict) == ["not run", "not run"] and log == []


def test_the_setting_dependent_flag_is_kept_only_under_the_same_rule():
    flagged = dict(setting_dependent="True", setting_dependent_reason="flips at lr 0.5")
    old = pd.DataFrame([row(**OLD, **flagged)])
    same = row(verdict="holds", ci_lo=0.95, ci_hi=1.05)
    out, _ = carry(pd.DataFrame([same]), old, "L0")
    assert (out.iloc[0].setting_dependent, out.iloc[0].setting_dependent_reason) == (
        "True", "flips at lr 0.5",
    )  # fmt: skip
    changed = row(verdict="holds", ci_lo=0.95, ci_hi=1.05, strong_lo=1.0)
    assert carry(pd.DataFrame([changed]), old, "L0")[0].iloc[0].setting_dependent == ""


def test_a_rule_text_that_only_names_another_level_is_the_same_rule():
    new = row(**ABSENT, rule="holds: the 96.96 % interval within [0.9, 1.1] ...")
    out, log = carry(pd.DataFrame([new]), pd.DataFrame([row(**OLD, rule="the 95 % ...")]), "L0")
    assert out.iloc[0].verdict == "holds" and "re-decided" not in out.iloc[0].note
