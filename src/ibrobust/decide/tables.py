"""The plan and a look's outcome, readable: markdown of :class:`~ibrobust.decide.planner.Plan`
(per unit list, per row) and of the ledger after a look (predicted beside measured CPU-s,
verdict counts). Pure functions of the tables."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path

import pandas as pd

from ibrobust.decide.planner import Plan


def cpu_by_study(jobs: Iterable[tuple[str, float | None]], studies: Iterable[str]) -> dict:
    """CPU-s per study of ``(log path, CPU-s)`` pairs: a job log lies at
    ``results/logs/<rule>/<study>/...`` (else it is ``shared``: datasets, ledgers)."""
    names, out = set(studies), {}
    for path, cpu in jobs:
        if cpu is None:
            continue
        parts = Path(path).parts
        at = parts.index("logs") + 2 if "logs" in parts else len(parts)
        study = parts[at] if at < len(parts) - 1 and parts[at] in names else "shared"
        out[study] = out.get(study, 0.0) + cpu
    return out


def apply_command(plan_yaml: str) -> str:
    """The command that applies a plan: the target before ``--configfile``, which takes
    every word after it as a config file (``--configfile plan.yaml decide`` reads a config
    file named ``decide``)."""
    return f"snakemake decide --configfile {plan_yaml}"


def _n(v, fmt: str = "{:.0f}") -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)) or v == "":
        return "-"
    return fmt.format(v)


def plan_markdown(plan: Plan, ledger_path: str = "") -> str:
    """The plan: its unit lists (units now -> planned, CPU-s, expected rows decided) and its
    rows (threshold, units needed, chance, outcome)."""
    k = plan.keys
    added = k[k.added > 0]
    decided = float(k.expected_decided.sum()) if not k.empty else 0.0
    lines = [
        "# snakemake decide: the plan",
        "",
        f"Ledger {ledger_path or '(given)'}; budget {plan.budget_cpu_s:,.0f} CPU-s; predicted "
        f"{plan.predicted_cpu_s:,.0f} CPU-s; {len(plan.rows)} rows inconclusive or fragile, "
        f"{int((plan.rows.added > 0).sum())} of them get units; expected rows decided "
        f"{decided:.1f}.",
        "",
        "| unit list | look | level | units | planned | added | CPU-s / unit | CPU-s | rows | "
        "expected decided |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in k.itertuples(index=False):
        lines.append(
            f"| {r.key} | {r.look} | {100 * r.level:.2f} % | {r.units} | {r.units_planned} | "
            f"{r.added} | {_n(r.cpu_per_unit)} | {r.cpu_s:,.0f} | {r.rows} | "
            f"{r.expected_decided:.2f} |"
        )
    if added.empty:
        lines.append("\nNo unit list is extended: nothing fits the budget.")
    lines += [
        "",
        "| study | claim id | setting | verdict | fragile | units | threshold | needed | "
        "planned | chance | outcome |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in plan.rows.itertuples(index=False):
        lines.append(
            f"| {r.study} | {r.id} | {r.setting} | {r.verdict} | {r.fragile} | {_n(r.units)} | "
            f"{_n(r.threshold, '{:.3g}')} | {_n(r.units_needed)} | {_n(r.units_planned)} | "
            f"{_n(r.chance, '{:.2f}')} | {r.outcome} |"
        )
    return "\n".join(lines) + "\n"


def look_summary(
    before: pd.DataFrame,
    after: pd.DataFrame,
    predicted: Mapping[str, float],
    measured: Mapping[str, float] | None,
) -> str:
    """A look's outcome: predicted and measured CPU-s per study (``measured``: from
    :func:`cpu_by_study`; None: no plan to date the look's jobs by), verdicts before and
    after, inconclusive and fragile rows left."""

    def counts(df: pd.DataFrame) -> str:
        c = df.verdict.value_counts()
        return ", ".join(f"{v} {n}" for v, n in c.items())

    def fragile(df: pd.DataFrame) -> str:
        flags = df.fragile.astype(str).str.lower()
        if flags.isin(("", "nan")).all():  # the look records keep no fragility
            return "not recorded"
        return str(int(flags.eq("true").sum()))

    total = None if measured is None else sum(measured.values())
    lines = [
        "# snakemake decide: the look",
        "",
        f"Predicted CPU-s (the plans): {sum(predicted.values()):,.0f} "
        f"({', '.join(f'{s} {v:,.0f}' for s, v in predicted.items()) or 'none'}); measured "
        f"(the jobs' own records since the plan): "
        f"{'-' if total is None else f'{total:,.0f}'}.",
        "",
    ]
    if measured is not None:
        lines += [
            "| study | predicted CPU-s | measured CPU-s |",
            "|---|---|---|",
            *(
                f"| {s} | {_n(predicted.get(s))} | {_n(measured.get(s))} |"
                for s in [*predicted, *(s for s in measured if s not in predicted)]
            ),
            "",
            "Measured counts every job the look ran: for a study never built before, its "
            "first units too (the plan prices only the units it adds); `shared` is the "
            "datasets and other jobs of no one study.",
            "",
        ]
    lines += [
        f"Before: {counts(before)}; fragile {fragile(before)}.",
        f"After: {counts(after)}; fragile {fragile(after)}.",
        "",
        "What changed, row by row: `ibrobust claims diff BEFORE.csv results/decide/look<k>/claims.csv`.",
    ]
    return "\n".join(lines) + "\n"
