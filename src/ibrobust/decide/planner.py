"""The plan: which units to add, within a CPU budget, to decide the most ledger rows.

For every row of the ledger that is *inconclusive* or *fragile* (dropping one unit changes
its verdict), :func:`plan_units`

1. finds the unit list it stands on (:func:`ibrobust.decide.units.key_of_row`) and the rule
   threshold to move its interval off: for an inconclusive row the weak bound it straddles
   (nearest the center), for a fragile one the bound its interval reaches or comes nearest;
2. leaves it out, with the reason, where more units cannot help: an interval limited by the
   measurement's resolution (a ``resolution`` column, or a reason saying "a finer
   measurement would decide"), censored at a grid's top, over points (a point set is not a
   unit list), one unit (no spread), or a unit list it cannot be told apart from;
3. predicts, from its measured spread (:mod:`ibrobust.decide.power`), the chance that ``m``
   units decide it at the study's next look's level (:mod:`ibrobust.decide.spending`), and
   the units it would need for a ``target`` chance; a fragile row needs one unit more (its
   interval must exclude the bound without any one unit).

Then it chooses greedily by expected rows decided per CPU-s: each step extends the unit list
(to any length up to ``max_units``) that adds the most summed chance over *all* rows on that
list per CPU-s of the extension (:class:`ibrobust.decide.cost.CostModel`: units times their
measured cost, plus the study's aggregate reruns the first time it is touched), while the
budget allows. Units serve every row of their list at once. A row whose list is capped
before its target (an effect near its threshold) stays as it is with the units it would
still need, or, where its rule is a direction from 0 (a weak region [0, inf) or (-inf, 0]),
reads as *no effect larger than X* with X the far end of its predicted interval at the units
planned (the equivalence read; the ledger's verdict is unchanged).

The plan is returned as tables (:data:`PLAN_COLUMNS` per row, :data:`KEY_COLUMNS` per unit
list) and as a config overlay (:func:`overlay`): the extended lists under ``studies`` and the
record of looks under ``decide.looks`` (the units of every list at each look).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ibrobust.decide.cost import CostModel
from ibrobust.decide.power import chance_to_decide, critical, units_for
from ibrobust.decide.spending import Spending
from ibrobust.decide.units import (
    UnitKey,
    extended,
    key_of_row,
    overlay_path,
    study_look,
    unit_keys,
)

INCONCLUSIVE = "inconclusive"
RESOLUTION = re.compile(r"finer measurement would decide", re.I)
POINTS = re.compile(r"\bpoints?\b")  # "500 points", "(point, checkpoint) pairs"; not "checkpoint"
FAR = 10_000  # units beyond which "would need" reads as "no number of units decides"

PLAN_COLUMNS = [
    "study", "id", "setting", "verdict", "fragile", "key", "units", "threshold",
    "look", "level", "units_needed", "units_planned", "added", "chance", "cpu_s", "outcome",
]  # fmt: skip
KEY_COLUMNS = [
    "key", "study", "look", "level", "units", "units_planned", "added", "cpu_per_unit",
    "cpu_s", "rows", "expected_decided",
]  # fmt: skip


@dataclass(frozen=True)
class PlanSettings:
    """``decide.budget_cpu_s``, ``decide.max_units`` (no unit list grows past it),
    ``decide.target`` (the chance a row's "units needed" reaches)."""

    budget_cpu_s: float = 3600.0
    max_units: int = 30
    target: float = 0.8

    def __post_init__(self) -> None:
        if not self.budget_cpu_s >= 0:
            raise ValueError(f"decide.budget_cpu_s must be >= 0, got {self.budget_cpu_s}")
        if self.max_units < 2:
            raise ValueError(f"decide.max_units must be >= 2, got {self.max_units}")
        if not 0 < self.target < 1:
            raise ValueError(f"decide.target must be in (0, 1), got {self.target}")


@dataclass(frozen=True)
class Candidate:
    """A row the plan may decide: its list, the threshold, and its measured spread in the
    list's units (``u`` units behind its interval now)."""

    index: int
    key: UnitKey
    threshold: float
    dist: float
    sigma: float
    u: int
    t_based: bool
    fragile: bool
    level: float  # the next look's

    def chance(self, count: int) -> float:
        """The chance that the list at ``count`` units decides the row."""
        m = self.u + (count - len(self.key.values)) - (1 if self.fragile else 0)
        if count <= len(self.key.values) or m < self.u:
            return 0.0
        return float(chance_to_decide(self.dist, self.sigma, self.u, m, self.level, self.t_based))

    def needed(self, target: float) -> int | None:
        """The list's units for a ``target`` chance (None: not within :data:`FAR`)."""
        m = units_for(self.dist, self.sigma, self.u, self.level, target, FAR, self.t_based)
        if m is None:
            return None
        return len(self.key.values) + (m - self.u) + (1 if self.fragile else 0)


@dataclass(frozen=True)
class Plan:
    rows: pd.DataFrame  # PLAN_COLUMNS
    keys: pd.DataFrame  # KEY_COLUMNS
    counts: dict[str, int]  # unit list -> its planned length (every list of the config)
    predicted_cpu_s: float
    budget_cpu_s: float


def _is_true(v) -> bool:
    return str(v).strip().lower() in ("true", "1", "yes")


def _finite(*vs) -> list[float]:
    out = []
    for v in vs:
        try:
            f = float(v)
        except (TypeError, ValueError):
            continue
        if math.isfinite(f):
            out.append(f)
    return out


def _threshold(row: Mapping) -> float | None:
    lo, hi, c = float(row["ci_lo"]), float(row["ci_hi"]), float(row["ours_mean"])
    if row["verdict"] == INCONCLUSIVE:
        inside = [t for t in _finite(row["weak_lo"], row["weak_hi"]) if lo <= t <= hi]
        return min(inside, key=lambda t: abs(t - c)) if inside else None
    bounds = _finite(row["strong_lo"], row["strong_hi"], row["weak_lo"], row["weak_hi"])
    if not bounds:
        return None
    return min(bounds, key=lambda t: (max(lo - t, t - hi, 0.0), abs(t - c)))


def _skip(row: Mapping, keys: Sequence[UnitKey]) -> tuple[str | None, UnitKey | None]:
    """Why a row is not planned (None: it is), and its unit list."""
    if (
        "resolution" in row
        and _is_true(row["resolution"])
        or RESOLUTION.search(str(row.get("reason", "")))
    ):
        return "limited by the measurement's resolution: more units do not decide it", None
    if not _finite(row["ci_lo"], row["ci_hi"]) or len(_finite(row["ci_lo"], row["ci_hi"])) < 2:
        if _is_true(row.get("lower_bound", "")):
            return "censored at the grid's top: a larger grid, not more units, decides it", None
        return "no interval (one unit): no spread to plan from", None
    if POINTS.search(str(row["unit"])):
        return "an interval over points: attack points are not planned (a unit list is)", None
    key = key_of_row(keys, str(row["id"]), str(row["setting"]))
    if key is None:
        return "its unit list is ambiguous in the study's config", None
    return None, key


def _candidate(i: int, row: Mapping, key: UnitKey, level_next: float) -> Candidate | str:
    b = _threshold(row)
    if b is None:
        return "no rule threshold within reach of its interval"
    c, lo, hi = float(row["ours_mean"]), float(row["ci_lo"]), float(row["ci_hi"])
    side = c - lo if b < c else hi - c
    if not math.isfinite(side):
        return "censored at the grid's top: a larger grid, not more units, decides it"
    t_based = str(row["ci_method"]).startswith("t over")
    n = int(float(row["n"]))
    u = (
        min(n, len(key.values))
        if str(row["unit"]) in ("seeds", "draws", "runs")
        else len(key.values)
    )
    if u < 2:
        return "no interval (one unit): no spread to plan from"
    # the interval's own level: its look's in a decide ledger (look_level), else the ledger's
    own = _finite(row.get("look_level", ""))
    level = own[0] if own else float(row["level"])
    crit = float(critical(level, u - 1 if t_based else None))
    sigma = side / crit * math.sqrt(u)
    return Candidate(i, key, b, abs(c - b), sigma, u, t_based, _is_true(row["fragile"]), level_next)


def _equivalence(row: Mapping, cand: Candidate, count: int) -> str | None:
    """ "no effect larger than X" where the rule is a direction from 0 (see module doc)."""
    wlo, whi = float(row["weak_lo"]), float(row["weak_hi"])
    if (
        row["verdict"] != INCONCLUSIVE
        or cand.threshold != 0
        or not ((wlo == 0 and whi == math.inf) or (whi == 0 and wlo == -math.inf))
    ):
        return None
    m = cand.u + max(count - len(cand.key.values), 0)
    half = float(critical(cand.level, m - 1 if cand.t_based else None)) * cand.sigma / math.sqrt(m)
    x = abs(float(row["ours_mean"])) + half
    return f"no effect larger than {x:.3g} (predicted at {count} units)"


def plan_units(
    ledger: pd.DataFrame,
    studies: Mapping[str, Mapping],
    cost: CostModel,
    spend: Spending,
    looks: Sequence[Mapping[str, int]] = (),
    settings: PlanSettings = PlanSettings(),
) -> Plan:
    """The plan for ``ledger`` (a ledger table; extra columns are ignored) under the
    studies' config blocks (``studies``: name -> block, validated), the measured ``cost``,
    the declared ``spend`` and the ``looks`` made so far (``decide.looks``)."""
    keys = {s: unit_keys(s, b) for s, b in studies.items()}
    all_keys = {k.name: k for ks in keys.values() for k in ks}
    look_of = {s: study_look(looks, s) for s in studies}
    rows = ledger.reset_index(drop=True)
    todo = rows[(rows["verdict"] == INCONCLUSIVE) | rows["fragile"].map(_is_true)]
    out, cands = _candidates(todo, keys, look_of, spend, settings)
    counts = _choose(cands, cost, settings)
    key_rows, total, seen = [], 0.0, set()
    by_key: dict[str, list[Candidate]] = {}
    for c in cands:
        by_key.setdefault(c.key.name, []).append(c)
    for name, group in by_key.items():
        key = all_keys[name]
        m = counts.get(name, len(key.values))
        added = m - len(key.values)
        cpu = cost.extension_cost(name, key.study, added, key.study in seen)
        if added:
            seen.add(key.study)
        total += cpu
        exp = sum(c.chance(m) for c in group)
        key_rows.append([name, key.study, look_of[key.study] + 1,
                         group[0].level, len(key.values), m, added,
                         cost.per_unit.get(name, np.nan), cpu, len(group), exp])  # fmt: skip
        for c in group:
            out[c.index].update(units_planned=m, added=added, chance=c.chance(m), cpu_s=cpu)
            out[c.index]["outcome"] = _outcome(rows.loc[c.index], c, out[c.index], settings)
    table = pd.DataFrame([out[i] for i in sorted(out)], columns=PLAN_COLUMNS)
    table["units_needed"] = table["units_needed"].astype("object")
    planned = {n: len(k.values) for n, k in all_keys.items()} | counts
    return Plan(table, pd.DataFrame(key_rows, columns=KEY_COLUMNS), planned, total,
                settings.budget_cpu_s)  # fmt: skip


def _candidates(
    todo: pd.DataFrame,
    keys: Mapping[str, list[UnitKey]],
    look_of: Mapping[str, int],
    spend: Spending,
    settings: PlanSettings,
) -> tuple[dict[int, dict], list[Candidate]]:
    """Each row's plan record (the reason where it is not planned) and the candidates."""
    out: dict[int, dict] = {}
    cands: list[Candidate] = []
    for i, row in todo.iterrows():
        rec = {c: row.get(c, "") for c in ("study", "id", "setting", "verdict", "fragile")}
        rec.update(key="", units=np.nan, threshold=np.nan, look=np.nan, level=np.nan,
                   units_needed=np.nan, units_planned=np.nan, added=0, chance=np.nan,
                   cpu_s=0.0)  # fmt: skip
        out[i] = rec
        study = str(row["study"])
        if study not in keys:
            rec["outcome"] = f"not planned: study {study} is not in the config"
            continue
        why, key = _skip(row, keys[study])
        if why is None:
            look = look_of[study] + 1
            cand = _candidate(i, row, key, spend.level_at(look))
            if isinstance(cand, str):
                why = cand
        if why is not None:
            rec["outcome"] = f"not planned: {why}"
            continue
        rec.update(key=key.name, units=len(key.values), threshold=cand.threshold, look=look,
                   level=cand.level, units_needed=cand.needed(settings.target))  # fmt: skip
        cands.append(cand)
    return out, cands


def _outcome(row: Mapping, c: Candidate, rec: Mapping, settings: PlanSettings) -> str:
    """What the plan does for a candidate row (``rec``: its plan record so far)."""
    m, added, need = rec["units_planned"], rec["added"], rec["units_needed"]
    if added and (need is not None and need <= m):
        return f"planned: +{added} units, chance {c.chance(m):.2f}"
    equiv = _equivalence(row, c, max(m, settings.max_units))
    still = "no number of units decides it" if need is None else f"would need {need} units"
    if need is not None and need <= settings.max_units:
        reason = f"{still}; not within the budget"
    else:
        reason = f"{still} (cap {settings.max_units})"
    if added:
        reason = f"+{added} units (its list's), chance {c.chance(m):.2f}; {reason}"
    return f"{reason}; equivalence read: {equiv}" if equiv else reason


def _choose(cands: Sequence[Candidate], cost: CostModel, s: PlanSettings) -> dict[str, int]:
    """Greedy by expected rows decided per CPU-s (see the module docstring): list -> units."""
    by_key: dict[str, list[Candidate]] = {}
    for c in cands:
        by_key.setdefault(c.key.name, []).append(c)
    now = {k: len(g[0].key.values) for k, g in by_key.items()}
    counts = dict(now)
    spent = 0.0

    def cost_at(k: str, m: int) -> float:
        study = by_key[k][0].key.study
        return cost.extension_cost(k, study, m - now[k], _others(k, study, counts, now))

    while True:
        best = None
        for k, group in by_key.items():
            if k not in cost.per_unit:
                continue
            cur = counts[k]
            base, paid = sum(c.chance(cur) for c in group), cost_at(k, cur)
            for m in range(cur + 1, s.max_units + 1):
                gain = sum(c.chance(m) for c in group) - base
                extra = cost_at(k, m) - paid
                if gain <= 1e-3 or extra <= 0 or spent + extra > s.budget_cpu_s:
                    continue
                if best is None or gain / extra > best[0]:
                    best = (gain / extra, k, m, extra)
        if best is None:
            return counts
        _, k, m, extra = best
        counts[k] = m
        spent += extra


def _others(key: str, study: str, counts: Mapping[str, int], now: Mapping[str, int]) -> bool:
    """Whether another list of ``study`` is already extended (its fixed cost paid)."""
    return any(k != key and k.split(".", 1)[0] == study and counts[k] > now[k] for k in counts)


def overlay(
    plan: Plan,
    studies: Mapping[str, Mapping],
    looks: Sequence[Mapping[str, int]],
    spent_before: Mapping[str, float] | None = None,
) -> dict:
    """The plan as a config overlay: every extended unit list under ``studies`` (the whole
    list: a config file replaces a list), ``decide.looks``: the looks so far (the first
    plan records the units before it as look 1) and this plan's units, and
    ``decide.predicted_cpu_s``: per study, the CPU-s the plans so far predicted
    (``spent_before``: the earlier plans')."""
    keys = {k.name: k for s, b in studies.items() for k in unit_keys(s, b)}
    out: dict = {}
    for name, m in plan.counts.items():
        key = keys[name]
        if m > len(key.values):
            node = out
            *head, last = overlay_path(key)
            for p in head:
                node = node.setdefault(p, {})
            node[last] = extended(list(key.values), m - len(key.values))
    before = {n: len(k.values) for n, k in keys.items()}
    history = [dict(x) for x in looks] or [before]
    # a list the last look does not name kept its length (as study_look reads it)
    if any(before.get(k, v) != v for k, v in history[-1].items()):
        raise ValueError(
            "decide.looks' last look does not match the config's unit lists "
            f"({history[-1]} vs {before}): a list was edited outside a decide plan"
        )
    spent = dict(spent_before or {})
    for r in plan.keys.itertuples(index=False):
        spent[r.study] = float(spent.get(r.study, 0.0)) + float(r.cpu_s)
    out["decide"] = {
        "looks": [*history, dict(plan.counts)],
        "predicted_cpu_s": {s: round(v, 1) for s, v in spent.items() if v > 0},
    }
    return out
