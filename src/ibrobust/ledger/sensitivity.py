"""Is a verdict the same across the settings the source leaves open? (issue 45 item 3)

A *sweep* is a config overlay (``configs/sweep_<kind>.yaml``) of *sibling studies*, each
named ``<base>__<tag>`` (:data:`SEP`) after the study it varies, each a copy of its base
study with one setting changed (the initialisation scale, the learning rate, the stopping
loss or time, a width, d, n, a grid), possibly *cut* to the parts and units the swept rows
read (fewer regimes, algorithms, seeds: a sublist of the base's list, or a block dropped).
What a sibling changes is read off the two configs, never typed: :func:`sibling_of` diffs
the sibling's block against its base's, with every registry name (dataset, model,
optimizer, attack) replaced by its entry, into the setting :class:`Change`\\ s and the cuts.

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
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ibrobust.claims.verdicts import FAILS, HOLDS, JUDGED, WEAKER

SEP = "__"  # sibling study name: <base>__<tag>
REGISTRIES = ("datasets", "models", "optimizers", "attacks")  # names a study block refers to
IGNORED = ("enabled", "plots")  # keys that never change a number
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


@dataclass(frozen=True)
class Change:
    """One key path of a study block (registry entries inlined) that differs from its base:
    ``base`` / ``value`` as written (None where absent)."""

    key: str
    base: Any
    value: Any

    def text(self) -> str:
        return f"{self.key} = {_show(self.value)} (base {_show(self.base)})"


@dataclass(frozen=True)
class Sibling:
    """A sweep's sibling study: its base study, the settings it changes, what it cuts."""

    study: str
    base: str
    changes: tuple[Change, ...]
    cuts: tuple[Change, ...] = ()

    def label(self) -> str:
        """``stopping.loss_threshold = 0.001 (base 0.0001)``: the settings it changes, one
        text per (key, base, value); a change made in several entries (GD's and CD's c_scale)
        or reached through several paths (an optimizer the study also names elsewhere) is
        listed once, with the entries it is made in."""
        groups: dict[tuple[str, str, str], list[str]] = {}
        for c in self.changes:
            head, entry, leaf = _split_entry(c.key)
            where = groups.setdefault((leaf, _show(c.base), _show(c.value)), [])
            if entry and entry not in where:
                where.append(entry)
            elif not entry:
                where.append(head)
        out = []
        for (leaf, b, v), where in groups.items():
            entries = [w for w in where if w and w != leaf]
            at = f" in {', '.join(entries)}" if entries else ""
            out.append(f"{leaf} = {v} (base {b}){at}")
        return ", ".join(out)


def _split_entry(key: str) -> tuple[str, str, str]:
    """``optimizers[lin_gd].c_scale`` -> (``optimizers``, ``lin_gd``, ``c_scale``); a key
    without an entry -> (key, "", key)."""
    if "[" in key and "]" in key:
        head, rest = key.split("[", 1)
        entry, leaf = rest.split("]", 1)
        return head, entry, leaf.lstrip(".") or head
    return key, "", key


def base_name(study: str) -> str | None:
    """The base study a sibling's name says (``price_linear__stop1em3`` -> ``price_linear``),
    or None for a study that is not a sibling."""
    base, sep, tag = study.partition(SEP)
    return base if sep and base and tag else None


def _show(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, list):
        return "[" + ", ".join(_show(x) for x in v) + "]"
    return "absent" if v is None else str(v)


# ---- what a sibling changes ---------------------------------------------------------------
def _inline(node: Any, config: Mapping) -> Any:
    """A study block with every string naming a registry entry replaced by ``("entry",
    name, entry)`` (entries are inlined as written: they name kinds, not other entries)."""
    if isinstance(node, Mapping):
        return {k: _inline(v, config) for k, v in node.items() if k not in IGNORED}
    if isinstance(node, list):
        return [_inline(v, config) for v in node]
    if isinstance(node, str):
        for section in REGISTRIES:
            if node in (config.get(section) or {}):
                entry = config[section][node]
                return ("entry", node, {k: v for k, v in entry.items() if k not in IGNORED})
    return node


def _flat(node: Any, prefix: str = "") -> dict[str, Any]:
    """Key path -> scalar or list of scalars; an inlined entry's keys under its path."""
    if isinstance(node, tuple) and node[:1] == ("entry",):
        return _flat(node[2], prefix)
    if isinstance(node, Mapping):
        out: dict[str, Any] = {}
        for k, v in node.items():
            out.update(_flat(v, f"{prefix}.{k}" if prefix else str(k)))
        return out or {prefix: {}}
    return {prefix: node}


def _is_entry(v: Any) -> bool:
    return isinstance(v, tuple) and v[:1] == ("entry",)


def _diff(base: Any, sib: Any, path: str, changes: list, cuts: list) -> None:
    if base == sib:
        return
    if isinstance(base, Mapping) and isinstance(sib, Mapping):
        for k in [*base, *(k for k in sib if k not in base)]:
            where = f"{path}.{k}" if path else str(k)
            if k not in sib:
                cuts.append(Change(where, _plain(base[k]), None))
            else:
                _diff(base.get(k), sib[k], where, changes, cuts)
        return
    if _is_entry(base) and _is_entry(sib):
        _diff(base[2], sib[2], path, changes, cuts)
        return
    if isinstance(base, list) and isinstance(sib, list):
        if any(map(_is_entry, base)) and all(map(_is_entry, sib)):
            _diff_entries(base, sib, path, changes, cuts)
            return
        if sib and all(v in base for v in sib) and len(sib) < len(base):
            cuts.append(Change(path, base, sib))  # a sublist: fewer units or parts
            return
    if isinstance(base, Mapping) and sib is None:  # a block dropped (null): one cut
        cuts.append(Change(path, "a block", None))
        return
    if isinstance(base, Mapping) or isinstance(sib, Mapping):
        # a block against a scalar: every key of the block, as written
        for k, v in _flat(_inline_free(base if isinstance(base, Mapping) else sib)).items():
            where = f"{path}.{k}"
            pair = (v, None) if isinstance(base, Mapping) else (None, v)
            (cuts if sib is None else changes).append(Change(where, *pair))
        return
    changes.append(Change(path, _plain(base), _plain(sib)))


def _inline_free(node: Any) -> Any:
    if _is_entry(node):
        return node[2]
    if isinstance(node, Mapping):
        return {k: _inline_free(v) for k, v in node.items()}
    return node


def _plain(v: Any) -> Any:
    """A value as written: an inlined entry back to its name."""
    if _is_entry(v):
        return v[1]
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, Mapping):
        return {k: _plain(x) for k, x in v.items()}
    return v


def _diff_entries(base: list, sib: list, path: str, changes: list, cuts: list) -> None:
    """A list of registry entries: each sibling entry is paired with the base entry it
    differs least from (keys of their flattened forms); unpaired base entries are cut."""
    free = list(range(len(base)))
    for s in sib:
        if not free:
            changes.append(Change(f"{path}[{s[1]}]", None, s[1]))
            continue
        fs = _flat(s[2])

        def distance(i: int, fs: dict = fs) -> int:
            fb = _flat(base[i][2]) if _is_entry(base[i]) else {"": base[i]}
            return sum(fb.get(k) != fs.get(k) for k in {*fb, *fs})

        best = min(free, key=distance)
        free.remove(best)
        _diff(base[best], s, f"{path}[{s[1]}]", changes, cuts)
    if free:
        cuts.append(Change(path, _plain(base), _plain(sib)))


def sibling_of(config: Mapping, study: str) -> Sibling:
    """The :class:`Sibling` ``study`` of ``config`` (validated: defaults filled, so a default
    written out is no change) against its base (:func:`base_name`). ValueError naming the
    study when its base is missing or of another kind, or when it changes no setting."""
    studies = config["studies"]
    base = base_name(study)
    if base is None:
        raise ValueError(f"studies.{study}: not a sweep sibling (<base>{SEP}<tag>)")
    if base not in studies:
        raise ValueError(f"studies.{study}: its base study {base!r} is not in the config")
    b, s = studies[base], studies[study]
    if b["kind"] != s["kind"]:
        raise ValueError(f"studies.{study}: kind {s['kind']!r}, its base {base!r} is {b['kind']!r}")
    changes: list[Change] = []
    cuts: list[Change] = []
    _diff(_inline(b, config), _inline(s, config), "", changes, cuts)
    if not changes:
        raise ValueError(
            f"studies.{study}: changes no setting of {base!r} (only cuts: "
            f"{', '.join(c.key for c in cuts) or 'none'}); a sibling varies one setting"
        )
    return Sibling(study, base, tuple(changes), tuple(cuts))


def siblings(config: Mapping, studies: Iterable[str] | None = None) -> dict[str, Sibling]:
    """Every sweep sibling of ``config`` (or of ``studies``) -> its :class:`Sibling`."""
    names = config["studies"] if studies is None else studies
    return {s: sibling_of(config, s) for s in names if base_name(s) is not None}


# ---- comparing verdicts -----------------------------------------------------------------
def _num(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


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
STEP_CAPS = ("max_steps", "max_iters", "epochs")  # keys whose ratio bounds a run's length


def cost_factor(sib: Sibling) -> float:
    """An upper bound on a sibling's CPU relative to its base study's: the product of its
    cut lists' length ratios (fewer seeds, regimes, algorithms) and of the ratio of any step
    cap it raises or any list it lengthens (a run stopped at its loss costs less). A dropped
    block counts as kept (its share is not known here), so the bound stays an upper one."""
    f = 1.0
    for c in sib.cuts:
        if isinstance(c.base, list) and isinstance(c.value, list) and c.base:
            f *= len(c.value) / len(c.base)
    for c in sib.changes:
        leaf = c.key.rsplit(".", 1)[-1]
        if leaf in STEP_CAPS and _num(c.base) > 0 and _num(c.value) > _num(c.base):
            f *= _num(c.value) / _num(c.base)
        elif isinstance(c.base, list) and isinstance(c.value, list) and c.base:
            if all(isinstance(v, (int, float)) for v in [*c.base, *c.value]):
                f *= max(1.0, sum(c.value) / sum(c.base))  # e.g. an n grid: work ~ sum of n
            else:
                f *= max(1.0, len(c.value) / len(c.base))
    return f


def cost_table(
    sibs: Mapping[str, Sibling],
    study_cpu_s: Mapping[str, float],
    ran: Iterable[str] = (),
    overlay_of: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Per sibling: its base study, the setting it changes, its cuts, the base study's CPU-s
    in ``study_cpu_s`` (a profile), the upper-bound estimate (:func:`cost_factor`), whether it
    ran, and the overlay declaring it."""
    ran = set(ran)
    rows = []
    for name, s in sibs.items():
        base_cpu = float(study_cpu_s.get(s.base, math.nan))
        rows.append(
            dict(
                overlay=(overlay_of or {}).get(name, ""),
                study=s.base,
                sibling=name,
                changed=s.label(),
                cut="; ".join(f"{c.key} {_show(c.value)}" for c in s.cuts),
                base_cpu_s=base_cpu,
                estimated_cpu_s=base_cpu * cost_factor(s),
                ran=name in ran,
            )
        )
    return pd.DataFrame(
        rows,
        columns=[
            "overlay",
            "study",
            "sibling",
            "changed",
            "cut",
            "base_cpu_s",
            "estimated_cpu_s",
            "ran",
        ],  # fmt: skip
    )


def profile_cpu_s(profile: pd.DataFrame) -> dict[str, float]:
    """Study -> the CPU-s of its jobs in a job profile (benchmarks/profiles/*.csv: one row per
    job, columns ``study`` and ``cpu``)."""
    return {str(k): float(v) for k, v in profile.groupby("study")["cpu"].sum().items()}


def pending_reasons(costs: pd.DataFrame) -> dict[str, str]:
    """Base study -> "sweep <overlay> not run (<siblings>: ~N CPU-s)" for the studies whose
    siblings in ``costs`` did not run."""
    out = {}
    todo = costs[~costs["ran"].astype(bool)]
    for study, g in todo.groupby("study", sort=False):
        where = ", ".join(dict.fromkeys(o for o in g["overlay"] if o)) or "its sweep"
        est = g["estimated_cpu_s"]
        cost = "cost unknown" if est.isna().all() else f"est. <= {est.sum():,.0f} CPU-s"
        out[str(study)] = (
            f"sweep {where} not run ({len(g)} siblings: {', '.join(g['changed'])}; {cost})"
        )
    return out


# ---- the table ----------------------------------------------------------------------------
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
    neg = annotated[annotated["verdict"].isin(NEGATIVE)]
    keyed = _keyed(neg)
    for _, r in keyed.iterrows():
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
    recorded = list(recorded)
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
    return "\n".join(out) + "\n"


def _sibling_text(s: Mapping) -> str:
    return f"`{s['sibling']}`: {s['changed']}"


def _md_row(cells: list) -> str:
    return "| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in cells) + " |"


# ---- recorded sweeps: siblings measured earlier, kept as numbers --------------------------
RECORDED_COLUMNS = ("sibling", "base", "id", "nth", "changes", "measure", "mean", "sd", "n",
                    "unit", "source")  # fmt: skip


def _change_of(text: str) -> Change:
    """``optimizers[gd].lr: 0.5 -> 0.0316`` -> Change."""
    key, _, rest = text.partition(":")
    b, arrow, v = rest.partition("->")
    if not (key.strip() and arrow):
        raise ValueError(f"a change is 'key: base -> value', got {text!r}")

    def value(s: str) -> Any:
        s = s.strip()
        try:
            return float(s)
        except ValueError:
            return s

    return Change(key.strip(), value(b), value(v))


def interval_verdict(lo: float, hi: float, row: Mapping) -> str:
    """The verdict of an interval [lo, hi] under a ledger row's rule bounds (``strong_lo`` ..
    ``weak_hi``), as :func:`ibrobust.claims.rules.decide` reads them with closed bounds:
    holds inside the strong region, holds weaker inside the weak one, does not hold wholly
    outside it, else inconclusive."""
    s_lo, s_hi, w_lo, w_hi = (
        _num(row[k]) for k in ("strong_lo", "strong_hi", "weak_lo", "weak_hi")
    )
    if s_lo <= lo and hi <= s_hi:
        return HOLDS
    if w_lo <= lo and hi <= w_hi:
        return WEAKER
    if hi < w_lo or lo > w_hi:
        return FAILS
    return "inconclusive"


def recorded_rows(
    recorded: pd.DataFrame, base: pd.DataFrame, level: float = 0.95
) -> tuple[pd.DataFrame, dict[str, Sibling], list[str]]:
    """Sweep-ledger rows of siblings measured earlier and kept as (mean, sd, n) of one value
    per unit (:data:`RECORDED_COLUMNS`, e.g. ``configs/sweep_fa_rate_stop.csv``): each gets
    the Student t interval mean +- t(n-1) sd / sqrt(n) and the verdict of its base row's
    rule *as the base ledger states it now* (:func:`interval_verdict`), so a rebuilt base
    ledger re-judges them. A record whose ``measure`` is no longer its base row's (the claim
    now measures something else) is skipped, with a note. Returns (rows, siblings, notes)."""
    from scipy import stats

    missing = [c for c in RECORDED_COLUMNS if c not in recorded]
    if missing:
        raise ValueError(f"recorded sweep: missing columns {missing}")
    keyed = _keyed(base)
    rows, sibs, notes = [], {}, []
    for _, r in recorded.iterrows():
        hit = keyed[(keyed["study"] == r["base"]) & (keyed["id"] == r["id"])
                    & (keyed["_nth"] == int(r["nth"]))]  # fmt: skip
        if hit.empty:
            notes.append(f"{r['sibling']} {r['id']}: no such row in the base ledger")
            continue
        b = hit.iloc[0]
        if str(b["measure"]) != str(r["measure"]):
            notes.append(f"{r['sibling']} {r['id']}: the claim's measure changed since it was "
                         "recorded; not compared")  # fmt: skip
            continue
        n, mean, sd = int(r["n"]), float(r["mean"]), float(r["sd"])
        half = stats.t.ppf(0.5 + level / 2, n - 1) * sd / math.sqrt(n) if n > 1 else math.nan
        lo, hi = mean - half, mean + half
        verdict = interval_verdict(lo, hi, b) if n > 1 else "inconclusive"
        row = b.drop(labels="_nth").to_dict()
        row.update(study=r["sibling"], ours_mean=mean, ours_spread=sd, ci_lo=lo, ci_hi=hi, n=n,
                   unit=r["unit"], verdict=verdict, reason="", fragile="", fragile_reason="",
                   note=f"recorded: {r['source']}")  # fmt: skip
        rows.append(row)
        changes = tuple(_change_of(t) for t in str(r["changes"]).split(";") if t.strip())
        sibs[str(r["sibling"])] = Sibling(str(r["sibling"]), str(r["base"]), changes)
    return pd.DataFrame(rows, columns=list(base.columns)), sibs, notes
