"""The claims ledger rendered: markdown (claims.md), one HTML page (claims.html, the
report's first page), the README excerpt, and reading a ledger CSV back. Pure functions of
the ledger table (:data:`ibrobust.ledger.table.COLUMNS`)."""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from ibrobust.claims.sources import SummaryError
from ibrobust.claims.verdicts import JUDGED, VERDICTS
from ibrobust.ledger.table import COLUMNS, RULE_BOUNDS


def _num(v: float) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    a = abs(v)
    if a != 0 and (a < 1e-2 or a >= 1e4):
        return f"{v:.2g}"
    return f"{v:.3f}" if a < 10 else f"{v:.1f}"


def units_text(row: Mapping) -> str:
    """``3 seeds``, ``500 points``, ``3 seeds x 500 points``: what the interval stands on."""
    n, unit = int(row["n"]), str(row["unit"])
    unit = unit[:-1] if n == 1 and unit.endswith("s") else unit
    text = f"{n} {unit}"
    pts = int(row.get("points") or 0)
    if pts and "points" not in unit:
        text += f" x {pts} points"
    return text


def interval_text(row: Mapping) -> str:
    lo, hi = row["ci_lo"], row["ci_hi"]
    if lo is None or (isinstance(lo, float) and math.isnan(lo)):
        return "no interval"
    hi_text = "inf" if hi == math.inf else _num(hi)
    return f"[{_num(lo)}, {hi_text}]"


def ours_cell(row: Mapping) -> str:
    """``0.961 [0.954, 0.968] (3 seeds)``: the mean, its interval and the units."""
    if row["verdict"] not in JUDGED:
        return "-"
    lb = ">= " if row["lower_bound"] else ""
    return f"{lb}{_num(row['ours_mean'])} {interval_text(row)} ({units_text(row)})"


def is_fragile(row: Mapping) -> bool:
    """Whether the row's verdict changes when one unit is left out (the ledger's ``fragile``
    column: True, False or empty for not assessed; a CSV read back gives strings)."""
    return str(row.get("fragile", "")).strip().lower() == "true"


def is_setting_dependent(row: Mapping) -> bool:
    """Whether the row's verdict flips within the plausible range of a setting the source
    leaves open (the ledger's ``setting_dependent`` column, :mod:`ibrobust.ledger.sensitivity`:
    True, False or empty for not assessed)."""
    return str(row.get("setting_dependent", "")).strip().lower() == "true"


def flags_text(row: Mapping) -> str:
    """`` (fragile, setting-dependent)``: the row's flags after its verdict, or empty."""
    flags = [f for f, on in (("fragile", is_fragile(row)),
                             ("setting-dependent", is_setting_dependent(row))) if on]  # fmt: skip
    return f" ({', '.join(flags)})" if flags else ""


def verdict_cell(row: Mapping) -> str:
    revised = f" (*{row['revised']}*)" if row.get("revised") else ""
    if row["verdict"] not in JUDGED:
        return f"{row['verdict']}: {row['reason']}{revised}"
    text = f"**{row['verdict']}**" + flags_text(row) + revised
    reasons = [
        r
        for r in (
            row["reason"],
            row.get("fragile_reason", "") if is_fragile(row) else "",
            row.get("setting_dependent_reason", "") if is_setting_dependent(row) else "",
        )
        if r
    ]
    return f"{text}: {'; '.join(reasons)}" if reasons else text


EDITORIAL = "(brackets: editorial)"  # after a restored quote in the markdown ledger


def shown_quote(row: Mapping) -> tuple[str, bool]:
    """The quote the ledger shows and whether it is a restored one: ``quote_restored`` (the
    source's lost math restored in editorial ``[..]`` insertions) where the row has one,
    else the raw ``quote``."""
    restored = str(row.get("quote_restored") or "")
    return (restored, True) if restored else (str(row.get("quote") or ""), False)


def quote_text(row: Mapping) -> str:
    """``"..."``, or ``"..." (brackets: editorial)`` for a restored quote."""
    quote, restored = shown_quote(row)
    return f'"{quote}"' + (f" {EDITORIAL}" if restored else "")


def source_cell(row: Mapping) -> str:
    """``Tsilivis et al. 2024, Sec. 5.2: "SD significantly outperforms GD ..."``."""
    return f"{row['source']}: {quote_text(row)}" if row.get("quote") else str(row["source"])


def _has_restored(df: pd.DataFrame) -> bool:
    return bool((df["quote_restored"].fillna("").astype(str) != "").any())


RESTORED_NOTE = (
    "Where the source's text lost its math, a quote is shown with the math restored in "
    "square brackets, marked {mark}: each bracket is an editorial insertion read from the "
    "sentence's context in the source, in the ledger's notation; the CSV keeps the raw text "
    "(column quote) beside the restored one (column quote_restored)."
)


def _escape(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


RULES_INTRO = (
    "Each rule is derived from the quoted source under the form of its statement (column "
    "form); *revised after the result* marks a rule changed after a committed ledger held its "
    "number (docs/ledger/preregistration.csv, computed from git); *fragile* marks a verdict "
    "that changes when any one unit (seed, draw or run) is left out; *setting-dependent* one "
    "that flips within the plausible range of a setting the source leaves open (`ibrobust "
    "claims sweep`)."
)


def ledger_markdown(df: pd.DataFrame, title: str = "Claims ledger") -> str:
    """The ledger as markdown: a counts line, one table per study, and the notes."""
    counts = df["verdict"].value_counts()
    summary = ", ".join(f"{counts.get(v, 0)} {v}" for v in VERDICTS)
    out = [
        f"# {title}",
        "",
        f"{len(df)} claims: {summary}. Ours = mean [{_pct(df)} interval] (the units it stands "
        "on); the verdict is decided on the interval (`>=`: some values are censored at the "
        "top of the radius grid, so the interval has no upper end). How each interval is "
        "computed: `ibrobust.claims.intervals`. Generated from the studies' outputs by "
        "`snakemake claims`; never edited by hand.",
        "",
    ]
    if _has_restored(df):
        out += [RESTORED_NOTE.format(mark=f"*{EDITORIAL}*"), ""]
    for study, g in df.groupby("study", sort=False):
        out += [f"## {study}", ""]
        out.append("| id | setting | claim | source | paper | ours | verdict |")
        out.append("|---|---|---|---|---|---|---|")
        for _, r in g.iterrows():
            cells = [
                f"`{r['id']}`",
                r["setting"],
                r["claim"],
                source_cell(r),
                r["paper"],
                ours_cell(r),
                verdict_cell(r),
            ]
            out.append("| " + " | ".join(_escape(c) for c in cells) + " |")
        out.append("")
    notes = df[(df["note"] != "") & df["verdict"].isin(JUDGED)]
    out += ["## Each claim's source, rule and measurement", "", RULES_INTRO, ""]
    # one entry per claim and rule: a claim whose rule differs by setting (e.g. per readout)
    # lists each rule with the settings it judges
    rules = ["study", "id", "rule", "derivation"]
    for _, r in df.drop_duplicates(rules).iterrows():
        method = df[(df["id"] == r["id"]) & (df["ci_method"] != "")]["ci_method"]
        how = f" Interval: {', '.join(dict.fromkeys(method))}." if len(method) else ""
        same = df[(df["study"] == r["study"]) & (df["id"] == r["id"])]
        where = ""
        if len(same.drop_duplicates(rules)) > 1:
            mine = (same["rule"] == r["rule"]) & (same["derivation"] == r["derivation"])
            where = f" (for {'; '.join(dict.fromkeys(same[mine]['setting']))})"
        out += [
            f"- `{r['id']}` ({r['source']}; scope: {r['scope']}). Quote: {quote_text(r)}",
            f"  - Rule{where}: {r['rule']}. Form: {r.get('form') or 'not recorded'}.",
            f"  - Derivation: {r['derivation']}",
            f"  - Measured: {r['measure']}.{how}",
        ]
    if len(notes):
        out += ["", "## Notes", ""]
        out += [f"- `{r['id']}` ({r['setting']}): {r['note']}." for _, r in notes.iterrows()]
    return "\n".join(out) + "\n"


LIGHT = ("not run",)  # verdict colours light enough for dark text
HEADERS = ("study", "claim id", "claim", "source and quote", "paper", "ours", "verdict",
           "why", "rule")  # fmt: skip
# each column's share of the page's width (%, summing to 100): the HTML ledger's fixed
# layout, read at 1,280 px (docs/figures/claims_html.png)
WIDTHS = (6, 11, 12, 24, 9, 10, 8, 9, 11)
assert len(WIDTHS) == len(HEADERS) and sum(WIDTHS) == 100


def _breakable(ident: str) -> str:
    """A name (claim id, study), escaped, with a line-break opportunity after each ``.``
    and ``_``."""
    return re.sub(r"([._])", r"\1<wbr>", html.escape(str(ident)))


def ledger_html(df: pd.DataFrame, title: str = "Claims ledger") -> str:
    """The ledger as one self-contained HTML page (the report's first page): one table of
    every claim with its source and quote, the paper's number, ours, the verdict coloured as
    in ``claims.png`` (:data:`ibrobust.plotting.colors.VERDICT_COLORS`), the rule with its
    derivation; sortable by any column (a few lines of script, no network). Rendered from
    ``templates/ledger.html.j2`` with Jinja2 (autoescaped); a quote's LaTeX as MathML and
    its emphasis as HTML, server side (:func:`ibrobust.ledger.quotes.quote_html`), a restored
    quote's insertions marked."""
    import jinja2

    from ibrobust.plotting.colors import VERDICT_COLORS

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("ibrobust.ledger", "templates"),
        autoescape=True,
        keep_trailing_newline=True,
    )
    studies = list(dict.fromkeys(df["study"]))
    rows = [_html_row(r, studies) for _, r in df.iterrows()]
    counts = df["verdict"].value_counts()
    verdicts = [
        dict(name=v, count=int(counts.get(v, 0)), color=VERDICT_COLORS[v], light=v in LIGHT)
        for v in VERDICTS
    ]
    return env.get_template("ledger.html.j2").render(
        title=title,
        total=len(df),
        verdicts=verdicts,
        fragile=int(sum(is_fragile(r) for _, r in df.iterrows())),
        setting_dependent=int(sum(is_setting_dependent(r) for _, r in df.iterrows())),
        level=_pct(df),
        headers=HEADERS,
        widths=WIDTHS,
        rows=rows,
        restored_note=RESTORED_NOTE.format(mark="in colour") if _has_restored(df) else "",
    )


def _html_row(r: pd.Series, studies: list[str]) -> dict:
    """One ledger row's cells for the HTML template (quote already HTML)."""
    from ibrobust.ledger.quotes import quote_html
    from ibrobust.plotting.colors import VERDICT_COLORS

    judged = r["verdict"] in JUDGED
    mean = r["ours_mean"]
    return dict(
        study=r["study"],
        study_html=_breakable(r["study"]),
        study_order=studies.index(r["study"]),
        id=r["id"],
        id_html=_breakable(r["id"]),
        setting=r["setting"],
        claim=r["claim"],
        source=r["source"],
        # HTML already (escaped, formulas as MathML): the template marks it |safe
        quote_html=quote_html(*shown_quote(r)) if r["quote"] else "",
        restored=shown_quote(r)[1],
        scope=r["scope"],
        paper=r["paper"],
        ours=ours_cell(r),
        mean_sort="" if not judged or pd.isna(mean) else f"{float(mean):.12g}",
        verdict=r["verdict"],
        verdict_order=VERDICTS.index(r["verdict"]),
        color=VERDICT_COLORS[r["verdict"]],
        light=r["verdict"] in LIGHT,
        fragile=is_fragile(r),
        reason=r["reason"],
        fragile_reason=r.get("fragile_reason", "") if is_fragile(r) else "",
        setting_dependent=is_setting_dependent(r),
        setting_dependent_reason=r.get("setting_dependent_reason", "")
        if is_setting_dependent(r)
        else "",
        revised=r.get("revised", ""),
        rule=r["rule"],
        derivation=r["derivation"],
        measure=r["measure"],
    )


def _pct(df: pd.DataFrame) -> str:
    """The interval level in words (one level per ledger)."""
    levels = sorted(set(df["level"]))
    if len(levels) != 1:
        raise SummaryError(f"a ledger has one interval level, got {levels}")
    return f"{100 * float(levels[0]):g} %"


def readme_excerpt(
    df: pd.DataFrame, max_rows: int = 8, full: str = "results/claims/claims.md"
) -> str:
    """A short markdown table for the README: the first ``max_rows`` claims that ran (then
    not-run ones), id, ours, paper, verdict; the last line names the ``full`` table."""
    ran = df[df["verdict"].isin(JUDGED)]
    pick = pd.concat([ran, df[~df["verdict"].isin(JUDGED)]]).head(max_rows)
    lines = ["| claim | setting | paper | ours | verdict |", "|---|---|---|---|---|"]
    for _, r in pick.iterrows():
        v = r["verdict"] + flags_text(r)
        cells = [f"`{r['id']}`", r["setting"], r["paper"], ours_cell(r), v]
        lines.append("| " + " | ".join(_escape(c) for c in cells) + " |")
    counts = df["verdict"].value_counts()
    lines += [
        "",
        f"({len(df)} claims in all: "
        + ", ".join(f"{counts.get(v, 0)} {v}" for v in VERDICTS)
        + f"; full table in `{full}`.)",
    ]
    return "\n".join(lines) + "\n"


EXCERPT_START, EXCERPT_END = "<!-- claims-excerpt:start -->", "<!-- claims-excerpt:end -->"


def full_table_name(ledger: str | Path) -> str:
    """The markdown table beside a ledger CSV, as the excerpt names it: from ``results/`` on
    when the path has it (``/x/results/claims/claims.csv`` -> ``results/claims/claims.md``),
    else the path as given."""
    md = Path(ledger).with_suffix(".md").as_posix()
    return "results/" + md.split("results/", 1)[1] if "results/" in md else md


def splice_excerpt(text: str, excerpt: str, where: str) -> str:
    """``text`` (the file ``where``) with the lines between :data:`EXCERPT_START` and
    :data:`EXCERPT_END` replaced by ``excerpt``: the README's excerpt is regenerated, never
    typed. ValueError naming the file when the markers are missing."""
    start, end = EXCERPT_START, EXCERPT_END
    if start not in text or end not in text or text.index(start) > text.index(end):
        raise ValueError(f"{where}: needs the lines {start} and {end} (in that order)")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{excerpt}{end}{tail}"


KEY_COLUMNS = ("study", "id", "setting", "verdict")  # what every ledger, however old, has
NUMERIC = ("level", "ours_mean", "ours_spread", "ci_lo", "ci_hi", *RULE_BOUNDS)


def read_ledger(path: str | Path) -> pd.DataFrame:
    """A ledger CSV written by the claims rule, its columns in :data:`COLUMNS` order. A ledger
    of an older round may lack columns other than :data:`KEY_COLUMNS` (27a2974's had no
    intervals, 376045f's no citations, derivations or fragility): they read as empty (NaN
    for numbers). SummaryError naming the file when a key column is missing, and the file,
    row (its line, the header being line 1) and column of a value that is not a number."""
    try:
        df = pd.read_csv(path, keep_default_na=False, dtype=str)
    except (pd.errors.ParserError, UnicodeDecodeError) as err:
        raise SummaryError(f"{path}: not a readable CSV: {err}") from err
    for c in (c for c in NUMERIC if c in df):
        text = df[c].str.strip()
        num = pd.to_numeric(text.where(text != "", "nan"), errors="coerce")
        bad = num.isna() & ~text.str.lower().isin(["", "nan"])
        if bad.any():
            i = int(bad.to_numpy().nonzero()[0][0])
            raise SummaryError(
                f"{path}: row {i + 2} (claim {df['id'].iloc[i] if 'id' in df else '?'}), "
                f"column {c!r}: {df[c].iloc[i]!r} is not a number"
            )
        df[c] = num.astype(float)
    for c in ("n", "points"):
        if c in df:
            df[c] = pd.to_numeric(df[c].where(df[c] != "", "0"), errors="coerce")
    missing = [c for c in KEY_COLUMNS if c not in df]
    if missing:
        raise SummaryError(f"{path}: not a ledger, missing columns {missing}")
    absent = [c for c in COLUMNS if c not in df]
    df = df.assign(**{c: math.nan if c in NUMERIC else "" for c in absent})
    df = df.reindex(columns=[*COLUMNS, *(c for c in df if c not in COLUMNS)])
    df["lower_bound"] = df["lower_bound"].astype(str).str.lower() == "true"
    # True, False or empty (not assessed), as written; the CSV holds their text
    for col in ("fragile", "setting_dependent"):
        df[col] = [{"true": True, "false": False}.get(str(v).strip().lower(), "")
                   for v in df[col]]  # fmt: skip
    return df
