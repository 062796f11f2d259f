"""The ledger judged at each look's spent level, and the record of the looks.

``decide.looks`` (written by the plan, :func:`ibrobust.decide.planner.overlay`) holds the
units of every unit list at each look. A study is at look ``k`` = 1 + the looks at which
one of its lists changed (:func:`ibrobust.decide.units.study_look`); its rows are judged
on their usual intervals at the level ``1 - alpha_k`` (:mod:`ibrobust.decide.spending`),
and the method and that level are named in ``ci_method`` (the ``level`` column stays the
ledger's stated level, the one the spending keeps across all looks). Each earlier look ``j`` is rebuilt from the
outputs: the study's claims evaluated on its sources cut to the units of look ``j`` (rows
whose ``seed`` / ``draw`` column is among the first units of its lists then; a source
without that column is kept whole), at look ``j``'s level. :func:`evaluate_looks` gives that record
(:data:`LOOK_COLUMNS`, one row per ledger row and look); :func:`with_looks` adds to the
ledger the units at each look, the look that decided it (the first look from which its
verdict stays what it is now, when that is decisive) and the CPU-s the plans predicted for
its study (the measured CPU-s of a look's jobs: :func:`job_cpu` of their logs, in the rule's
look.md). Each study's sources are loaded once (:func:`load_sources`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pandas as pd

from ibrobust.claims.sources import load_source
from ibrobust.claims.verdicts import FAILS, HOLDS, WEAKER
from ibrobust.decide.cost import PHASES
from ibrobust.decide.spending import Spending
from ibrobust.decide.units import study_look, unit_keys
from ibrobust.ledger.table import CLAIMS, COLUMNS, StudyOutputs, evaluate_study

LOOK_COLUMNS = ["study", "id", "setting", "look", "units", "n", "level", "ci_lo", "ci_hi",
                "verdict"]  # fmt: skip
# added to the ledger: the units at each look, the deciding look, the CPU-s the plans spent on
# the row's study, and the level of the row's interval (its current look's)
DECIDE_COLUMNS = ["looks", "deciding_look", "decide_cpu_s", "look_level"]
DECISIVE = (HOLDS, WEAKER, FAILS)
KEY = ["study", "id", "setting"]


def look_units(
    looks: Sequence[Mapping[str, int]], study: str, block: Mapping
) -> list[dict[str, list[int]]]:
    """The study's distinct looks: per look, unit name (``seed``, ``draw``) -> the units
    (the first values of each list at that look, pooled over the study's lists)."""
    keys = unit_keys(study, block)
    out: list[dict[str, list[int]]] = []
    prev = None
    for counts in looks or [{k.name: len(k.values) for k in keys}]:
        mine = {k.name: counts.get(k.name, len(k.values)) for k in keys}
        if mine == prev:
            continue
        prev = mine
        units: dict[str, set[int]] = {}
        for k in keys:
            units.setdefault(k.kind[:-1], set()).update(k.values[: mine[k.name]])
        out.append({u: sorted(v) for u, v in units.items()})
    return out


def load_sources(so: StudyOutputs) -> dict[str, pd.DataFrame]:
    """The study's sources this build provides, each loaded (and checked) once."""
    sources = CLAIMS[so.kind].SOURCES
    return {n: load_source(so.paths[n], src) for n, src in sources.items() if so.provides(n)}


def evaluate_looks(
    so: StudyOutputs, looks: Sequence[Mapping[str, int]], spend: Spending
) -> tuple[list[dict], list[dict]]:
    """(the study's ledger rows at its current look's level, its look records: one per row
    and look, the earlier looks rebuilt from its sources cut to their units)."""
    study = so.ctx.name
    k = study_look(looks, study)
    loaded = load_sources(so) if so.enabled else {}
    records: list[dict] = []
    current: list[dict] = []
    for j, units in enumerate(look_units(looks, study, so.ctx.config)[:k], start=1):
        level = spend.level_at(j)
        rows = _evaluate_cut(so, loaded, units, level)
        counts = {u: len(v) for u, v in units.items()}
        for r in rows:
            if r["ci_method"]:
                r["ci_method"] = f"{r['ci_method']}; {spend.method(j)}"
            # the ledger's level is the one kept over all looks; the look's is in ci_method
            r["level"] = 1 - spend.alpha
            records.append(
                {
                    **{c: r[c] for c in KEY},
                    "look": j,
                    "units": _units_text(counts),
                    "n": r["n"],
                    "level": level,
                    "ci_lo": r["ci_lo"],
                    "ci_hi": r["ci_hi"],
                    "verdict": r["verdict"],
                }  # fmt: skip
            )
        current = rows
    return current, records


def _evaluate_cut(
    so: StudyOutputs, loaded: Mapping[str, pd.DataFrame], units: Mapping, level: float
) -> list[dict]:
    cut = {}
    for name, df in loaded.items():
        keep = pd.Series(True, index=df.index)
        for unit, values in units.items():
            if unit in df:
                keep &= df[unit].isin(values)
        cut[name] = df[keep]
    return evaluate_study(so, level, sources=cut)


def _units_text(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{n} {u}s" for u, n in counts.items())


def deciding_look(verdicts: Sequence[str]) -> float:
    """The first look from which the verdict stays the last one, when that is decisive
    (NaN: undecided at the last look)."""
    if not verdicts or verdicts[-1] not in DECISIVE:
        return math.nan
    j = len(verdicts)
    while j > 1 and verdicts[j - 2] == verdicts[-1]:
        j -= 1
    return float(j)


def with_looks(
    ledger: pd.DataFrame, records: pd.DataFrame, cpu: Mapping[str, float] | None = None
) -> pd.DataFrame:
    """The ledger with :data:`DECIDE_COLUMNS`: the units at each look ("3 seeds -> 5
    seeds"), the deciding look, and ``cpu`` (study -> CPU-s the plans spent on it)."""
    out = ledger.copy()
    looks, deciding, levels = [], [], []
    groups = {k: g.sort_values("look") for k, g in records.groupby(KEY, sort=False)}
    for r in out.itertuples(index=False):
        g = groups.get((r.study, r.id, r.setting))
        if g is None:
            looks.append("")
            deciding.append(math.nan)
            levels.append(math.nan)
            continue
        looks.append(" -> ".join(f"{int(n)}" for n in g["n"]))
        deciding.append(deciding_look(list(g["verdict"])))
        levels.append(float(g["level"].iloc[-1]))
    out["looks"] = looks
    out["deciding_look"] = deciding
    out["look_level"] = levels
    out["decide_cpu_s"] = [float((cpu or {}).get(s, 0.0)) for s in out["study"]]
    return out[[*COLUMNS, *DECIDE_COLUMNS]]


def job_cpu(log_text: str) -> float | None:
    """A job's CPU-s from its log's ``phases`` line (workflow_scripts/_job.py), or None."""
    found = PHASES.findall(log_text)
    return float(found[-1]) if found else None


def looks_rows(ledger: pd.DataFrame, records: pd.DataFrame) -> pd.DataFrame:
    """One row per ledger row judged at more than one look: the units (the interval's n)
    and the verdict at each look, the levels, the deciding look and the CPU-s of its study
    (a ledger from :func:`with_looks`)."""
    cols = ["study", "claim id", "setting", "units at each look", "level at each look",
            "verdict at each look", "deciding look", "CPU-s (study)"]  # fmt: skip
    groups = {k: g.sort_values("look") for k, g in records.groupby(KEY, sort=False)}
    out = []
    for r in ledger.itertuples(index=False):
        g = groups.get((r.study, r.id, r.setting))
        if g is None or len(g) < 2 or not (g["n"] > 0).any():
            continue  # one look, or never measured (not run, not applicable)
        levels = " -> ".join(f"{100 * v:.2f} %" for v in g["level"])
        dl = "-" if pd.isna(r.deciding_look) else str(int(r.deciding_look))
        out.append([r.study, r.id, r.setting, r.looks, levels, " -> ".join(g["verdict"]), dl,
                    f"{r.decide_cpu_s:,.0f}"])  # fmt: skip
    return pd.DataFrame(out, columns=cols)


def looks_markdown(rows: pd.DataFrame) -> str:
    """:func:`looks_rows` as a markdown section."""
    lines = ["## Looks (snakemake decide)", "", "| " + " | ".join(rows.columns) + " |",
             "|" + "---|" * len(rows.columns)]  # fmt: skip
    lines += ["| " + " | ".join(str(v) for v in r) + " |" for r in rows.itertuples(index=False)]
    if rows.empty:
        lines.append("\nNo row has had a second look.")
    return "\n".join(lines) + "\n"


def looks_html(rows: pd.DataFrame) -> str:
    """:func:`looks_rows` as an HTML section (escaped)."""
    table = rows.to_html(index=False, escape=True, border=0) if not rows.empty else (
        "<p>No row has had a second look.</p>")  # fmt: skip
    return f'<section id="looks"><h2>Looks (snakemake decide)</h2>{table}</section>'
