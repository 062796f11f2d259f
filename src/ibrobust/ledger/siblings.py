"""What a sibling study of a sweep changes (issue 45 item 3): a *sweep* is a config overlay
(``configs/sweep_<kind>.yaml``) of *sibling studies*, each named ``<base>__<tag>``
(:data:`SEP`) after the study it varies, each a copy of its base study with one setting
changed, possibly *cut* to the parts and units the swept rows read. :func:`sibling_of` reads
the change off the two configs, never typed: it diffs the sibling's block against its
base's, with every registry name (dataset, model, optimizer, attack) replaced by its entry,
into the setting :class:`Change` s and the cuts. Pure, on plain config dicts; the comparison
of verdicts is :mod:`ibrobust.ledger.sensitivity`. What a sibling would cost to run:
:func:`cost_table`, from a job profile.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

SEP = "__"  # sibling study name: <base>__<tag>
REGISTRIES = ("datasets", "models", "optimizers", "attacks")  # names a study block refers to
IGNORED = ("enabled", "plots", "gap_difference")  # keys that never change a number (figures only)


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
