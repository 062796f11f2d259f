"""The ledger's renderings: markdown, CSV, HTML and the README excerpt carry each claim's
interval, its units, the verdict's reason, its fragility, its source and quote, its rule and
the rule's derivation; "not applicable" is counted apart from "not run" and rendered as such;
the CSV reads back as written (censored rows' infinite upper ends and the fragile column
included); the figure draws one row per judged claim (leaving not-applicable and not-run
ones out); and the interval level of the config reaches every verdict. The HTML page is
parsed with the standard library's html.parser."""

from __future__ import annotations

import math
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
from claims_fixtures import (
    T_95_2,
    T_975_2,
    default_config,
    fa_curve,
    fa_scaling,
    fa_summary,
    ledger,
    t_ends,
    write,
)
from matplotlib.text import Annotation

from ibrobust import cli
from ibrobust.claims.core import (
    HOLDS,
    INCONCLUSIVE,
    JUDGED,
    NOT_APPLICABLE,
    NOT_RUN,
    VERDICTS,
    StudyContext,
    SummaryError,
)
from ibrobust.ledger.quotes import quote_html
from ibrobust.ledger.render import (
    HEADERS,
    full_table_name,
    ledger_html,
    ledger_markdown,
    read_ledger,
    readme_excerpt,
)
from ibrobust.ledger.table import COLUMNS, StudyOutputs, build_ledger, ledger_inputs, study_outputs
from ibrobust.plotting.claims import claims_figure, row_limits, save_claims_figure
from ibrobust.plotting.colors import VERDICT_COLORS

FA = ("fa", "figures/summary.csv")
FA_SCALING = ("fa", "figures/critical_radius_scaling.csv")
# k-class radii (9, 13, 11) over 2-class radii 10: ratios 1.1 +- 0.497, inconclusive under
# every readout; the reference net off the grid on seed 0 only: censored, inconclusive; the
# span residual not applicable (config.yaml's clusters_d1000: its k = 10 features and
# n = 1000 noises span R^1000); the margin-gradient claim not run (its file is absent); most
# others hold, some of them fragile
MIXED = dict(
    binary=(10.0, 10.0, 10.0), multiclass=(9.0, 13.0, 11.0), reference=(math.nan, 2.0, 2.0)
)
SPAN_NA = (
    "the features and the training noises (k + n = 1010 vectors in d = 1000 dimensions) span "
    "the whole input space"
)


def mixed_ledger(tmp_path: Path) -> pd.DataFrame:
    """The default config's ledger, in declaration order, on an FA study with inconclusive,
    censored, holding, fragile and not-applicable rows, every other study not run (or, for
    PRICE-LIN's limit claims, not applicable)."""
    write(tmp_path, *FA, fa_summary(**MIXED))
    write(tmp_path, *FA_SCALING, fa_scaling(slope=(-0.48, -0.52)))  # -0.5 +- 0.023
    # the 2-class curves near zero at (9, 9.5, 8.5): fa.binary_radius holds, fragile
    write(tmp_path, "fa", "figures/robust_accuracy_vs_radius.csv", fa_curve())
    return build_ledger(study_outputs(default_config(), tmp_path))


def row_of(df: pd.DataFrame, id_: str) -> pd.Series:
    return df[df.id == id_].iloc[0]


# ---- markdown ------------------------------------------------------------------------------------
def test_markdown_carries_interval_units_reason_and_source(tmp_path):
    table = mixed_ledger(tmp_path)
    assert list(table.columns) == COLUMNS
    md = ledger_markdown(table)
    assert md.count("\n| `") == len(table)  # one table row per claim
    counts = table.verdict.value_counts()
    assert f"{len(table)} claims: " + ", ".join(f"{counts.get(v, 0)} {v}" for v in VERDICTS) in md
    assert counts[INCONCLUSIVE] == 3 + 1 and counts[HOLDS] >= 1 and counts[NOT_RUN] >= 1
    assert "Ours = mean [95 % interval] (the units it stands on)" in md
    assert "| id | setting | claim | source | paper | ours | verdict |" in md
    # mean [interval] (units) | verdict: reason
    kclass = (
        "| 1.100 [0.603, 1.597] (3 seeds x 1000 points) | **inconclusive**: interval "
        "[0.603, 1.6] straddles the weak threshold 1; about 18 seeds would decide (now 3, "
        "from the measured spread) |"
    )
    assert md.count(kclass) == 3  # one row per readout
    # censored: a lower bound with no upper end
    assert "| >= 0.379 [-0.981, inf] (3 seeds x 1000 points) | **inconclusive**: interval " in md
    # the pooled slope's units are the (k, seed) pairs, not seeds (half-width t(5) 0.02 / sqrt 5)
    assert "| -0.500 [-0.523, -0.477] (8 (k, seed) pairs) | **holds** |" in md
    assert "| - | not run: study disabled (enabled: false) |" in md
    # the source cell: document, place and the quote
    src = row_of(table, "fa.universal_radius")
    assert f'| {src.source}: "{src.quote}" |' in md.replace("\\|", "|")
    # a fragile verdict says so and why: the near-zero radius (0.9, 0.95, 0.85) holds on
    # [0.709, 1.058] (grid brackets included) <= 1.241; without seed 0, (0.95, 0.85) = 0.9
    # +- 0.635, widened by 0.05 each side, straddles the weak 1.265
    assert "| **holds** (fragile): without seed 0: inconclusive;" in md


def test_markdown_lists_each_claims_source_rule_and_derivation(tmp_path):
    table = mixed_ledger(tmp_path)
    md = ledger_markdown(table)
    assert "## Each claim's source, rule and measurement" in md
    r = row_of(table, "fa.binary_radius")
    assert f'- `fa.binary_radius` ({r.source}; scope: {r.scope}). Quote: "{r.quote}"' in md
    assert f"  - Rule: {r.rule}." in md and f"  - Derivation: {r.derivation}" in md
    assert "Interval: t over seeds, censored above." in md
    assert "Interval: t of the pooled OLS slope, an intercept per group." in md
    # a claim whose rule differs by setting lists each rule with its settings: the k-class
    # ratio's three readouts (one entry per rule, not the first readout's for all)
    kclass = table[table.id == "fa.kclass_over_binary"]
    assert md.count("- `fa.kclass_over_binary` (") == 3
    for _, k in kclass.iterrows():
        assert f"  - Rule (for {k.setting}): {k.rule}." in md
        assert f"  - Derivation: {k.derivation}" in md
    assert md.count("- `fa.binary_radius` (") == 1  # one rule: one entry, no settings


def test_markdown_escapes_pipes_and_line_breaks(tmp_path):
    table = mixed_ledger(tmp_path)
    table.loc[0, "reason"] = "a | b\nc"
    table.loc[0, "verdict"] = INCONCLUSIVE
    md = ledger_markdown(table)
    assert "a \\| b c" in md and md.count("\n| `") == len(table)


# ---- not applicable ------------------------------------------------------------------------------
def test_not_applicable_is_counted_apart_from_not_run_and_rendered(tmp_path):
    table = mixed_ledger(tmp_path)
    counts = table.verdict.value_counts()
    # FA's span residual; PRICE-LIN's two limit claims (price_linear stops at 1e-4) are
    # listed where they are judged, the (disabled: not run) price_limit, not repeated
    na = table[table.verdict == NOT_APPLICABLE]
    assert set(zip(na.study, na.id, strict=True)) == {("fa", "fa.span_residual")}
    limit = table[table.id.str.startswith("price.limit_is_min_l1")]
    assert set(zip(limit.study, limit.verdict, strict=True)) == {("price_limit", NOT_RUN)}
    assert (
        counts[NOT_APPLICABLE] == 1
        and counts[NOT_RUN] == len(table) - 1 - table.verdict.isin(JUDGED).sum()
    )
    md = ledger_markdown(table)
    assert f"{counts[NOT_APPLICABLE]} not applicable, {counts[NOT_RUN]} not run." in md
    assert f"| - | not applicable: {SPAN_NA}" in md
    html = ledger_html(table)
    assert f"{counts[NOT_APPLICABLE]} not applicable</span>" in html
    assert f"{counts[NOT_RUN]} not run</span>" in html
    page = parse(html)
    span = [r for r in page.rows if r.cells[1].text.startswith("fa.span_residual")]
    assert len(span) == 1 and span[0].verdict_color == VERDICT_COLORS[NOT_APPLICABLE]
    assert span[0].cells[6].text == NOT_APPLICABLE and span[0].cells[7].text.startswith(SPAN_NA)
    assert span[0].cells[5].text == "-"  # no number
    # the figure leaves it out (and says how many it left out)
    ran = table[table.verdict.isin(JUDGED)]
    fig = claims_figure(table)
    assert len(fig.axes) == len(ran)
    assert not any(ax.texts[0].get_text().startswith("fa.span_residual\n") for ax in fig.axes)
    assert fig._suptitle.get_text() == (
        f"Claims ledger: {len(ran)} claims judged, {len(table) - len(ran)} not run or not "
        "applicable"
    )


# ---- CSV and the README excerpt -----------------------------------------------------------------
def test_csv_round_trips_through_read_ledger(tmp_path):
    table = mixed_ledger(tmp_path)
    table.to_csv(tmp_path / "claims.csv", index=False)
    text = (tmp_path / "claims.csv").read_text()
    assert ",inf," in text  # the censored row's upper end, and the at-least rules' tops
    back = read_ledger(tmp_path / "claims.csv")
    pd.testing.assert_frame_equal(back, table, check_dtype=False)
    ref = row_of(back, "fa.reference_radius")
    assert ref.ci_hi == math.inf and ref.lower_bound and ref.strong_hi == math.inf
    assert set(back.fragile.map(repr)) == {"True", "False", "''"}  # as written, not strings
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
    assert len(rows) == 5 and not any("not run" in r for r in rows)  # judged claims first
    assert rows[0].startswith("| `fa.binary_radius` |")
    assert "| 0.900 [0.709, 1.058] (3 seeds x 1000 points) | holds (fragile) |" in rows[0]
    longer = readme_excerpt(back, max_rows=20)
    assert "| 1.100 [0.603, 1.597] (3 seeds x 1000 points) | inconclusive |" in longer
    assert "| holds (fragile) |" in longer
    assert f"({len(table)} claims in all" in excerpt and "1 not applicable" in excerpt
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


# ---- the HTML page -------------------------------------------------------------------------------
VOID = {"meta", "br", "hr", "img", "input", "link", "col", "area", "base", "source", "wbr"}
WBR = "\x00"  # a <wbr> (a line-break opportunity) inside a word: no space there


class Cell:
    def __init__(self, attrs: dict):
        self.attrs, self.parts = attrs, []

    @property
    def text(self) -> str:
        """The text of the cell and its elements, whitespace collapsed (one space between
        elements, none at a <wbr>)."""
        return " ".join(" ".join(self.parts).replace(f" {WBR} ", "").split())


class Row:
    def __init__(self):
        self.cells: list[Cell] = []

    @property
    def verdict_color(self) -> str:
        (cell,) = [c for c in self.cells if "verdict" in c.attrs.get("class", "").split()]
        return cell.attrs["style"].removeprefix("background: ")


class Page(HTMLParser):
    """The structure of the ledger page: doctype, balanced tags, the header cells, the body
    rows and their cells (attributes, unescaped text), the chips and the scripts."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.decl, self.stack, self.errors = "", [], []
        self.headers, self.rows, self.chips, self.scripts = [], [], [], []
        self._cell = self._chip = self._script = None
        self._in_body = False

    def handle_decl(self, decl):
        self.decl = decl

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        if tag not in VOID:
            self.stack.append(tag)
        if tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._in_body:
            self.rows.append(Row())
        elif tag == "td" and self._in_body:
            self._cell = Cell(a)
            self.rows[-1].cells.append(self._cell)
        elif tag == "th":
            self._cell = Cell(a)
            self.headers.append(self._cell)
        elif tag == "span" and "chip" in a.get("class", "").split():
            self._chip = Cell(a)
            self.chips.append(self._chip)
        elif tag == "script":
            self._script = Cell(a)
            self.scripts.append(self._script)
        elif tag == "wbr" and self._cell is not None:
            self._cell.parts.append(WBR)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()
        if tag in ("td", "th"):
            self._cell = None
        elif tag == "span":
            self._chip = None
        elif tag == "script":
            self._script = None
        elif tag == "tbody":
            self._in_body = False

    def handle_data(self, data):
        for part in (self._cell, self._chip, self._script):
            if part is not None:
                part.parts.append(data)


def parse(html: str) -> Page:
    page = Page()
    page.feed(html)
    page.close()
    return page


def fragment_text(fragment: str) -> str:
    """The text of an HTML fragment as a cell's text reads it (every tag closed)."""
    page = parse(f"<table><tbody><tr><td>{fragment}</td></tr></tbody></table>")
    assert page.errors == [] and page.stack == [], fragment
    return page.rows[0].cells[0].text


def test_html_is_valid_with_one_row_per_claim_in_the_verdict_colours(tmp_path):
    table = mixed_ledger(tmp_path)
    html = ledger_html(table)
    page = parse(html)
    assert page.decl.lower() == "doctype html"
    assert page.errors == [] and page.stack == []  # every tag closed, in order
    assert html.count("<tr") == len(table) + 1  # the header row and one per claim
    assert len(page.rows) == len(table)
    assert [h.text.replace(" ▴▾", "") for h in page.headers] == list(HEADERS)
    assert [h.attrs["data-col"] for h in page.headers] == [str(i) for i in range(len(HEADERS))]
    for row, (_, r) in zip(page.rows, table.iterrows(), strict=True):
        assert len(row.cells) == len(HEADERS)
        study, cid, claim, source, paper, ours, verdict, why, rule = row.cells
        assert study.text == r.study and cid.text == f"{r.id} {r.setting}".strip()
        assert claim.text == " ".join(r.claim.split())
        assert row.verdict_color == VERDICT_COLORS[r.verdict]
        assert verdict.text.startswith(r.verdict) and verdict.attrs["data-sort"] == str(
            VERDICTS.index(r.verdict)
        )
        # the source, its quote (between curly quotes, its LaTeX as MathML, its emphasis
        # as HTML: no $ or ** left) and scope
        quote = fragment_text(quote_html(r.quote_restored or r.quote, bool(r.quote_restored)))
        squash = "".join(source.text.split())  # spaces between elements aside
        assert squash == "".join(f"{r.source} “{quote}” scope: {r.scope}".split()), r.id
        assert "$" not in source.text and "**" not in source.text, r.id
        assert paper.text == " ".join(r.paper.split())
        # the rule, then the derivation (in a details element) and what was measured
        assert rule.text == " ".join(
            f"{r.rule} derivation {r.derivation} measured: {r.measure}".split()
        )
        if r.verdict not in JUDGED:
            assert ours.text == "-" and ours.attrs["data-sort"] == ""
            assert why.text == " ".join(str(r.reason).split())
        else:
            assert float(ours.attrs["data-sort"]) == pytest.approx(r.ours_mean)
    # the counts, one chip per verdict in the verdict's colour
    counts = table.verdict.value_counts()
    chips = {c.text.split(" ", 1)[1]: c for c in page.chips}
    assert list(chips) == list(VERDICTS)
    for v, chip in chips.items():
        assert chip.text == f"{counts.get(v, 0)} {v}"
        assert chip.attrs["style"] == f"background: {VERDICT_COLORS[v]}"
    assert "Ours = mean [95 % interval] (the units it stands on)" in html
    assert not any(f"**{v}**" in html for v in VERDICTS)  # markdown's bold verdicts stay there


def test_html_marks_fragile_verdicts_and_carries_the_cells(tmp_path):
    table = mixed_ledger(tmp_path)
    html = ledger_html(table)
    page = parse(html)
    by_id = {r.cells[1].text.split(" ", 1)[0]: r for r in page.rows}
    assert "1.100 [0.603, 1.597] (3 seeds x 1000 points)" in html
    assert "interval [0.603, 1.6] straddles the weak threshold 1" in html
    assert "&gt;= 0.379 [-0.981, inf]" in html and "study disabled" in html
    fragile = by_id["fa.binary_radius"]
    assert fragile.cells[6].text == "holds fragile"
    assert fragile.cells[7].text.startswith("without seed 0: inconclusive")
    assert by_id["fa.universal_radius"].cells[6].text == "holds"  # (1, 1, 1): not fragile
    n_fragile = int(table.fragile.map(lambda v: v is True).sum())
    assert (
        f"({n_fragile} fragile: the verdict changes when one seed, draw or run is left out)" in html
    )


def test_html_autoescapes_the_ledgers_text(tmp_path):
    table = mixed_ledger(tmp_path)
    evil = '<script>alert("x")</script> & <b>bold</b>'
    table.loc[0, "claim"] = evil
    table.loc[0, "quote"] = 'a "quote" <i>'
    html = ledger_html(table)
    assert evil not in html and "<b>bold</b>" not in html
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;" in html
    page = parse(html)
    assert page.errors == [] and page.stack == []
    assert len(page.scripts) == 1  # the sort script alone
    assert page.rows[0].cells[2].text == " ".join(evil.split())  # shown as text
    assert '“a "quote" <i>”' in page.rows[0].cells[3].text


def test_html_has_its_sort_script(tmp_path):
    page = parse(ledger_html(mixed_ledger(tmp_path)))
    (script,) = page.scripts
    code = "".join(script.parts)
    assert 'document.querySelectorAll("#ledger th")' in code
    assert 'addEventListener("click"' in code and "td.dataset.sort" in code
    assert "localeCompare" in code and "parseFloat" in code
    assert "http" not in code and "src" not in script.attrs  # no network


# ---- the figure --------------------------------------------------------------------------------
def test_figure_draws_one_row_per_judged_claim(tmp_path):
    table = mixed_ledger(tmp_path)
    # one seed: an inconclusive row with no interval at all
    single = fa_summary(binary=(10.0,), multiclass=(20.0,), reference=(math.nan,),
                        universal=(10.0,), clean=(1.0,), fa_binary=(0.9,), other_class=(0.1,),
                        fa_multi=(0.1,), cosine_binary=(0.44,))  # fmt: skip
    one_seed = ledger(tmp_path / "one", default_config(), {FA: single}).reset_index()
    one_seed = one_seed[one_seed.id == "fa.cosine_blocks"]
    assert one_seed.verdict.tolist() == [INCONCLUSIVE] and one_seed.ci_lo.isna().all()
    table = pd.concat([table, one_seed], ignore_index=True)
    ran = table[table.verdict.isin(JUDGED)].reset_index(drop=True)
    fig = claims_figure(table)
    assert len(fig.axes) == len(ran)

    def texts(ax):  # the row's label and its verdict (an arrow is an annotation)
        return [t.get_text() for t in ax.texts if not isinstance(t, Annotation)]

    assert [texts(ax)[0] for ax in fig.axes] == [f"{r.id}\n{r.setting}" for _, r in ran.iterrows()]
    by_id = {}
    for ax, (_, r) in zip(fig.axes, ran.iterrows(), strict=True):
        by_id.setdefault(r.id, (ax, r))
        assert texts(ax)[1].startswith(f"{r.verdict}{', fragile' if r.fragile is True else ''} (n=")
    ax, r = by_id["fa.reference_radius"]  # censored: a bar and an arrow to the axis' end
    assert any(isinstance(t, Annotation) for t in ax.texts) and len(ax.lines) == 2
    assert texts(ax)[1] == "inconclusive (n=3 seeds x 1000 pts)"
    ax = fig.axes[-1]  # the one-seed row, last: no interval, the mean alone
    assert texts(ax)[0].startswith("fa.cosine_blocks\n")
    assert len(ax.lines) == 1 and texts(ax)[1] == "inconclusive (n=1 seeds)"
    ax, r = by_id["fa.clean_accuracy"]  # an interval: its bar and the mean, filled
    assert len(ax.lines) == 2 and not any(isinstance(t, Annotation) for t in ax.texts)
    assert ax.lines[1].get_markerfacecolor() == ax.lines[1].get_color()
    ax, r = by_id["fa.binary_radius"]  # fragile: a hollow marker
    assert texts(ax)[1].startswith("holds, fragile (n=")
    assert ax.lines[1].get_markerfacecolor() == "white"
    assert by_id["fa.kclass_over_binary"][0].get_xscale() == "linear"
    png, pdf = tmp_path / "claims.png", tmp_path / "claims.pdf"
    save_claims_figure(table, str(png), str(pdf))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and pdf.read_bytes()[:5] == b"%PDF-"


def test_figure_of_the_csv_and_of_a_ledger_where_nothing_ran(tmp_path):
    mixed_ledger(tmp_path).to_csv(tmp_path / "claims.csv", index=False)
    back = read_ledger(tmp_path / "claims.csv")
    assert len(claims_figure(back).axes) == back.verdict.isin(JUDGED).sum()
    off = read_ledger_of(tmp_path / "off", default_config(fa=False))
    fig = claims_figure(off)
    assert len(fig.axes) == 1 and not fig.axes[0].axison
    assert fig._suptitle.get_text() == (
        f"Claims ledger: 0 claims judged, {len(off)} not run or not applicable"
    )
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
    row = df[df.setting.str.endswith("readout sum") & (df.id == "fa.kclass_over_binary")].iloc[0]
    assert (row.ci_lo, row.ci_hi) == pytest.approx(t_ends((0.9, 1.3, 1.1), T_95_2))
    assert row.verdict == INCONCLUSIVE  # [0.763, 1.437] still straddles 1
    # the sum readout's rule is the direction, exclusive (Rule.strict): > 1
    assert row.rule == (
        "holds: the 90 % interval of ratio > 1; holds weaker: > 1; does not hold: wholly "
        "outside it; else inconclusive"
    )
    assert "Ours = mean [90 % interval]" in ledger_markdown(df)
    assert "Ours = mean [90 % interval]" in ledger_html(df)
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
        "nn": "price_nn",
        "other": "attack_audit",
    }
    built = [
        "results/fa/figures/summary.csv",
        "results/fa/figures/robust_accuracy_vs_radius.csv",  # fa.binary_radius's curves
        "results/imgs/figures/robust_accuracy_vs_radius.csv",
        "results/imgs/figures/summary.csv",
        "results/price/figures/gap_vs_n.csv",
        "results/price/figures/summary.csv",
        "results/price/teacher_w4_x4/n16/metrics.csv",  # a job's table, not a source
        "results/margin/figures/points.csv",
        "results/margin/figures/schedules.csv",
        "results/margin/figures/attack_audit.csv",  # not a source
        "results/nn/figures/cells.csv",
        "results/nn/figures/summary.csv",  # PRICE-NN reads its cells, not its summary
        "results/other/figures/summary.csv",
    ]
    assert ledger_inputs(studies, built) == [
        "results/fa/figures/summary.csv",
        "results/fa/figures/robust_accuracy_vs_radius.csv",
        "results/imgs/figures/summary.csv",
        "results/imgs/figures/robust_accuracy_vs_radius.csv",
        "results/price/figures/summary.csv",
        "results/price/figures/gap_vs_n.csv",
        "results/margin/figures/points.csv",
        "results/margin/figures/schedules.csv",
        "results/nn/figures/cells.csv",
    ]


def test_written_sources_are_what_the_ledger_reads(tmp_path):
    """The helper writes where study_paths says each source lives."""
    path = write(tmp_path, *FA, fa_summary())
    (so,) = [s for s in study_outputs(default_config(), tmp_path) if s.ctx.name == "fa"]
    assert so.paths["summary"] == path and so.provides("summary")
    assert not so.provides("scaling")
