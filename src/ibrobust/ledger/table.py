"""The ledger table: every claim of every study in the config, with our number and a verdict.

:func:`build_ledger` takes, per study, its context and where its outputs are, loads each
output through its :class:`~ibrobust.claims.sources.Source` (a malformed file stops the
ledger with :class:`~ibrobust.claims.sources.SummaryError`) and evaluates every claim of the
study's kind (:data:`CLAIMS`): a verdict, or "not run" with the reason (study disabled,
part not configured, output absent, no rows for the setting).
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
from ibrobust.claims.intervals import LEVEL
from ibrobust.claims.measurement import Measurement
from ibrobust.claims.rules import fragility
from ibrobust.claims.sources import SummaryError, load_source
from ibrobust.claims.verdicts import NOT_APPLICABLE, NOT_RUN, VERDICTS, NotApplicable, NotRun
from ibrobust.kinds import STUDIES


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
        scope=claim.citation.scope,
        paper=claim.paper,
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


def evaluate_study(so: StudyOutputs, level: float = LEVEL) -> list[dict]:
    """Ledger rows of one study (every claim of its kind, in declaration order); verdicts
    on ``level`` intervals."""
    module = CLAIMS[so.kind]
    study = so.ctx.name
    claims = module.claims(so.ctx)
    if not so.enabled:
        return [_row(study, c, level, verdict=NOT_RUN, reason=so.skipped) for c in claims]
    loaded, absent = _load_sources(so, module.SOURCES)
    rows = []
    for c in claims:
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


def _load_sources(so: StudyOutputs, sources: dict) -> tuple[dict[str, pd.DataFrame], dict]:
    """(source -> its table, for the sources built here; source -> why it is absent)."""
    loaded: dict[str, pd.DataFrame] = {}
    absent: dict[str, str] = {}
    for name, src in sources.items():
        path = Path(so.paths[name])
        if so.provides(name):
            loaded[name] = load_source(path, src)
        else:
            absent[name] = f"output absent: {path} is not built here (built by {src.built_by})"
    return loaded, absent


def _measured_row(study: str, c: Claim, level: float, m: Measurement) -> dict:
    """The ledger row of claim ``c`` measured as ``m``: its verdict, interval and fragility."""
    decision = c.verdict(m, level)
    assert decision.verdict in VERDICTS, decision
    frag = fragility(c.rule, m, level)
    iv = m.ci(level)
    return _row(
        study,
        c,
        level,
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
        fragile="" if frag.fragile is None else frag.fragile,
        fragile_reason=frag.reason,
        note=m.note,
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


def build_ledger(studies: list[StudyOutputs], level: float = LEVEL) -> pd.DataFrame:
    """The ledger table (:data:`COLUMNS`), studies in the given order, verdicts on ``level``
    intervals; kinds without claims are skipped."""
    rows: list[dict] = []
    for so in studies:
        if so.kind in CLAIMS:
            rows += evaluate_study(so, level)
    return pd.DataFrame(rows, columns=COLUMNS)
