"""The ledger table: every claim of every study in the config, with our number and a verdict.

:func:`build_ledger` takes, per study, its context and where its outputs are, loads each
output through its :class:`~ibrobust.claims.sources.Source` (a malformed file stops the
ledger with :class:`~ibrobust.claims.sources.SummaryError`) and evaluates every claim of the
study's kind (:data:`CLAIMS`): a verdict, or "not run" with the reason (study disabled,
part not configured, output absent, no rows for the setting). Each row carries the claim's
quote as its citation has it (``quote``) and, where the source's text lost its math, the
quote restored with editorial ``[..]`` insertions (``quote_restored``, else empty;
:mod:`ibrobust.claims.restorations`).
:mod:`ibrobust.ledger.render` renders the table; nothing in the ledger is typed by hand.
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

from ibrobust.claims.core import Claim, StudyContext
from ibrobust.claims.forms import CELLS, cells_text
from ibrobust.claims.intervals import LEVEL
from ibrobust.claims.measurement import Measurement
from ibrobust.claims.restorations import restorations, restored_quote
from ibrobust.claims.sources import SummaryError, load_source
from ibrobust.claims.verdicts import NOT_APPLICABLE, NOT_RUN, VERDICTS, NotApplicable, NotRun
from ibrobust.kinds import STUDIES
from ibrobust.ledger.one_verdict import one_verdict_per_claim  # noqa: F401  (re-exported)


def claims_modules() -> dict[str, str]:
    """Study kind -> the module declaring its SOURCES and claims(ctx): ``claims`` in the kind's
    package (``ibrobust.studies.<kind>.claims``) for every registered kind that has one (a kind
    without claims has no such module). The claims rules hash these modules, so editing a
    claim declaration reruns only the ledger."""
    names = {kind: f"{STUDIES.module_name(kind)}.claims" for kind in STUDIES.kinds()}
    return {kind: name for kind, name in names.items() if importlib.util.find_spec(name)}


CLAIMS: dict[str, ModuleType] = {
    kind: importlib.import_module(name) for kind, name in claims_modules().items()
}

RULE_BOUNDS = ("strong_lo", "strong_hi", "weak_lo", "weak_hi")  # the rule as numbers
COLUMNS = [
    "level",
    "study",
    "id",
    "setting",
    "claim",
    "source",
    "quote",
    "quote_restored",
    "scope",
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
    "fragile",
    "fragile_reason",
    "revised",
    "form",
    "setting_dependent",  # ibrobust.ledger.sensitivity: True / False / "" (not assessed)
    "setting_dependent_reason",
    "rule",
    "derivation",
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


def _row(study: str, claim: Claim, level: float, **kw) -> dict:
    row = dict.fromkeys(COLUMNS, "")
    row.update(
        level=level,
        study=study,
        id=claim.id,
        setting=claim.setting,
        claim=claim.claim,
        source=claim.citation.short,
        quote=claim.citation.quote,
        quote_restored=restored_quote(claim.id, claim.citation.quote),
        scope=claim.citation.scope,
        paper=claim.paper,
        form=claim.form,
        rule=claim.rule.text(level),
        derivation=claim.derivation,
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


def with_restored_quotes(df: pd.DataFrame) -> pd.DataFrame:
    """A ledger read back (:func:`ibrobust.ledger.render.read_ledger`) with ``quote_restored``
    filled where it is empty and the package's restorations have an entry for the row's
    claim whose raw text is the row's quote (a ledger written before the column, joined on
    the claim id); a row whose quote differs from the entry's (an older ledger's) keeps its
    empty cell."""
    table = restorations()
    out = df.copy()
    if "quote_restored" not in out:
        out.insert(list(out.columns).index("quote") + 1, "quote_restored", "")

    def fill(row: pd.Series) -> str:
        if str(row["quote_restored"] or ""):
            return row["quote_restored"]
        entry = table.get(row["id"])
        return entry.restored if entry is not None and entry.raw == row["quote"] else ""

    out["quote_restored"] = [fill(r) for _, r in out.iterrows()]
    return out


def _designed(so: StudyOutputs, claims: list) -> tuple[list[str] | None, str | None]:
    """(the claims the study's config says it is designed to judge, None: all; the "not
    applicable" reason of the others). An id its kind does not have is named."""
    study, designed = so.ctx.name, so.ctx.config.get("claims")
    if designed is None:
        return None, None
    unknown = sorted(set(designed) - {c.id for c in claims})
    if unknown:
        raise SummaryError(
            f"config key studies.{study}.claims: {unknown} are not claims of study kind "
            f"{so.kind!r} (its claims: {sorted({c.id for c in claims})})"
        )
    return (
        designed,
        f"the study is designed to judge {', '.join(designed)} only (studies.{study}.claims)",
    )


def evaluate_study(
    so: StudyOutputs, level: float = LEVEL, sources: Mapping[str, pd.DataFrame] | None = None
) -> list[dict]:
    """Ledger rows of one study (every claim of its kind, in declaration order); verdicts
    on ``level`` intervals. ``sources``: the study's sources already loaded (e.g. cut to
    the units of an earlier look, ibrobust.decide.looks) instead of read from the files.
    A study whose config names the claims it is designed to judge (``claims``) has every
    other claim of its kind "not applicable" (:func:`one_verdict_per_claim` then lists it
    where another study judges it)."""
    module = CLAIMS[so.kind]
    study = so.ctx.name
    claims = module.claims(so.ctx)
    designed, designed_why = _designed(so, claims)
    if not so.enabled:
        return [
            _row(study, c, level, verdict=NOT_APPLICABLE, reason=designed_why)
            if designed is not None and c.id not in designed
            else _row(study, c, level, verdict=NOT_RUN, reason=so.skipped)
            for c in claims
        ]
    loaded, absent = _load_sources(so, module.SOURCES, sources)
    rows = []
    for c in claims:
        if designed is not None and c.id not in designed:
            why_not = designed_why
        else:
            why_not = c.not_applicable(so.ctx) if c.not_applicable is not None else None
        if why_not is not None:
            rows.append(_row(study, c, level, verdict=NOT_APPLICABLE, reason=why_not))
            continue
        reason = c.applies(so.ctx) if c.applies is not None else None
        missing = [absent[s] for s in c.sources if s in absent]
        if reason is None and missing:
            reason = "; ".join(missing)
        if reason is not None:
            rows.append(_row(study, c, level, verdict=NOT_RUN, reason=reason))
            continue
        try:
            m = c.compute({s: loaded[s] for s in c.sources}, so.ctx)
        except NotRun as why:
            rows.append(_row(study, c, level, verdict=NOT_RUN, reason=str(why)))
            continue
        except NotApplicable as why:
            rows.append(_row(study, c, level, verdict=NOT_APPLICABLE, reason=str(why)))
            continue
        except (KeyError, ValueError, TypeError) as err:
            files = ", ".join(str(so.paths[s]) for s in c.sources)
            raise SummaryError(
                f"{files}: claim {c.id} ({c.setting}) cannot be measured: {err}"
            ) from err
        rows.append(_measured_row(study, c, level, m))
    return rows


def _load_sources(
    so: StudyOutputs, sources: dict, given: Mapping[str, pd.DataFrame] | None = None
) -> tuple[dict[str, pd.DataFrame], dict]:
    """(source -> its table, for the sources built here; source -> why it is absent);
    ``given``: tables already loaded, used instead of reading their files."""
    loaded: dict[str, pd.DataFrame] = {}
    absent: dict[str, str] = {}
    for name, src in sources.items():
        path = Path(so.paths[name])
        if so.provides(name):
            loaded[name] = given[name] if given is not None else load_source(path, src)
        else:
            absent[name] = f"output absent: {path} is not built here (built by {src.built_by})"
    return loaded, absent


def _measured_row(study: str, c: Claim, level: float, m: Measurement) -> dict:
    """The ledger row of claim ``c`` measured as ``m``: its verdict, interval and fragility
    (a per-cell measurement: the interval of the cell the verdict shows, every cell's in the
    note)."""
    decision = c.verdict(m, level)
    assert decision.verdict in VERDICTS, decision
    frag = c.fragility(m, level)
    note = m.note
    if m.kind == CELLS:
        iv = decision.interval
        shown = dict(m.cells)[decision.cell] if decision.cell else m
        every = f"per cell, corrected: {cells_text(m, level)}"
        note = f"{note}; {every}" if note else every
    else:
        iv, shown = m.ci(level), m
    return _row(
        study,
        c,
        level,
        ours_mean=shown.mean if iv is None else iv.center,
        ours_spread=shown.spread,
        ci_lo=math.nan if iv is None else iv.lo,
        ci_hi=math.nan if iv is None else iv.hi,
        ci_method="" if iv is None else iv.method + (", per cell, Bonferroni" if m.cells else ""),
        n=len(shown.values) if iv is None else iv.n,
        unit=shown.unit if iv is None else iv.unit,
        points=shown.points or 0,
        lower_bound=shown.lower_bound,
        verdict=decision.verdict,
        reason=decision.reason,
        fragile="" if frag.fragile is None else frag.fragile,
        fragile_reason=frag.reason,
        note=note,
    )


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


def build_ledger(
    studies: list[StudyOutputs],
    level: float = LEVEL,
    per_claim: bool = True,
    revised: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """The ledger table (:data:`COLUMNS`), studies in the given order, verdicts on ``level``
    intervals, one verdict per claim (:func:`one_verdict_per_claim`; ``per_claim`` False:
    every study's rows, as each study alone judges them); ``revised``: claim id -> its
    *revised after the result* note (:func:`ibrobust.ledger.prereg.revised_notes`), in the
    column ``revised``; kinds without claims are skipped."""
    rows = [r for so in studies if so.kind in CLAIMS for r in evaluate_study(so, level)]
    return ledger_table(rows, studies, revised, per_claim)


def ledger_table(
    rows: list[dict],
    studies: list[StudyOutputs],
    revised: Mapping[str, str] | None = None,
    per_claim: bool = True,
) -> pd.DataFrame:
    """The studies' evaluated ``rows`` as the ledger: the ``revised`` column filled, one
    verdict per claim (with what judging a claim no study judges would cost); shared by the
    claims ledger and the ledger of a ``decide`` look."""
    costs = {c.id: c.cost for so in studies if so.kind in CLAIMS
             for c in CLAIMS[so.kind].claims(so.ctx) if c.cost}  # fmt: skip
    table = pd.DataFrame(rows, columns=COLUMNS)
    table["revised"] = [(revised or {}).get(i, "") for i in table["id"]]
    return one_verdict_per_claim(table, costs) if per_claim else table
