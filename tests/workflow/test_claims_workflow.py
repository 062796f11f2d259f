"""The claims ledger on the tiny run: the default target builds it (tables, HTML and figure)
from Study FA's outputs, every verdict on an interval, and it reruns alone when a claim
declaration changes."""

from __future__ import annotations

from collections import Counter

import pytest
from smk_helpers import base_env, parse_dry_run, snakemake

from ibrobust.ledger.render import read_ledger
from ibrobust.ledger.table import RULE_BOUNDS

pytestmark = pytest.mark.workflow


def test_ledger_builds_from_the_summaries_and_reruns_alone_on_a_claim_edit(state_copy, repo_copy):
    """The default target of the tiny run built the ledger (rule all asks for it)."""
    env = base_env(PYTHONPATH=str(repo_copy.parent / "src"))
    snakefile = repo_copy

    ledger = read_ledger(state_copy / "results" / "claims" / "claims.csv")
    fa = ledger[ledger.study == "fa"].set_index("id")
    # the tiny study has every FA output the ledger reads, the margin-gradient view included
    # tiny.yaml's k = 4: the radius and gradient claims' derivations hold only from k = 7-10
    # (their weak region would not contain the strong one): not applicable, with the reason
    scoped = ["fa.binary_radius", "fa.universal_radius", "fa.reference_radius"]
    scoped += ["fa.gradient_per_margin"]
    assert (fa.loc[scoped, "verdict"] == "not applicable").all()
    assert fa.loc[scoped, "reason"].str.contains("at k = 4").all()
    ran = fa[~fa.verdict.isin(["not run", "not applicable"])]
    assert {"fa.kclass_over_binary", "fa.scaling_slope", "fa.scaling_slope_d"} <= set(ran.index)
    assert (ran.n > 0).all() and ran.ours_mean.notna().all()
    # every verdict stands on an interval: its ends around our mean and how it was computed,
    # or, for a single unit, none (inconclusive, saying so); the rule's regions as numbers
    assert {"ci_lo", "ci_hi", "ci_method", "points", *RULE_BOUNDS} <= set(ledger.columns)
    assert set(ran.verdict) <= {"holds", "holds weaker", "inconclusive", "does not hold"}
    has = ran.ci_method != ""
    assert ((ran.ci_lo <= ran.ours_mean + 1e-12) & (ran.ours_mean <= ran.ci_hi + 1e-12))[has].all()
    single = ran[~has]
    assert (single.verdict == "inconclusive").all() and single.reason.str.contains(
        "no interval"
    ).all()
    assert (ran.weak_lo <= ran.strong_lo).all() and (ran.strong_hi <= ran.weak_hi).all()
    # tiny.yaml: 2 seeds, 40 attacked points each
    radius = fa.loc["fa.kclass_over_binary"].iloc[0]  # k-class over 2-class radius, per seed
    assert (radius.n, radius.unit, radius.points) == (2, "seeds", 40)
    # the t interval widened by the radii's read-off brackets (the k-class grid cell, the
    # 2-class radius bisected by fa_refine), named in the method
    assert radius.ci_method.startswith("t over seeds")
    assert "read-off" in radius.ci_method and "bisection" in radius.ci_method
    out = state_copy / "results" / "claims"
    assert (out / "claims.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "claims.pdf").read_bytes()[:5] == b"%PDF-"
    assert "[" in (out / "claims.html").read_text()  # intervals in the HTML page
    # one k-class row per readout of the study
    assert set(fa.loc["fa.kclass_over_binary", "setting"].str.rsplit(" ", n=1).str[-1]) == {
        "sum",
        "argmax",
        "log_odds",
    }
    others = ledger[ledger.study != "fa"]
    assert (others.verdict == "not run").all()
    # tiny.yaml sets only_studies: [fa]; the reason says so (not "disabled")
    assert set(others.reason) == {"not in only_studies ['fa'] (this invocation builds only those)"}
    assert (
        (state_copy / "results" / "claims" / "claims.md").read_text().startswith("# Claims ledger")
    )

    def plan():
        return parse_dry_run(snakemake(state_copy, "-n", "claims", snakefile=snakefile, env=env))

    assert plan().nothing_to_do
    path = repo_copy.parent / "src" / "ibrobust" / "studies" / "prelu" / "claims.py"
    path.write_text(path.read_text() + "\n# edited by tests/workflow\n")
    after = plan()
    assert after.stats == Counter(claims=1)
    assert after.of("claims")[0].reason.startswith("Params have changed")
