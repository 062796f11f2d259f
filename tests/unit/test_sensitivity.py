"""Setting sensitivity (ibrobust.ledger.sensitivity) on hand-built configs and ledgers: what a
sibling changes read off the configs, flips by interval and by a one-unit screen, the flag
and its reason, the cost bound, and the flag in the rendered ledger."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

from ibrobust.ledger import recorded
from ibrobust.ledger import sensitivity as sv
from ibrobust.ledger.render import ledger_html, ledger_markdown, read_ledger, verdict_cell
from ibrobust.ledger.table import COLUMNS

CONFIG = {
    "datasets": {"d1": {"kind": "teacher", "d": 8}, "d2": {"kind": "teacher", "d": 16}},
    "models": {},
    "optimizers": {
        "gd": {"kind": "steepest", "norm": "l2", "c_scale": 1.0},
        "cd": {"kind": "steepest", "norm": "l1", "c_scale": 1.0},
        "gd_c4": {"kind": "steepest", "norm": "l2", "c_scale": 4.0},
        "cd_c4": {"kind": "steepest", "norm": "l1", "c_scale": 4.0},
    },
    "attacks": {},
    "studies": {
        "lin": {
            "kind": "price_linear",
            "enabled": True,
            "datasets": ["d1", "d2"],
            "optimizers": ["gd", "cd"],
            "draws": [0, 1, 2, 3],
            "stopping": {"loss_threshold": 1e-4, "max_iters": 5000},
            "gap_difference": ["gd", "cd"],
            "plots": {"dpi": 150},
        },
        # one setting, and a cut (one regime, one draw), plots and enabled differ
        "lin__stop": {
            "kind": "price_linear",
            "enabled": False,
            "datasets": ["d1"],
            "optimizers": ["gd", "cd"],
            "draws": [0],
            "stopping": {"loss_threshold": 1e-3, "max_iters": 20000},
            "gap_difference": ["gd", "cd"],
            "plots": {"dpi": 72},
        },
        # the step size of both algorithms, through new optimizer entries
        "lin__c4": {
            "kind": "price_linear",
            "enabled": False,
            "datasets": ["d1", "d2"],
            "optimizers": ["gd_c4", "cd_c4"],
            "draws": [0, 1, 2, 3],
            "stopping": {"loss_threshold": 1e-4, "max_iters": 5000},
            "gap_difference": ["gd_c4", "cd_c4"],
        },
        # only cuts: not a sweep sibling
        "lin__cut": {
            "kind": "price_linear",
            "datasets": ["d1"],
            "optimizers": ["gd", "cd"],
            "draws": [0, 1, 2, 3],
            "stopping": {"loss_threshold": 1e-4, "max_iters": 5000},
            "gap_difference": ["gd", "cd"],
        },
        "other__x": {"kind": "margin"},
    },
}


def test_a_sibling_s_settings_and_cuts_are_read_off_the_two_configs():
    s = sv.sibling_of(CONFIG, "lin__stop")
    assert s.base == "lin"
    changes = {c.key: (c.base, c.value) for c in s.changes}
    assert changes == {
        "stopping.loss_threshold": (1e-4, 1e-3),
        "stopping.max_iters": (5000, 20000),
    }
    cuts = {c.key: (c.base, c.value) for c in s.cuts}
    assert cuts == {"datasets": (["d1", "d2"], ["d1"]), "draws": ([0, 1, 2, 3], [0])}
    assert s.label() == (
        "stopping.loss_threshold = 0.001 (base 0.0001), stopping.max_iters = 20000 (base 5000)"
    )


def test_a_change_in_entries_is_named_once_with_the_entries_it_is_made_in():
    s = sv.sibling_of(CONFIG, "lin__c4")
    # the two entries' paths, one setting (gap_difference names them too, but only picks
    # the heatmaps' pair: a figure key, never a change)
    assert {c.key for c in s.changes} == {"optimizers[gd_c4].c_scale", "optimizers[cd_c4].c_scale"}
    assert s.label() == "c_scale = 4 (base 1) in gd_c4, cd_c4"
    assert s.cuts == ()


def test_bad_siblings_are_refused_naming_the_study():
    with pytest.raises(ValueError, match=r"studies\.lin__cut: changes no setting"):
        sv.sibling_of(CONFIG, "lin__cut")
    with pytest.raises(ValueError, match=r"studies\.other__x: its base study 'other'"):
        sv.sibling_of(CONFIG, "other__x")
    bad = {**CONFIG, "studies": {**CONFIG["studies"], "lin__k": {"kind": "margin"}}}
    with pytest.raises(ValueError, match=r"lin__k: kind 'margin', its base 'lin'"):
        sv.sibling_of(bad, "lin__k")
    assert sv.base_name("lin") is None and sv.base_name("lin__") is None
    assert sv.base_name("price_linear__stop1em3") == "price_linear"


def sibling_names(overlay: Path) -> list[str]:
    """The sibling studies an overlay declares (<base>__<tag>)."""
    studies = yaml.safe_load(overlay.read_text())["studies"]
    return [s for s in studies if sv.base_name(s) is not None]


# ---- ledgers -------------------------------------------------------------------------------
BOUNDS = dict(strong_lo=-0.01, strong_hi=0.01, weak_lo=-0.03, weak_hi=0.03)


def row(study, cid, verdict, mean, lo=math.nan, hi=math.nan, n=4, setting="s", **kw):
    r = dict.fromkeys(COLUMNS, "")
    r.update(level=0.95, study=study, id=cid, setting=setting, verdict=verdict,
             ours_mean=mean, ci_lo=lo, ci_hi=hi, n=n, unit="draws", points=0,
             lower_bound=False, **BOUNDS)  # fmt: skip
    r.update(kw)
    return r


SIBS = {
    "lin__stop": sv.Sibling(
        "lin__stop", "lin", (sv.Change("stopping.loss_threshold", 1e-4, 1e-3),)
    ),
    "lin__c4": sv.Sibling("lin__c4", "lin", (sv.Change("optimizers[gd_c4].c_scale", 1.0, 4.0),)),
}


def test_flips_by_interval_and_by_screen_and_the_flag_s_reason():
    base = pd.DataFrame(
        [
            # a: does not hold at base; holds weaker at stop 1e-3 (interval) -> flips
            row("lin", "a", "does not hold", 0.05, 0.04, 0.06),
            # b: holds weaker at base, same at both siblings -> not setting-dependent
            row("lin", "b", "holds weaker", 0.02, 0.015, 0.025),
            # c: one sibling inconclusive only -> not assessed
            row("lin", "c", "does not hold", 0.05, 0.04, 0.06),
            # d: no sibling row at all -> not assessed (pending)
            row("lin", "d", "holds", 0.0, -0.005, 0.005),
            row("margin", "e", "holds weaker", 0.02, 0.015, 0.025),
        ]
    )
    sweep = pd.DataFrame(
        [
            row("lin__stop", "a", "holds weaker", 0.02, 0.015, 0.025),
            row("lin__c4", "a", "does not hold", 0.06, 0.05, 0.07),
            row("lin__stop", "b", "holds weaker", 0.025, 0.02, 0.028),
            # a one-draw screen: no interval, the mean 0.02 lies in the weak region as the
            # base's 0.02 does -> same
            row("lin__c4", "b", "inconclusive", 0.02, n=1),
            row("lin__stop", "c", "inconclusive", 0.03, 0.0, 0.06),
            row("lin__c4", "c", "not run", math.nan),
            row("unrelated", "a", "holds", 0.0, -0.001, 0.001),
        ]
    )
    t = sv.sensitivity(base, sweep, SIBS)
    got = {(r.id, r.sibling): (r.compared, r.flips) for r in t.itertuples()}
    assert got == {
        ("a", "lin__stop"): ("interval", True),
        ("a", "lin__c4"): ("interval", False),
        ("b", "lin__stop"): ("interval", False),
        ("b", "lin__c4"): ("screen", False),
        ("c", "lin__stop"): ("interval", ""),
    }  # ("c", "lin__c4") is not run there: no comparison
    out = sv.annotate(base, t, {"lin": "sweep configs/x.yaml not run"}).set_index("id")
    assert out.loc["a", "setting_dependent"] is True
    assert out.loc["a", "setting_dependent_reason"].startswith(
        "flips at stopping.loss_threshold = 0.001 (base 0.0001): holds weaker, 0.02"
    )
    assert (
        "same at c_scale = 4 (base 1) in gd_c4 (does not hold, 0.06 [0.05, 0.07] (n 4))"
        in out.loc["a"].setting_dependent_reason
    )
    assert out.loc["b", "setting_dependent"] is False
    assert "mean 0.02 in holds weaker (1 unit)" in out.loc["b", "setting_dependent_reason"]
    assert out.loc["c", "setting_dependent"] == ""
    assert out.loc["c", "setting_dependent_reason"].startswith("not assessed: undecided at")
    assert out.loc["d", "setting_dependent"] == ""
    assert out.loc["d", "setting_dependent_reason"] == "not assessed: sweep configs/x.yaml not run"
    assert out.loc["e", "setting_dependent_reason"] == ""  # no sweep declared for margin


def test_a_screen_flips_when_the_mean_leaves_the_base_mean_s_region():
    base = pd.DataFrame([row("lin", "a", "holds weaker", 0.02, -0.02, 0.025)])
    sweep = pd.DataFrame([row("lin__c4", "a", "inconclusive", 0.05, n=1)])
    t = sv.sensitivity(base, sweep, SIBS)
    assert list(t["compared"]) == ["screen"] and list(t["region"]) == ["does not hold"]
    assert list(t["flips"]) == [True]
    f, why = sv.flag(t)
    assert f is True and "needs 3 units to confirm" in why
    # the base's mean lies in the weak region whatever its interval says
    assert sv.point_region(base.iloc[0]) == "holds weaker"
    assert sv.point_region({"ours_mean": 0.0, **BOUNDS}) == "holds"
    assert sv.point_region({"ours_mean": math.nan, **BOUNDS}) is None


def test_rows_of_one_claim_are_matched_by_their_order_in_the_study():
    base = pd.DataFrame(
        [
            row("lin", "a", "holds", 0.0, -0.005, 0.005, setting="d=1000"),
            row("lin", "a", "does not hold", 0.05, 0.04, 0.06, setting="d=1000, other"),
        ]
    )
    sweep = pd.DataFrame(
        [
            row("lin__stop", "a", "holds", 0.0, -0.005, 0.005, setting="d=500"),
            row("lin__stop", "a", "holds", 0.0, -0.005, 0.005, setting="d=500, other"),
            # the same setting text wins over the order
            row("lin__c4", "a", "holds", 0.0, -0.005, 0.005, setting="d=1000, other"),
            row("lin__c4", "a", "does not hold", 0.05, 0.04, 0.06, setting="d=1000"),
        ]
    )
    t = sv.sensitivity(base, sweep, SIBS)
    got = {(r.setting, r.sibling): r.flips for r in t.itertuples()}
    assert got == {
        ("d=1000", "lin__stop"): False,
        ("d=1000", "lin__c4"): True,
        ("d=1000, other", "lin__stop"): True,
        ("d=1000, other", "lin__c4"): True,
    }
    out = sv.annotate(base, t)
    assert list(out["setting_dependent"]) == [True, True]


def test_the_table_shows_each_negative_row_its_own_siblings_readings():
    """A weaker row that is not its claim's first row (fa.kclass_over_binary's argmax readout
    after the sum readout) shows the siblings' rows of the same setting, not the first's."""
    base = pd.DataFrame(
        [
            row("lin", "a", "holds", 0.0, -0.005, 0.005, setting="readout sum"),
            row("lin", "a", "holds weaker", 0.02, 0.015, 0.025, setting="readout argmax"),
        ]
    )
    sweep = pd.DataFrame(
        [
            row("lin__stop", "a", "holds", 0.001, -0.004, 0.006, setting="readout sum"),
            row("lin__stop", "a", "holds weaker", 0.022, 0.016, 0.028, setting="readout argmax"),
        ]
    )
    t = sv.sensitivity(base, sweep, SIBS)
    md = sv.sensitivity_markdown(sv.annotate(base, t), t, sv.cost_table({}, {}))
    (line,) = [x for x in md.splitlines() if "readout argmax" in x]
    assert "holds weaker, 0.022 [0.016, 0.028] (n 4)" in line and "| same |" in line
    assert "readout sum" not in md  # a holds row is not listed


def test_the_cost_bound_scales_the_profile_by_the_cut_and_the_raised_cap():
    s = sv.sibling_of(CONFIG, "lin__stop")
    # 1 of 2 regimes x 1 of 4 draws x (20000 / 5000) steps
    assert sv.cost_factor(s) == pytest.approx(0.5 * 0.25 * 4)
    grid = sv.Sibling("x__n", "x", (sv.Change("n_train", [16, 32], [16, 32, 64]),))
    assert sv.cost_factor(grid) == pytest.approx(112 / 48)
    sibs = {"lin__stop": s, "lin__c4": sv.sibling_of(CONFIG, "lin__c4")}
    profile = pd.DataFrame({"study": ["lin", "lin", "fa"], "cpu": [60.0, 40.0, 5.0]})
    costs = sv.cost_table(sibs, sv.profile_cpu_s(profile), ran=["lin__c4"],
                          overlay_of={"lin__stop": "configs/s.yaml"})  # fmt: skip
    assert list(costs["estimated_cpu_s"]) == pytest.approx([50.0, 100.0])
    assert list(costs["ran"]) == [False, True]
    why = sv.pending_reasons(costs)
    assert why == {
        "lin": "sweep configs/s.yaml not run (1 siblings: stopping.loss_threshold = 0.001 "
        "(base 0.0001), stopping.max_iters = 20000 (base 5000); est. <= 50 CPU-s)"
    }


def test_the_flag_shows_next_to_fragile_in_every_rendering(tmp_path):
    base = pd.DataFrame([row("lin", "a", "does not hold", 0.05, 0.04, 0.06, fragile=False)])
    sweep = pd.DataFrame([row("lin__stop", "a", "holds weaker", 0.02, 0.015, 0.025)])
    t = sv.sensitivity(base, sweep, SIBS)
    out = sv.annotate(base, t)
    assert verdict_cell(out.iloc[0]).startswith("**does not hold** (setting-dependent): flips at")
    assert "(setting-dependent)" in ledger_markdown(out)
    html = ledger_html(out)
    assert "<div>setting-dependent</div>" in html and "1 setting-dependent" in html
    out.to_csv(tmp_path / "l.csv", index=False)
    back = read_ledger(tmp_path / "l.csv")
    assert back["setting_dependent"].tolist() == [True]
    md = sv.sensitivity_markdown(out, t, sv.cost_table(SIBS, {"lin": 10.0}, ran=["lin__stop"]))
    assert "| lin | `a` | s | does not hold | **yes** | `lin__stop`: stopping" in md
    assert "**flips**" in md


def test_the_command_flags_the_shipped_ledger_from_a_sweep_ledger(tmp_path):
    """``ibrobust claims sweep`` on the shipped ledger, the PRICE-LIN sweep overlay
    and a hand-made siblings' ledger: one sibling reads price.no_edge_regime as holds."""
    from ibrobust import cli

    root = Path(__file__).resolve().parents[2]
    base = read_ledger(root / "docs" / "ledger" / "current.csv")
    rows = base[(base["study"] == "price_linear") & (base["id"] == "price.no_edge_regime")]
    # the sibling reads the opposite decisive verdict of the shipped row, whatever that is
    other_verdict = "does not hold" if rows["verdict"].iloc[0] == "holds" else "holds"
    flipped = rows.assign(study="price_linear__c4", verdict=other_verdict, ours_mean=0.0,
                          ci_lo=-0.005, ci_hi=0.005)  # fmt: skip
    same = rows.assign(study="price_linear__stop1em3")
    pd.concat([flipped, same]).to_csv(tmp_path / "sweep.csv", index=False)
    status = cli.main(
        ["claims", "sweep", str(root / "docs" / "ledger" / "current.csv"),
         str(tmp_path / "sweep.csv"), "--config", str(root / "config.yaml"),
         "--overlay", str(root / "configs" / "sweep_price_linear.yaml"),
         "--md", str(tmp_path / "s.md"), "--ledger", str(tmp_path / "flagged")]
    )  # fmt: skip
    assert status == 0
    out = read_ledger(tmp_path / "flagged.csv")

    def one(study: str, cid: str) -> pd.Series:
        (i,) = out.index[(out["study"] == study) & (out["id"] == cid)]
        return out.loc[i]

    r = one("price_linear", "price.no_edge_regime")
    assert str(r["setting_dependent"]) == "True"
    assert r["setting_dependent_reason"].startswith(
        f"flips at c_scale = 4 (base 1) in lin_gd_c4, lin_cd_c4: {other_verdict}, 0"
    )
    assert "same at stopping.loss_threshold = 0.001 (base 0.0001)" in r.setting_dependent_reason
    # the sweep's other rows: siblings that did not run make them "not assessed", with the cost
    other = one("price_linear", "price.dense_erm_alike")
    overlay = root / "configs" / "sweep_price_linear.yaml"
    assert other["setting_dependent"] == ""
    assert other["setting_dependent_reason"].startswith(
        "not assessed: no sibling that ran judges it (their cuts: datasets, optimizers); "
        f"sweep {overlay} not run ("
    )
    n_unrun = len(sibling_names(overlay)) - 2  # all but the two in the sweep ledger
    assert f"not run ({n_unrun} siblings: " in other["setting_dependent_reason"]
    md = (tmp_path / "s.md").read_text()
    # the table lists the negative and weaker base rows only (the shipped row's verdict decides)
    listed = rows["verdict"].iloc[0] in ("does not hold", "holds weaker")
    assert ("| price_linear | `price.no_edge_regime` |" in md) == listed
    assert ("**flips**" in md) == listed


def test_recorded_siblings_are_re_judged_by_the_base_ledger_s_rule(tmp_path):
    """A sibling kept as (mean, sd, n): t interval by hand, the verdict of the base row's
    bounds as the base ledger states them now; a changed measure is skipped."""
    base = pd.DataFrame(
        [
            row("lin", "a", "holds weaker", 0.02, 0.015, 0.025, measure="edge"),
            row("lin", "b", "holds", 0.0, -0.005, 0.005, measure="new measure"),
        ]
    )
    rec = pd.DataFrame(
        [
            dict(sibling="lin_old", base="lin", id="a", nth=0, measure="edge", mean=0.0,
                 sd=0.001, n=3, unit="draws", source="docs",
                 changes="stopping.max_iters: 5000 -> 20000; optimizers[gd].lr: 0.5 -> 0.1"),
            dict(sibling="lin_old", base="lin", id="b", nth=0, measure="old measure", mean=0.0,
                 sd=0.001, n=3, unit="draws", source="docs", changes="x: 1 -> 2"),
        ]
    )  # fmt: skip
    rows, sibs, notes = sv.recorded_rows(rec, base)
    # t(0.975, 2) = 4.303: 0 +- 4.303 x 0.001 / sqrt(3) = +-0.00248, inside [-0.01, 0.01]
    assert list(rows["verdict"]) == ["holds"]
    assert rows["ci_hi"].iloc[0] == pytest.approx(4.302653 * 0.001 / math.sqrt(3), rel=1e-5)
    assert sibs["lin_old"].changes == (
        sv.Change("stopping.max_iters", 5000.0, 20000.0),
        sv.Change("optimizers[gd].lr", 0.5, 0.1),
    )
    assert notes == ["lin_old b: the claim's measure changed since it was recorded; not compared"]
    t = sv.sensitivity(base, rows, sibs)
    assert list(t["flips"]) == [True]  # holds weaker at base, holds at the recorded setting
    assert sv.interval_verdict(-0.02, 0.02, BOUNDS) == "holds weaker"
    assert sv.interval_verdict(0.031, 0.05, BOUNDS) == "does not hold"
    assert sv.interval_verdict(0.02, 0.05, BOUNDS) == "inconclusive"
    with pytest.raises(ValueError, match="'key: base -> value'"):
        recorded._change_of("lr 0.5 0.1")
