"""The pre-registration record (docs/ledger/preregistration.csv) is what
``ibrobust claims prereg`` computes from git (:mod:`ibrobust.ledger.prereg`): the committed
ledgers' rule columns against the claims the working tree declares. It fails when the
record drifts (regenerate it with ``ibrobust claims prereg``); skipped without git history."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from ibrobust.cli import checkout_config
from ibrobust.ledger.prereg import RECORD, _seen, preregistration, revised_notes
from ibrobust.ledger.render import verdict_cell

REPO = Path(__file__).resolve().parents[2]


def _history() -> bool:
    if shutil.which("git") is None:
        return False
    try:
        out = subprocess.run(["git", "log", "--format=%h", "--", "docs/ledger"], cwd=REPO,
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
    except subprocess.CalledProcessError:
        return False
    return bool(out.split())


needs_git = pytest.mark.skipif(
    not _history(), reason="no git history of docs/ledger in this checkout: the record is "
    "computed from it"
)  # fmt: skip


@needs_git
def test_the_committed_record_is_what_git_gives():
    got = preregistration(checkout_config(REPO), REPO)
    assert (REPO / RECORD).read_text() == got.to_csv(index=False), (
        f"{RECORD} drifted from git: run `ibrobust claims prereg` and commit it"
    )


@needs_git
def test_the_known_revisions_are_flagged_with_their_commits():
    df = pd.read_csv(REPO / RECORD, keep_default_na=False).set_index("id")
    radius = df.loc["prelu.relu_radius"]
    assert radius.revised_after_result == "yes"
    assert radius.previous_rule == "strong [0.7, 1.3], weak [0.5, 1.6]"
    assert radius.known_then.startswith("holds 1.103 (prelu) in docs/ledger/current.csv")
    for split in ("train", "test"):
        assert df.loc[f"margin.robust_rises_{split}"].revised_after_result == "yes"
    # a rule changed now, after docs/ledger/current.csv held its number, is flagged too
    assert df.loc["price.no_edge_regime"].revised_after_result == "yes"
    assert df.loc["price.no_edge_regime"].measure_changed == "the measure changed"
    assert set(df.form) <= {"existential", "universal", "asymptotic", "bound", "equivalence",
                            "direction"}  # fmt: skip


def test_a_ledger_snapshot_reads_its_rules_and_numbers():
    text = (
        "study,id,setting,verdict,ours_mean,strong_lo,strong_hi,weak_lo,weak_hi,measure\n"
        "s,x.a,one,holds,1.103,0.7,1.3,0.5,1.6,ratio\n"
        "s,x.a,two,not run,,0.7,1.3,0.5,1.6,ratio\n"
        "s,x.b,one,not run,,0,inf,0,inf,edge\n"
    )
    seen = _seen("abc1234", "docs/ledger/current.csv", text)
    assert seen.default and seen.rules["x.a"] == frozenset({(0.7, 1.3, 0.5, 1.6, "ratio")})
    assert seen.numbers == {"x.a": "holds 1.103 (s)"}  # a not-run row holds no number
    assert not _seen("abc1234", "docs/ledger/scale/claims.csv", text).default


def test_the_ledger_marks_a_revised_row(tmp_path):
    record = tmp_path / "preregistration.csv"
    record.write_text(
        "id,form,rule,rule_changed_after,previous_rule,changed_in,measure_changed,known_then,"
        "revised_after_result\n"
        'x.a,bound,"strong [0.9, 1.1], weak [0, 2]",docs/ledger/current.csv at abc1234,'
        '"strong [0.7, 1.3], weak [0.5, 1.6]",def5678,,holds 1.103 (s) in docs/ledger/'
        "current.csv at abc1234,yes\n"
        'x.b,direction,"strong [0, inf], weak [0, inf]",,,,,,no\n'
    )
    notes = revised_notes(record)
    assert set(notes) == {"x.a"}
    assert notes["x.a"].startswith("revised after the result: the rule (strong [0.7, 1.3]")
    assert "changed in def5678" in notes["x.a"]
    row = dict(verdict="holds weaker", reason="", fragile="", revised=notes["x.a"])
    assert verdict_cell(row).startswith("**holds weaker** (*revised after the result: ")
    assert revised_notes(tmp_path / "absent.csv") == {}


@needs_git
def test_the_cli_checks_the_record(tmp_path, capsys):
    from ibrobust.cli import main

    assert main(["claims", "prereg", "--check", "--repo", str(REPO)]) == 0


def test_every_claims_rule_history_is_that_of_its_claim_file():
    """A claim's changed_in is the git log of its study package (current_rules' package),
    which holds the claim file the rule is declared in (claims.yaml, or the claims.py of a
    kind not yet converted): editing it is a rule change the record sees."""
    from ibrobust.ledger.prereg import current_rules

    rules, forms, package = current_rules(checkout_config(REPO))
    assert rules and set(package) == set(rules)
    for cid, pkg in package.items():
        pkg_dir = REPO / "src" / pkg
        assert (pkg_dir / "claims.yaml").is_file() or (pkg_dir / "claims.py").is_file(), cid


def test_claims_declared_after_their_number_was_visible_are_revised_after_the_result():
    from ibrobust.ledger.prereg import SEEN_BEFORE_DECLARED

    record = pd.read_csv(REPO / RECORD, keep_default_na=False).set_index("id")
    assert set(SEEN_BEFORE_DECLARED) <= set(record.index)  # every listed id is a claim
    for cid, where in SEEN_BEFORE_DECLARED.items():
        assert record.loc[cid, "revised_after_result"] == "yes", cid
        assert record.loc[cid, "known_then"] == where
        assert "revised after the result" in revised_notes(REPO / RECORD)[cid]


def test_a_rewrite_with_the_number_known_marks_the_claim_revised():
    """A definition rewritten (rule unchanged) after a committed ledger held the claim's
    number: the commit joins changed_in and the row is revised after the result."""
    from ibrobust.ledger import prereg

    commit = next(iter(prereg.REWRITTEN_AFTER_RESULT))
    cid = prereg.REWRITTEN_AFTER_RESULT[commit]["claims"][0]
    held = prereg.Seen("abc1234", "docs/ledger/current.csv", True, {}, {cid: "holds 1 (s)"})
    row = dict.fromkeys(prereg.RECORD_COLUMNS, "") | dict(
        id=cid, rule="strong [0, 1], weak [0, 2]", revised_after_result="no"
    )
    out = prereg._rewritten(row, cid, {c: [held] for c in prereg.REWRITTEN_AFTER_RESULT})
    assert out["revised_after_result"] == "yes" and commit in out["changed_in"].split()
    assert out["known_then"] == "holds 1 (s) in docs/ledger/current.csv at abc1234"
    untouched = prereg._rewritten(row, cid, {c: [] for c in prereg.REWRITTEN_AFTER_RESULT})
    assert untouched["revised_after_result"] == "no"  # no ledger held it before the rewrite
