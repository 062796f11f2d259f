"""Is a verdict the same across the settings the source leaves open? (issue 45 item 3)

The sweeps and what their sibling studies change: :mod:`ibrobust.ledger.siblings`.

:func:`sensitivity` compares each base-ledger row with the same claim (id, and its n-th
row of that id in the study) in every sibling's ledger, both judged under whatever rules
the ledgers were built with:

* a sibling with an interval is compared by its verdict: it *flips* when its verdict is
  decisive (holds, holds weaker, does not hold) and differs from the base's; an
  inconclusive sibling decides nothing;
* a sibling on one unit (no interval: a one-seed *screen*) is compared by where its mean
  lies in the rule's regions (:func:`point_region`) against where the base's mean lies:
  it flips when the two regions differ (a screen's flip is rerun on three units);

and :func:`annotate` writes per base row ``setting_dependent`` (True: some sibling flips;
False: every sibling of every setting swept agrees; empty: not assessed) and
``setting_dependent_reason``, naming the setting and the values where it flips. Pure
pandas on ledger tables (:data:`ibrobust.ledger.table.COLUMNS`) and plain config dicts.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import pandas as pd

from ibrobust.claims.verdicts import FAILS, HOLDS, JUDGED, WEAKER
from ibrobust.ledger.recorded import interval_verdict, recorded_rows  # noqa: F401 (re-exported)
from ibrobust.ledger.siblings import (  # noqa: F401 (re-exported: the CLI, the rules, tests)
    SEP,
    Change,
    Sibling,
    _num,
    _show,
    base_name,
    cost_factor,
    cost_table,
    pending_reasons,
    profile_cpu_s,
    sibling_of,
    siblings,
)

__all__ = [
    "SEP",
    "Change",
    "Sibling",
    "base_name",
    "sibling_of",
    "siblings",
]  # and this module's own

DECISIVE = (HOLDS, WEAKER, FAILS)
SENSITIVITY_COLUMNS = [
    "study",
    "id",
    "nth",
    "setting",
    "base_verdict",
    "base_mean",
    "sibling",
    "changed",
    "cut",
    "verdict",
    "mean",
    "ci_lo",
    "ci_hi",
    "n",
    "compared",
    "region",
    "flips",
]


def point_region(row: Mapping) -> str | None:
    """Where a row's mean lies in its rule's regions: holds (the strong region), holds weaker
    (the weak one), does not hold (outside it), from the row's ``strong_lo`` .. ``weak_hi``;
    None without a mean or bounds. A screen's verdict on one unit, which gives no interval."""
    m = _num(row.get("ours_mean"))
    bounds = [_num(row.get(k)) for k in ("strong_lo", "strong_hi", "weak_lo", "weak_hi")]
    if math.isnan(m) or any(math.isnan(b) for b in bounds):
        return None
    s_lo, s_hi, w_lo, w_hi = bounds
    if s_lo <= m <= s_hi:
        return HOLDS
    return WEAKER if w_lo <= m <= w_hi else FAILS


def _has_interval(row: Mapping) -> bool:
    return not math.isnan(_num(row.get("ci_lo")))


def compare(base: Mapping, sib: Mapping) -> tuple[str, bool | None]:
    """(how, flips): ``interval`` when the sibling has an interval (flips: its decisive
    verdict differs from the base's; None: inconclusive), ``screen`` when it has one unit
    (flips: :func:`point_region` of the two means differ), ``none`` when it was not judged."""
    if sib["verdict"] not in JUDGED:
        return "none", None
    if _has_interval(sib):
        if sib["verdict"] not in DECISIVE:
            return "interval", None
        return "interval", sib["verdict"] != base["verdict"]
    a, b = point_region(base), point_region(sib)
    if a is None or b is None:
        return "screen", None
    return "screen", a != b


def _keyed(df: pd.DataFrame) -> pd.DataFrame:
    return df.assign(_nth=df.groupby(["study", "id"], sort=False).cumcount())


def sensitivity(
    base: pd.DataFrame, sweep: pd.DataFrame, sibs: Mapping[str, Sibling]
) -> pd.DataFrame:
    """One row per (base row, sibling study) of the base ledger's judged rows whose study
    has siblings in ``sibs`` with rows in the ``sweep`` ledger (:data:`SENSITIVITY_COLUMNS`):
    the sibling's setting, verdict and interval, how it was compared and whether it flips."""
    b = _keyed(base)
    b = b[b["verdict"].isin(JUDGED)]
    s = _keyed(sweep[sweep["study"].isin(list(sibs))])
    by = {(r["study"], r["id"], r["_nth"]): r for _, r in s.iterrows()}
    by_setting = {(r["study"], r["id"], r["setting"]): r for _, r in s.iterrows()}
    out = []
    for _, r in b.iterrows():
        for name, sib in sibs.items():
            if sib.base != r["study"]:
                continue
            # the same setting text, else the n-th row of the id (a sibling's d or width
            # may appear in its setting text)
            row = by_setting.get((name, r["id"], r["setting"]))
            if row is None:
                row = by.get((name, r["id"], r["_nth"]))
            if row is None:
                continue
            how, flips = compare(r, row)
            if how == "none":  # the sibling does not judge it (a cut part): says nothing
                continue
            out.append(
                dict(
                    study=r["study"],
                    id=r["id"],
                    nth=int(r["_nth"]),
                    setting=r["setting"],
                    base_verdict=r["verdict"],
                    base_mean=_num(r["ours_mean"]),
                    sibling=name,
                    changed=sib.label(),
                    cut=", ".join(c.key for c in sib.cuts),
                    verdict=row["verdict"],
                    mean=_num(row["ours_mean"]),
                    ci_lo=_num(row["ci_lo"]),
                    ci_hi=_num(row["ci_hi"]),
                    n=int(_num(row["n"])) if not math.isnan(_num(row["n"])) else 0,
                    compared=how,
                    region=point_region(row) if how == "screen" else "",
                    flips="" if flips is None else flips,
                )
            )
    return pd.DataFrame(out, columns=SENSITIVITY_COLUMNS)


def flag(rows: pd.DataFrame) -> tuple[bool | str, str]:
    """(setting_dependent, reason) of one base row from its :func:`sensitivity` rows:
    True naming each setting and value where the verdict flips (and a screen's flip as
    such); False when every sibling gives the base verdict; "" (not assessed) when none
    decides."""
    if rows.empty:
        return "", ""
    flipped = rows[rows["flips"].astype(str) == "True"]
    same = rows[rows["flips"].astype(str) == "False"]
    open_ = rows[rows["flips"].astype(str) == ""]
    parts = []
    if len(flipped):
        screens = (flipped["compared"] == "screen").any()
        parts.append(
            "flips at "
            + "; ".join(f"{r['changed']}: {_reading(r)}" for _, r in flipped.iterrows())
            + ("; a 1-unit screen's flip needs 3 units to confirm" if screens else "")
        )
    if len(same):
        parts.append(
            "same at " + "; ".join(f"{r['changed']} ({_reading(r)})" for _, r in same.iterrows())
        )
    if len(open_):
        parts.append(
            "undecided at "
            + "; ".join(f"{r['changed']} ({r['verdict']})" for _, r in open_.iterrows())
        )
    reason = "; ".join(parts)
    if len(flipped):
        return True, reason
    if len(same):
        return (False, reason) if not len(open_) else ("", f"not assessed: {reason}")
    return "", f"not assessed: {reason}"


def _reading(r: Mapping) -> str:
    """``does not hold, 0.049`` or, for a screen, ``mean 0.049 in holds weaker (1 unit)``."""
    if r["compared"] == "screen":
        return f"mean {r['mean']:.3g} in {r['region'] or 'no region'} (1 unit)"
    iv = "" if math.isnan(_num(r["ci_lo"])) else f" [{r['ci_lo']:.3g}, {r['ci_hi']:.3g}]"
    return f"{r['verdict']}, {r['mean']:.3g}{iv} (n {r['n']})"


def annotate(
    base: pd.DataFrame, table: pd.DataFrame, pending: Mapping[str, str] | None = None
) -> pd.DataFrame:
    """``base`` with ``setting_dependent`` / ``setting_dependent_reason`` filled from the
    :func:`sensitivity` ``table``; a study in ``pending`` (study -> why its sweep did not
    run, e.g. its overlay and estimated cost) gets "not assessed: <why>" on rows without
    siblings."""
    out = base.copy()
    dep, why = [], []
    keyed = _keyed(out)
    for _, r in keyed.iterrows():
        rows = table[
            (table["study"] == r["study"]) & (table["id"] == r["id"]) & (table["nth"] == r["_nth"])
        ]
        f, reason = flag(rows)
        if rows.empty and pending and r["study"] in pending and r["verdict"] in JUDGED:
            reason = f"not assessed: {pending[r['study']]}"
        dep.append(f)
        why.append(reason)
    out["setting_dependent"] = dep
    out["setting_dependent_reason"] = why
    return out


# ---- cost ---------------------------------------------------------------------------------
NEGATIVE = (FAILS, WEAKER)  # the verdicts item 3 sweeps


def sensitivity_markdown(
    annotated: pd.DataFrame,
    table: pd.DataFrame,
    costs: pd.DataFrame,
    header: str = "",
    recorded: Iterable[str] = (),
) -> str:
    """The sensitivity table: per negative or weaker base row (does not hold, holds weaker)
    its flag and, per sibling, the setting, its value, the sibling's reading and whether it
    flips; then the cost of every sibling."""
    out = [
        "# Settings the source leaves open: is each verdict the same across them?",
        "",
        header
        or "Generated by `ibrobust claims sweep` (`ibrobust.ledger.sensitivity`) from the "
        "base ledger and the sweep siblings' ledger; never edited by hand.",
        "",
        "| study | id | setting | verdict | setting-dependent | sibling: setting = value "
        "(base) | its reading | flips |",
        "|---" * 8 + "|",
    ]
    keyed = _keyed(annotated)  # a row's n-th among its id's rows in the whole ledger
    for _, r in keyed[keyed["verdict"].isin(NEGATIVE)].iterrows():
        rows = table[
            (table["study"] == r["study"]) & (table["id"] == r["id"]) & (table["nth"] == r["_nth"])
        ]
        dep = r["setting_dependent"]
        flag_text = {True: "**yes**", False: "no"}.get(dep, "not assessed")
        head = [r["study"], f"`{r['id']}`", r["setting"], r["verdict"], flag_text]
        if rows.empty:
            reason = str(r["setting_dependent_reason"]) or "not assessed: no sweep declared"
            out.append(_md_row([*head, reason, "", ""]))
            continue
        for i, (_, s) in enumerate(rows.iterrows()):
            cells = head if i == 0 else ["", "", "", "", ""]
            flips = {"True": "**flips**", "False": "same"}.get(str(s["flips"]), "undecided")
            out.append(_md_row([*cells, _sibling_text(s), _reading(s), flips]))
    out += _cost_lines(costs, list(recorded))
    return "\n".join(out) + "\n"


def _cost_lines(costs: pd.DataFrame, recorded: list[str]) -> list[str]:
    """The sensitivity table's second part: the cost of every sibling."""
    out: list[str] = []
    out += [
        "",
        "## Cost of each sibling",
        "",
        "Estimated CPU-s: an upper bound, the base study's CPU-s in the profile x the "
        "sibling's cut (list-length ratios) x the ratio of any step cap it raises "
        "(`ibrobust.ledger.sensitivity.cost_factor`).",
        "",
        "| overlay | study | sibling | changes | cut | base study CPU-s | est. CPU-s | ran |",
        "|---" * 8 + "|",
    ]
    if recorded:
        out[-4] += (
            " Siblings measured earlier and kept as numbers (not rerun, no cost here): "
            + ", ".join(f"`{r}`" for r in recorded)
            + "; their intervals are t over the recorded units, judged by the base row's "
            "rule as the base ledger states it."
        )
    for _, c in costs.iterrows():
        out.append(
            _md_row(
                [
                    c["overlay"],
                    c["study"],
                    c["sibling"],
                    c["changed"],
                    c["cut"],
                    f"{c['base_cpu_s']:,.0f}",
                    f"{c['estimated_cpu_s']:,.0f}",
                    "yes" if c["ran"] else "**no**",
                ]  # fmt: skip
            )
        )
    return out


def _sibling_text(s: Mapping) -> str:
    return f"`{s['sibling']}`: {s['changed']}"


def _md_row(cells: list) -> str:
    return "| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in cells) + " |"


# ---- recorded sweeps: siblings measured earlier, kept as numbers --------------------------
