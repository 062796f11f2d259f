"""What changed between two claims ledgers (``ibrobust claims diff BEFORE.csv AFTER.csv``).

Rows are matched on (study, claim id, setting); a key in one ledger only is *added* or
*removed*. For a matched row: whether its rule changed (its bounds ``strong_lo`` ...
``weak_hi``, its form or its measure, where both ledgers record them: column ``rule``,
e.g. "strong [1.5, inf] -> [1, inf]"), whether its verdict changed, and whether its value moved by
more than the two intervals allow: the difference after - before gets the interval of
:func:`ibrobust.ledger.trend.difference` (half-width sqrt(h_before^2 + h_after^2) on each
side, the two ledgers being independent runs), and the value *moved* when that interval
excludes 0, else it is *within* them; a row without an interval in either ledger (one unit,
not run, or a ledger from before intervals) is *no interval*. Pure pandas on ledger tables
as :func:`ibrobust.ledger.render.read_ledger` reads them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from ibrobust.claims.sources import SummaryError
from ibrobust.ledger.render import units_text
from ibrobust.ledger.trend import difference

KEY = ["study", "id", "setting"]
ADDED, REMOVED, CHANGED, UNCHANGED = "added", "removed", "changed", "unchanged"
MOVED, WITHIN, NO_INTERVAL = "moved", "within", "no interval"
SIDES = ("before", "after")
FIELDS = (
    "verdict",
    "reason",
    "ours_mean",
    "ci_lo",
    "ci_hi",
    "n",
    "unit",
    "points",
    "strong_lo",
    "strong_hi",
    "weak_lo",
    "weak_hi",
    "form",
    "measure",
)  # per side
DIFF_COLUMNS = [
    *KEY,
    "status",  # added / removed / changed (rule, verdict or value) / unchanged
    "rule",  # matched rows: what of the rule changed (bounds, form, measure), or empty
    *(f"{f}_{side}" for side in SIDES for f in FIELDS),
    "difference",  # after - before of ours_mean
    "difference_lo",
    "difference_hi",
    "value",  # matched rows: moved / within / no interval
]


def diff_ledgers(
    before: pd.DataFrame, after: pd.DataFrame, names: Sequence[str] = SIDES
) -> pd.DataFrame:
    """One row per key of either ledger (:data:`DIFF_COLUMNS`): the after ledger's rows in
    its order, then the removed ones in the before ledger's. ``names`` (the two files) name
    a ledger in the SummaryError raised when it holds a key twice."""
    b, a = (_by_key(df, name) for df, name in zip((before, after), names, strict=True))
    keys = [*a, *(k for k in b if k not in a)]
    return pd.DataFrame([_compare(k, b.get(k), a.get(k)) for k in keys], columns=DIFF_COLUMNS)


def _by_key(df: pd.DataFrame, name: str) -> dict[tuple, pd.Series]:
    out: dict[tuple, pd.Series] = {}
    for _, r in df.iterrows():
        key = tuple(r[KEY])
        if key in out:
            raise SummaryError(
                f"{name}: the key (study, id, setting) = {key} is on two rows; a ledger "
                "holds each claim and setting once"
            )
        out[key] = r
    return out


def _compare(key: tuple, b: pd.Series | None, a: pd.Series | None) -> dict:
    row: dict = dict(zip(KEY, key, strict=True))
    for side, r in zip(SIDES, (b, a), strict=True):
        row.update({f"{f}_{side}": (r[f] if r is not None else None) for f in FIELDS})
    if b is None or a is None:
        return row | dict(status=ADDED if b is None else REMOVED, value="")
    d, lo, hi = difference(b, a)
    if not all(_has_interval(r) for r in (b, a)):
        value, lo, hi = NO_INTERVAL, math.nan, math.nan
    else:
        value = MOVED if lo > 0 or hi < 0 else WITHIN
    rule = rule_change(b, a)
    changed = b["verdict"] != a["verdict"] or value == MOVED or bool(rule)
    return row | dict(
        status=CHANGED if changed else UNCHANGED,
        rule=rule,
        difference=d,
        difference_lo=lo,
        difference_hi=hi,
        value=value,
    )


def _bounds(r: pd.Series, which: str) -> tuple[float, float] | None:
    lo, hi = (float(r.get(f"{which}_{e}", math.nan)) for e in ("lo", "hi"))
    return None if math.isnan(lo) or math.isnan(hi) else (lo, hi)


def _iv(b: tuple[float, float]) -> str:
    return f"[{b[0]:g}, {b[1]:g}]"


def rule_change(b: pd.Series, a: pd.Series) -> str:
    """What of a matched row's rule changed between the two ledgers: its strong or weak
    bounds, its form, its measure; only what both ledgers record (an older ledger without
    the columns says nothing). Empty when nothing did."""
    out = []
    for which in ("strong", "weak"):
        x, y = _bounds(b, which), _bounds(a, which)
        if x is not None and y is not None and x != y:
            out.append(f"{which} {_iv(x)} -> {_iv(y)}")
    for col in ("form", "measure"):
        x, y = str(b.get(col, "") or ""), str(a.get(col, "") or "")
        if x and y and " ".join(x.split()) != " ".join(y.split()):
            out.append(f"form {x} -> {y}" if col == "form" else "measure changed")
    return "; ".join(out)


def _has_interval(r: pd.Series) -> bool:
    return not any(math.isnan(float(r[c])) for c in ("ours_mean", "ci_lo", "ci_hi"))


def diff_csv(table: pd.DataFrame, show_unchanged: bool = False) -> str:
    """The diff as CSV: every row but the unchanged ones (all with ``show_unchanged``)."""
    return _shown(table, show_unchanged).to_csv(index=False)


def _shown(table: pd.DataFrame, show_unchanged: bool) -> pd.DataFrame:
    return table if show_unchanged else table[table["status"] != UNCHANGED]


def diff_markdown(
    table: pd.DataFrame, names: Sequence[str] = SIDES, show_unchanged: bool = False
) -> str:
    """The diff as markdown: a counts line naming the two ledgers (``names``), then tables of
    the verdict changes, the values that moved, the added and the removed rows (and the
    unchanged ones with ``show_unchanged``). Headed by bold labels, not headings, so that it
    sits under any heading of the page it is pasted into."""
    both = table[table["status"].isin([CHANGED, UNCHANGED])]
    verdict = both[both["verdict_before"] != both["verdict_after"]]
    ruled = both[both["rule"].fillna("") != ""]
    n = table["status"].value_counts().to_dict() | both["value"].value_counts().to_dict()
    out = [
        f"Before: `{names[0]}` ({len(table) - n.get(ADDED, 0)} claims); after: `{names[1]}` "
        f"({len(table) - n.get(REMOVED, 0)} claims). {len(both)} in both: {len(verdict)} "
        f"changed verdict, {len(ruled)} changed rule; values {n.get(MOVED, 0)} moved beyond their intervals, "
        f"{n.get(WITHIN, 0)} within them, {n.get(NO_INTERVAL, 0)} without an interval in one "
        f"ledger or both. {n.get(ADDED, 0)} added, {n.get(REMOVED, 0)} removed.",
        "",
    ]
    sections = [
        ("Rule changes", ruled, ["rule", "verdict", "before: value", "after: value"]),
        (
            "Verdict changes",
            verdict,
            ["before", "after", "before: value", "after: value", "before: reason", "after: reason"],
        ),
        (
            "Values that moved beyond their intervals",
            both[both["value"] == MOVED],
            ["verdict", "before: value", "after: value", "after - before"],
        ),
        ("Added", table[table["status"] == ADDED], ["verdict", "value"]),
        ("Removed", table[table["status"] == REMOVED], ["verdict", "value"]),
    ]
    if show_unchanged:
        sections.append(
            (
                "Unchanged",
                table[table["status"] == UNCHANGED],
                ["verdict", "before: value", "after: value", "after - before"],
            )
        )
    for title, rows, columns in sections:
        out += [f"**{title}** ({len(rows)})", ""]
        out += _table(rows, columns) if len(rows) else ["(none)"]
        out.append("")
    return "\n".join(out)


def _table(rows: pd.DataFrame, columns: list[str]) -> list[str]:
    head = ["study", "claim", "setting", *columns]
    out = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for _, r in rows.iterrows():
        cells = [r["study"], f"`{r['id']}`", r["setting"], *(_cell(r, c) for c in columns)]
        out.append(
            "| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in cells) + " |"
        )
    return out


def _cell(r: pd.Series, column: str) -> str:
    side = "after" if r["status"] != REMOVED else "before"
    if column in SIDES:
        return str(r[f"verdict_{column}"])
    if column == "verdict":  # one side's, or before -> after when it changed
        if r["status"] in (ADDED, REMOVED) or r["verdict_before"] == r["verdict_after"]:
            return str(r[f"verdict_{side}"])
        return f"{r['verdict_before']} -> {r['verdict_after']}"
    if column == "rule":
        return str(r["rule"] or "")
    if column.endswith(": reason"):
        return str(r[f"reason_{column.split(':')[0]}"] or "")
    if column.endswith(": value"):
        side = column.split(":")[0]
    if column == "after - before":
        return _value(r["difference"], r["difference_lo"], r["difference_hi"], sign=True)
    value = _value(r[f"ours_mean_{side}"], r[f"ci_lo_{side}"], r[f"ci_hi_{side}"])
    n = r[f"n_{side}"]
    if value == "-" or n is None or n == "" or pd.isna(n):  # no value, or a ledger without n
        return value
    units = dict(n=n, unit=r[f"unit_{side}"], points=r[f"points_{side}"] or 0)
    return f"{value} ({units_text(units)})"


def _value(mean: float, lo: float, hi: float, sign: bool = False) -> str:
    """``0.961 [0.954, 0.968]``; ``-`` without a value; the mean alone without an interval."""
    if mean is None or math.isnan(float(mean)):
        return "-"
    text = f"{float(mean):+.4g}" if sign else f"{float(mean):.4g}"
    if lo is None or math.isnan(float(lo)) or math.isnan(float(hi)):
        return text
    return f"{text} [{float(lo):.4g}, {float(hi):.4g}]"
