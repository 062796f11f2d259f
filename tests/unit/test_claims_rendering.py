"""The ledger's renderings: markdown, CSV, HTML and the README excerpt carry each claim's
interval, its units and the verdict's reason; the CSV reads back as written (censored rows'
infinite upper ends included); the figure draws one row per claim that ran; and the
interval level of the config reaches every verdict."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from claims_fixtures import (
    T_95_2,
    T_975_2,
    default_config,
    fa_scaling,
    fa_summary,
    ledger,
    t_ends,
    write,
)
from matplotlib.text import Annotation

from ibrobust import cli
from ibrobust.claims.core import HOLDS, INCONCLUSIVE, NOT_RUN, VERDICTS, StudyContext, SummaryError
from ibrobust.ledger.render import (
    full_table_name,
    ledger_html,
    ledger_markdown,
    read_ledger,
    readme_excerpt,
)
from ibrobust.ledger.table import COLUMNS, StudyOutputs, build_ledger, ledger_inputs, study_outputs
from ibrobust.plotting.claims import claims_figure, row_limits, save_claims_figure

FA = ("fa", "figures/summary.csv")
FA_SCALING = ("fa", "figures/critical_radius_scaling.csv")
# k-class radii (9, 13, 11) over 2-class radii 10: ratios 1.1 +- 0.497, inconclusive; the
# reference net off the grid on seed 0 only: censored, inconclusive; slopes -0.4 and -0.6
MIXED = dict(
    binary=(10.0, 10.0, 10.0), multiclass=(9.0, 13.0, 11.0), reference=(math.nan, 2.0, 2.0)
)


def mixed_ledger(tmp_path: Path) -> pd.DataFrame:
    """The default config's ledger, in declaration order, on an FA study with inconclusive,
    censored and holding rows, every other study not run."""
    write(tmp_path, *FA, fa_summary(**MIXED))
    write(tmp_path, *FA_SCALING, fa_scaling(slope=(-0.45, -0.55)))  # -0.5 +- 0.116
    return build_ledger(study_outputs(default_config(), tmp_path))


def row_of(df: pd.DataFrame, id_: str) -> pd.Series:
    return df[df.id == id_].iloc[0]


def test_markdown_carries_interval_units_and_reason(tmp_path):
    table = mixed_ledger(tmp_path)
    assert list(table.columns) == COLUMNS
    md = ledger_markdown(table)
    assert md.count("\n| `") == len(table)  # one table row per claim
    counts = table.verdict.value_counts()
    assert f"{len(table)} claims: " + ", ".join(f"{counts.get(v, 0)} {v}" for v in VERDICTS) in md
    assert counts[INCONCLUSIVE] == 3 + 1 and counts[HOLDS] >= 1 and counts[NOT_RUN] >= 1
    assert "Ours = mean [95 % interval] (the units it stands on)" in md
    # mean [interval] (units) | verdict: reason
    kclass = (
        "| 1.100 [0.603, 1.597] (3 seeds x 1000 points) | **inconclusive**: interval "
        "[0.603, 1.6] straddles the weak threshold 1; about 18 seeds would decide (now 3, "
        "from the measured spread) |"
    )
    assert md.count(kclass) == 3  # one row per readout
    # censored: a lower bound with no upper end
    assert "| >= 0.379 [-0.981, inf] (3 seeds x 1000 points) | **inconclusive**: interval " in md
    # the pooled slope's units are the (k, seed) pairs, not seeds (half-width t(5) 0.05 / sqrt 5)
    assert "| -0.500 [-0.557, -0.443] (8 (k, seed) pairs) | **holds** |" in md
    assert "not run: study disabled (enabled: false)" in md
    assert "holds: the 95 % interval of ratio >= 1.5; holds weaker: >= 1" in md
    # how each interval is computed, per claim
    assert "Interval: t over seeds, censored above." in md
    assert "Interval: t of the pooled OLS slope, an intercept per group." in md
    assert md.count("- `fa.kclass_over_binary`: ") == 1


def test_markdown_escapes_pipes_and_line_breaks(tmp_path):
    table = mixed_ledger(tmp_path)
    table.loc[0, "reason"] = "a | b\nc"
    table.loc[0, "verdict"] = INCONCLUSIVE
    md = ledger_markdown(table)
    assert "a \\| b c" in md and md.count("\n| `") == len(table)


def test_html_carries_the_same_cells(tmp_path):
    table = mixed_ledger(tmp_path)
    html = ledger_html(table)
    assert html.count("<tr") == len(table) + 1 and "study disabled" in html
    assert "1.100 [0.603, 1.597] (3 seeds x 1000 points)" in html
    assert "inconclusive: interval [0.603, 1.6] straddles the weak threshold 1" in html
    assert "&gt;= 0.379 [-0.981, inf]" in html and "**" not in html
    assert "Ours = mean [95 % interval] (units)" in html


def test_csv_round_trips_through_read_ledger(tmp_path):
    table = mixed_ledger(tmp_path)
    table.to_csv(tmp_path / "claims.csv", index=False)
    text = (tmp_path / "claims.csv").read_text()
    assert ",inf," in text  # the censored row's upper end, and the at-least rules' tops
    back = read_ledger(tmp_path / "claims.csv")
    pd.testing.assert_frame_equal(back, table, check_dtype=False)
    ref = row_of(back, "fa.reference_radius")
    assert ref.ci_hi == math.inf and ref.lower_bound and ref.strong_hi == math.inf
    not_run = back[back.verdict == NOT_RUN]
    assert not_run.ci_lo.isna().all() and (not_run.ci_method == "").all()
    assert (not_run.n == 0).all() and (not_run.points == 0).all()


def test_an_older_ledger_reads_with_its_missing_columns_empty(tmp_path):
    """376045f's ledger had no citations or fragility, 27a2974's no intervals either: the
    columns a ledger lacks read as empty; the key columns and the verdict it must have."""
    table = pd.DataFrame(
        [dict.fromkeys(COLUMNS, "") | dict(study="fa", id="fa.x", setting="s", verdict=HOLDS,
                                           ours_mean=1.0, ci_lo=0.5, ci_hi=1.5, level=0.95)]
    )  # fmt: skip
    table.drop(columns=["ci_lo", "source", "fragile"]).to_csv(tmp_path / "old.csv", index=False)
    old = read_ledger(tmp_path / "old.csv")
    assert list(old.columns) == COLUMNS and old.ci_lo.isna().all() and old.ci_hi[0] == 1.5
    assert (old.source == "").all() and (old.fragile == "").all() and not old.lower_bound[0]
    table.drop(columns="verdict").to_csv(tmp_path / "old.csv", index=False)
    with pytest.raises(SummaryError, match=r"old.csv: not a ledger, missing columns \['verdict'"):
        read_ledger(tmp_path / "old.csv")


def test_readme_excerpt_from_the_csv(tmp_path):
    table = mixed_ledger(tmp_path)
    table.to_csv(tmp_path / "claims.csv", index=False)
    back = read_ledger(tmp_path / "claims.csv")
    excerpt = readme_excerpt(back, max_rows=5)
    lines = excerpt.splitlines()
    assert lines[0] == "| claim | setting | paper | ours | verdict |"
    rows = [x for x in lines if x.startswith("| `")]
    assert len(rows) == 5 and not any("not run" in r for r in rows)  # ran claims first
    assert rows[0].startswith("| `fa.binary_radius` |")
    assert "| 1.000 [1.000, 1.000] (3 seeds x 1000 points) | holds |" in rows[0]
    longer = readme_excerpt(back, max_rows=20)
    assert "| 1.100 [0.603, 1.597] (3 seeds x 1000 points) | inconclusive |" in longer
    assert f"({len(table)} claims in all" in excerpt
    assert "full table in `results/claims/claims.md`" in excerpt
    assert "`results/claims/all/claims.md`" in readme_excerpt(
        back, full="results/claims/all/claims.md"
    )
    # only not-run claims: the excerpt lists them
    off = read_ledger_of(tmp_path / "off", default_config(fa=False))
    assert "| not run |" in readme_excerpt(off, max_rows=2)


def read_ledger_of(tmp_path: Path, cfg: dict) -> pd.DataFrame:
    tmp_path.mkdir(parents=True, exist_ok=True)
    build_ledger(study_outputs(cfg, tmp_path)).to_csv(tmp_path / "claims.csv", index=False)
    return read_ledger(tmp_path / "claims.csv")


def test_readme_excerpt_command_splices_between_the_markers(tmp_path, capsys):
    mixed_ledger(tmp_path).to_csv(tmp_path / "claims.csv", index=False)
    readme = tmp_path / "README.md"
    readme.write_text(
        "# t\n<!-- claims-excerpt:start -->\nOLD TEXT\n<!-- claims-excerpt:end -->\nrest\n"
    )
    args = ["claims", "excerpt", str(tmp_path / "claims.csv"), "--rows", "3"]
    assert cli.main([*args, "--readme", str(readme)]) == 0
    text = readme.read_text()
    assert "OLD TEXT" not in text and text.endswith("<!-- claims-excerpt:end -->\nrest\n")
    assert text.count("\n| `") == 3 and "[1.000, 1.000] (3 seeds x 1000 points)" in text
    assert f"full table in `{(tmp_path / 'claims.md').as_posix()}`" in text  # the csv's .md
    capsys.readouterr()
    assert cli.main(args) == 0  # without --readme: printed
    assert capsys.readouterr().out in text
    readme.write_text("no markers\n")
    assert cli.main([*args, "--readme", str(readme)]) == 1
    assert "README.md: needs the lines <!-- claims-excerpt:start -->" in capsys.readouterr().err
    assert readme.read_text() == "no markers\n"


def test_the_excerpt_names_the_full_table_from_results_on():
    assert full_table_name("/x/results/claims/all/claims.csv") == "results/claims/all/claims.md"
    assert full_table_name("docs/ledger/current.csv") == "docs/ledger/current.md"


# ---- the figure --------------------------------------------------------------------------------
def test_figure_draws_one_row_per_claim_that_ran(tmp_path):
    table = mixed_ledger(tmp_path)
    # one seed: an inconclusive row with no interval at all
    single = fa_summary(binary=(10.0,), multiclass=(20.0,), reference=(math.nan,),
                        fa_binary=(0.9,), fa_multi=(0.1,), cosine_binary=(0.44,))  # fmt: skip
    one_seed = ledger(tmp_path / "one", default_config(), {FA: single}).reset_index()
    one_seed = one_seed[one_seed.id == "fa.averaging_index"]
    assert one_seed.verdict.tolist() == [INCONCLUSIVE] and one_seed.ci_lo.isna().all()
    table = pd.concat([table, one_seed], ignore_index=True)
    ran = table[table.verdict != NOT_RUN].reset_index(drop=True)
    fig = claims_figure(table)
    assert len(fig.axes) == len(ran)
    assert fig._suptitle.get_text() == (
        f"Claims ledger: {len(ran)} claims ran, {len(table) - len(ran)} not run"
    )

    def texts(ax):  # the row's label and its verdict (an arrow is an annotation)
        return [t.get_text() for t in ax.texts if not isinstance(t, Annotation)]

    assert [texts(ax)[0] for ax in fig.axes] == [f"{r.id}\n{r.setting}" for _, r in ran.iterrows()]
    by_id = {}
    for ax, (_, r) in zip(fig.axes, ran.iterrows(), strict=True):
        by_id.setdefault(r.id, (ax, r))
        assert texts(ax)[1].startswith(f"{r.verdict} (n=")
    ax, r = by_id["fa.reference_radius"]  # censored: a bar and an arrow to the axis' end
    assert any(isinstance(t, Annotation) for t in ax.texts) and len(ax.lines) == 2
    assert texts(ax)[1] == "inconclusive (n=3 seeds x 1000 pts)"
    ax = fig.axes[-1]  # the one-seed row, last: no interval, the mean alone
    assert texts(ax)[0].startswith("fa.averaging_index\n")
    assert len(ax.lines) == 1 and texts(ax)[1] == "inconclusive (n=1 seeds)"
    ax, r = by_id["fa.binary_radius"]  # an interval: its bar and the mean
    assert len(ax.lines) == 2 and not any(isinstance(t, Annotation) for t in ax.texts)
    ax, r = by_id["fa.span_residual"]  # 1e-5 against 1e-3 and 1e-2: three decades
    assert ax.get_xscale() == "log"
    assert by_id["fa.kclass_over_binary"][0].get_xscale() == "linear"
    png, pdf = tmp_path / "claims.png", tmp_path / "claims.pdf"
    save_claims_figure(table, str(png), str(pdf))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and pdf.read_bytes()[:5] == b"%PDF-"


def test_figure_of_the_csv_and_of_a_ledger_where_nothing_ran(tmp_path):
    mixed_ledger(tmp_path).to_csv(tmp_path / "claims.csv", index=False)
    back = read_ledger(tmp_path / "claims.csv")
    assert len(claims_figure(back).axes) == (back.verdict != NOT_RUN).sum()
    off = read_ledger_of(tmp_path / "off", default_config(fa=False))
    fig = claims_figure(off)
    assert len(fig.axes) == 1 and not fig.axes[0].axison
    assert fig._suptitle.get_text() == f"Claims ledger: 0 claims ran, {len(off)} not run"
    save_claims_figure(off, str(tmp_path / "off.png"), str(tmp_path / "off.pdf"))
    assert (tmp_path / "off.png").stat().st_size > 0


def test_row_limits_pad_the_interval_and_thresholds():
    row = pd.Series(dict(ci_lo=1.0, ci_hi=2.0, ours_mean=1.5, strong_lo=1.5,
                         strong_hi=math.inf, weak_lo=1.0, weak_hi=math.inf))  # fmt: skip
    assert row_limits(row) == pytest.approx((0.88, 2.12, False))
    logrow = row.copy()
    logrow[:] = [1e-5, 1e-5, 1e-5, -math.inf, 1e-3, -math.inf, 1e-2]
    assert row_limits(logrow) == pytest.approx((1e-5 / 3, 3e-2, True))
    censored = row.copy()  # no upper end: the limits come from the finite values
    censored[["ci_hi"]] = math.inf
    assert row_limits(censored) == pytest.approx((0.94, 1.56, False))


# ---- the interval level ----------------------------------------------------------------------
def test_the_level_reaches_intervals_rules_and_header(tmp_path):
    df = ledger(tmp_path, default_config(), {FA: fa_summary(**MIXED)}, level=0.9).reset_index()
    row = row_of(df, "fa.kclass_over_binary")
    assert (row.ci_lo, row.ci_hi) == pytest.approx(t_ends((0.9, 1.3, 1.1), T_95_2))
    assert row.verdict == INCONCLUSIVE  # [0.763, 1.437] still straddles 1
    assert row.rule.startswith("holds: the 90 % interval of ratio >= 1.5")
    assert "Ours = mean [90 % interval]" in ledger_markdown(df)
    wide = ledger(tmp_path, default_config(), {FA: fa_summary(**MIXED)}).reset_index()
    w = row_of(wide, "fa.kclass_over_binary")
    assert (w.ci_lo, w.ci_hi) == pytest.approx(t_ends((0.9, 1.3, 1.1), T_975_2))
    assert w.ci_hi - w.ci_lo > row.ci_hi - row.ci_lo


def test_every_rule_text_names_the_ledgers_level(tmp_path):
    df = ledger(tmp_path, default_config(), {FA: fa_summary(**MIXED)}, level=0.9)
    assert df.rule.str.contains("the 90 % interval").all(), df[~df.rule.str.contains("90 %")]


def test_claims_with_their_own_interval_follow_the_level(tmp_path):
    files = {FA: fa_summary(), FA_SCALING: fa_scaling(slope=(-0.4, -0.6))}
    df = ledger(tmp_path, default_config(), files, level=0.9).reset_index()
    row = row_of(df, "fa.scaling_slope")
    # an intercept per seed: residuals +-0.1 (log k - its mean), 8 - 2 - 1 = 5 df, standard
    # error sqrt(0.02 Sxx / 5 / (2 Sxx)); t(0.95, 5 df) = 2.015048
    half = 2.015048372669157 * math.sqrt(0.002)
    assert (row.ci_lo, row.ci_hi) == pytest.approx((-0.5 - half, -0.5 + half))


# ---- inputs ------------------------------------------------------------------------------------
def test_a_study_context_without_claims_kind_is_skipped():
    ctx = StudyContext("other", {"datasets": []})
    assert build_ledger([StudyOutputs("attack_audit", ctx, True, {})]).empty


def test_ledger_inputs_are_the_built_sources_of_kinds_with_claims():
    studies = {
        "fa": "feature_averaging",
        "imgs": "feature_averaging_images",
        "price": "price_linear",
        "margin": "margin",
        "other": "attack_audit",
    }
    built = [
        "results/fa/figures/summary.csv",
        "results/fa/figures/robust_accuracy_vs_radius.csv",  # not a source of FA
        "results/imgs/figures/robust_accuracy_vs_radius.csv",
        "results/imgs/figures/summary.csv",
        "results/price/figures/gap_vs_n.csv",
        "results/price/figures/summary.csv",
        "results/margin/figures/points.csv",
        "results/margin/figures/attack_audit.csv",  # not a source
        "results/other/figures/summary.csv",
    ]
    assert ledger_inputs(studies, built) == [
        "results/fa/figures/summary.csv",
        "results/imgs/figures/summary.csv",
        "results/imgs/figures/robust_accuracy_vs_radius.csv",
        "results/price/figures/summary.csv",
        "results/price/figures/gap_vs_n.csv",
        "results/margin/figures/points.csv",
    ]


def test_written_sources_are_what_the_ledger_reads(tmp_path):
    """The helper writes where study_paths says each source lives."""
    path = write(tmp_path, *FA, fa_summary())
    (so,) = [s for s in study_outputs(default_config(), tmp_path) if s.ctx.name == "fa"]
    assert so.paths["summary"] == path and so.provides("summary")
    assert not so.provides("scaling")
