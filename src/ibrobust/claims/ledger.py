"""The claims ledger: every claim of every study in the config, with our number and a verdict.

:func:`build_ledger` takes, per study, its context and where its outputs are, loads each
output through its :class:`~ibrobust.claims.core.Source` (a malformed file stops the
ledger with :class:`~ibrobust.claims.core.SummaryError`) and evaluates every claim of the
study's kind (:data:`CLAIMS`): a verdict, or "not run" with the reason (study disabled,
part not configured, output absent, no rows for the setting). :func:`ledger_markdown` and
:func:`readme_excerpt` render the table; nothing in the ledger is typed by hand.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pandas as pd

from ibrobust.claims.core import (
    NOT_RUN,
    VERDICTS,
    Claim,
    NotRun,
    StudyContext,
    SummaryError,
    load_source,
)
from ibrobust.claims.intervals import LEVEL
from ibrobust.studies import REGISTRY


def claims_modules() -> dict[str, str]:
    """Study kind -> the module declaring its SOURCES and claims(ctx): ``ibrobust.claims.<kind>``
    for every registered kind that has one (a kind without claims has no module). The claims
    rules hash these modules, so editing a claim declaration reruns only the ledger."""
    names = {kind: f"ibrobust.claims.{kind}" for kind in REGISTRY}
    return {kind: name for kind, name in names.items() if importlib.util.find_spec(name)}


CLAIMS: dict[str, ModuleType] = {
    kind: importlib.import_module(name) for kind, name in claims_modules().items()
}

RULE_BOUNDS = ("strong_lo", "strong_hi", "weak_lo", "weak_hi")  # the rule as numbers
COLUMNS = [
    "study",
    "id",
    "setting",
    "claim",
    "paper",
    "ours_mean",
    "ours_spread",
    "ci_lo",
    "ci_hi",
    "ci_method",
    "n",
    "unit",
    "points",
    "lower_bound",
    "verdict",
    "reason",
    "rule",
    "strong_lo",
    "strong_hi",
    "weak_lo",
    "weak_hi",
    "measure",
    "note",
]


@dataclass(frozen=True)
class StudyOutputs:
    """One study for the ledger: its context, whether it is enabled, per source name the
    path of the file, and which sources this build provides (``available``; None: those
    whose file exists). A source not provided makes its claims "not run"."""

    kind: str
    ctx: StudyContext
    enabled: bool
    paths: Mapping[str, Path]
    available: frozenset[str] | None = None
    skipped: str = "study disabled (enabled: false)"  # the "not run" reason when not enabled

    def provides(self, source: str) -> bool:
        if self.available is not None:
            return source in self.available
        return Path(self.paths[source]).exists()


def study_paths(kind: str, study: str, results: str | Path = "results") -> dict[str, Path]:
    """Where each source of a study of ``kind`` lives (``results/<study>/<source path>``)."""
    module = CLAIMS[kind]
    return {name: Path(results) / study / src.path for name, src in module.SOURCES.items()}


def ledger_inputs(
    studies: Mapping[str, str], built: Collection[str], results: str | Path = "results"
) -> list[str]:
    """The files the ledger reads for ``studies`` (enabled study -> kind): the sources of
    the kinds with claims that are among the files a target ``built``s."""
    built = {str(Path(f)) for f in built}
    return [
        str(path)
        for study, kind in studies.items()
        if kind in CLAIMS
        for path in study_paths(kind, study, results).values()
        if str(path) in built
    ]


def _row(study: str, claim: Claim, **kw) -> dict:
    row = dict.fromkeys(COLUMNS, "")
    row.update(
        study=study,
        id=claim.id,
        setting=claim.setting,
        claim=claim.claim,
        paper=claim.paper,
        rule=claim.rule.text(),
        strong_lo=claim.rule.strong[0],
        strong_hi=claim.rule.strong[1],
        weak_lo=claim.rule.weak[0],
        weak_hi=claim.rule.weak[1],
        measure=claim.measure,
        ours_mean=math.nan,
        ours_spread=math.nan,
        ci_lo=math.nan,
        ci_hi=math.nan,
        n=0,
        points=0,
        lower_bound=False,
    )
    row.update(kw)
    return row


def evaluate_study(so: StudyOutputs, level: float = LEVEL) -> list[dict]:
    """Ledger rows of one study (every claim of its kind, in declaration order); verdicts
    on ``level`` intervals."""
    module = CLAIMS[so.kind]
    study = so.ctx.name
    claims = module.claims(so.ctx)
    if not so.enabled:
        return [_row(study, c, verdict=NOT_RUN, reason=so.skipped) for c in claims]
    loaded: dict[str, pd.DataFrame] = {}
    absent: dict[str, str] = {}
    for name, src in module.SOURCES.items():
        path = Path(so.paths[name])
        if so.provides(name):
            loaded[name] = load_source(path, src)
        else:
            absent[name] = f"output absent: {path} is not built here (built by {src.built_by})"
    rows = []
    for c in claims:
        reason = c.applies(so.ctx) if c.applies is not None else None
        missing = [absent[s] for s in c.sources if s in absent]
        if reason is None and missing:
            reason = "; ".join(missing)
        if reason is not None:
            rows.append(_row(study, c, verdict=NOT_RUN, reason=reason))
            continue
        try:
            m = c.compute({s: loaded[s] for s in c.sources}, so.ctx)
        except NotRun as why:
            rows.append(_row(study, c, verdict=NOT_RUN, reason=str(why)))
            continue
        except (KeyError, ValueError, TypeError) as err:
            files = ", ".join(str(so.paths[s]) for s in c.sources)
            raise SummaryError(
                f"{files}: claim {c.id} ({c.setting}) cannot be measured: {err}"
            ) from err
        decision = c.verdict(m, level)
        assert decision.verdict in VERDICTS, decision
        iv = m.ci(level)
        rows.append(
            _row(
                study,
                c,
                ours_mean=m.mean,
                ours_spread=m.spread,
                ci_lo=math.nan if iv is None else iv.lo,
                ci_hi=math.nan if iv is None else iv.hi,
                ci_method="" if iv is None else iv.method,
                n=len(m.values) if iv is None else iv.n,
                unit=m.unit if iv is None else iv.unit,
                points=m.points or 0,
                lower_bound=m.lower_bound,
                verdict=decision.verdict,
                reason=decision.reason,
                rule=c.rule.text(level),
                note=m.note,
            )
        )
    return rows


def study_outputs(
    config: Mapping,
    results: str | Path = "results",
    provided: Collection[str | Path] | None = None,
) -> list[StudyOutputs]:
    """One :class:`StudyOutputs` per study of a (validated) config whose kind declares
    claims, in the config's order. ``provided``: the files this build made (a source whose
    path is not among them is "not run"); None: whatever exists on disk. A study runs when
    it is in the config's ``only_studies`` (when set), else when it is enabled; the reason
    of a study that does not says which of the two left it out."""
    given = None if provided is None else {Path(f) for f in provided}
    only = config.get("only_studies")
    out = []
    for name, st in config["studies"].items():
        if st["kind"] not in CLAIMS:
            continue
        ctx = StudyContext(
            name=name,
            config=st,
            datasets=config.get("datasets", {}),
            models=config.get("models", {}),
            optimizers=config.get("optimizers", {}),
        )
        paths = study_paths(st["kind"], name, results)
        available = None if given is None else frozenset(s for s, f in paths.items() if f in given)
        out.append(
            StudyOutputs(
                kind=st["kind"],
                ctx=ctx,
                enabled=name in only if only else bool(st.get("enabled", True)),
                paths=paths,
                available=available,
                skipped=(
                    f"not in only_studies {list(only)} (this invocation builds only those)"
                    if only
                    else "study disabled (enabled: false)"
                ),
            )
        )
    return out


def build_ledger(studies: list[StudyOutputs], level: float = LEVEL) -> pd.DataFrame:
    """The ledger table (:data:`COLUMNS`), studies in the given order, verdicts on ``level``
    intervals; kinds without claims are skipped."""
    rows: list[dict] = []
    for so in studies:
        if so.kind in CLAIMS:
            rows += evaluate_study(so, level)
    return pd.DataFrame(rows, columns=COLUMNS)


# ---- rendering ----------------------------------------------------------------------------
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
    if row["verdict"] == NOT_RUN:
        return "-"
    lb = ">= " if row["lower_bound"] else ""
    return f"{lb}{_num(row['ours_mean'])} {interval_text(row)} ({units_text(row)})"


def verdict_cell(row: Mapping) -> str:
    if row["verdict"] == NOT_RUN:
        return f"not run: {row['reason']}"
    if row["reason"]:
        return f"**{row['verdict']}**: {row['reason']}"
    return f"**{row['verdict']}**"


def _escape(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


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
    for study, g in df.groupby("study", sort=False):
        out += [f"## {study}", ""]
        out.append("| id | setting | claim | paper | ours | verdict | rule |")
        out.append("|---|---|---|---|---|---|---|")
        for _, r in g.iterrows():
            cells = [
                f"`{r['id']}`",
                r["setting"],
                r["claim"],
                r["paper"],
                ours_cell(r),
                verdict_cell(r),
                r["rule"],
            ]
            out.append("| " + " | ".join(_escape(c) for c in cells) + " |")
        out.append("")
    notes = df[(df["note"] != "") & (df["verdict"] != NOT_RUN)]
    out += ["## How each number is measured", ""]
    for _, r in df.drop_duplicates(["study", "id"]).iterrows():
        method = df[(df["id"] == r["id"]) & (df["ci_method"] != "")]["ci_method"]
        how = f" Interval: {', '.join(dict.fromkeys(method))}." if len(method) else ""
        out.append(f"- `{r['id']}`: {r['measure']}.{how}")
    if len(notes):
        out += ["", "## Notes", ""]
        out += [f"- `{r['id']}` ({r['setting']}): {r['note']}." for _, r in notes.iterrows()]
    return "\n".join(out) + "\n"


def ledger_html(df: pd.DataFrame, title: str = "Claims ledger") -> str:
    """The ledger as one self-contained HTML page (the report's first page): the columns of
    :func:`ledger_markdown`'s tables, one table for all studies."""
    view = pd.DataFrame(
        {
            "study": df["study"],
            "id": df["id"],
            "setting": df["setting"],
            "claim": df["claim"],
            "paper": df["paper"],
            "ours": [ours_cell(r) for _, r in df.iterrows()],
            "verdict": [verdict_cell(r).replace("**", "") for _, r in df.iterrows()],
            "rule": df["rule"],
        }
    )
    counts = df["verdict"].value_counts()
    summary = ", ".join(f"{counts.get(v, 0)} {v}" for v in VERDICTS)
    return (
        f"<html><head><meta charset='utf-8'><title>{title}</title><style>"
        "table{border-collapse:collapse;font:13px sans-serif}"
        "td,th{border:1px solid #ccc;padding:3px 6px;vertical-align:top}"
        "</style></head><body>"
        f"<h1>{title}</h1><p>{len(df)} claims: {summary}. Ours = mean [{_pct(df)} interval] "
        "(units); the verdict is decided on the interval.</p>"
        + view.to_html(index=False, escape=True)
        + "</body></html>\n"
    )


def _pct(df: pd.DataFrame) -> str:
    """The interval level in words, from the rule text (one level per ledger)."""
    for rule in df["rule"]:
        if "interval of" in str(rule):
            return str(rule).split("the ", 1)[1].split(" interval", 1)[0]
    return f"{100 * LEVEL:g} %"


def readme_excerpt(
    df: pd.DataFrame, max_rows: int = 8, full: str = "results/claims/claims.md"
) -> str:
    """A short markdown table for the README: the first ``max_rows`` claims that ran (then
    not-run ones), id, ours, paper, verdict; the last line names the ``full`` table."""
    ran = df[df["verdict"] != NOT_RUN]
    pick = pd.concat([ran, df[df["verdict"] == NOT_RUN]]).head(max_rows)
    lines = ["| claim | setting | paper | ours | verdict |", "|---|---|---|---|---|"]
    for _, r in pick.iterrows():
        v = "not run" if r["verdict"] == NOT_RUN else r["verdict"]
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


def read_ledger(path: str | Path) -> pd.DataFrame:
    """A ledger CSV written by the claims rule (for :func:`readme_excerpt`)."""
    numeric = ("ours_mean", "ours_spread", "ci_lo", "ci_hi", *RULE_BOUNDS)
    df = pd.read_csv(path, keep_default_na=False, na_values={c: [""] for c in numeric})
    missing = [c for c in COLUMNS if c not in df]
    if missing:
        raise SummaryError(f"{path}: not a ledger, missing columns {missing}")
    df["lower_bound"] = df["lower_bound"].astype(str).str.lower() == "true"
    return df
