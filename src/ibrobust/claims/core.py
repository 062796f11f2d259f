"""What a claim is, how our number is measured, and how its verdict is decided.

A :class:`Claim` is data: an id, the claim in one sentence (SPEC.md), the paper's
number(s), how our number is computed from a study's outputs (in words), a
:class:`Rule` (stated in words, applied by a pure function), and ``compute``: a pure
function from the study's loaded outputs to a :class:`Measurement` (one value per seed or
dataset draw, plus their mean and spread).

A study's outputs are read through a :class:`Source` (one file and its columns, the one
place a study's column mapping lives): :func:`load_source` refuses, with an error naming
the file and the column, a file whose columns are missing, non-numeric, NaN where a value
is required, out of their valid range, or inconsistent with each other (e.g. a worst case
over attacks that is not the smallest) - so a malformed summary stops the ledger instead
of printing a wrong verdict.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

HOLDS, WEAKER, FAILS, NOT_RUN = "holds", "holds weaker", "does not hold", "not run"
VERDICTS = (HOLDS, WEAKER, FAILS, NOT_RUN)


class SummaryError(ValueError):
    """A study output the ledger cannot trust (names the file and the column)."""


class NotRun(Exception):  # noqa: N818  (a verdict, not an error)
    """Raised by a claim's ``compute`` when the outputs hold no rows to measure it on
    (e.g. a readout the study did not evaluate); the message is the reason."""


# ---- sources: one file of a study and its column mapping ------------------------------------
@dataclass(frozen=True)
class Column:
    """A numeric column and its valid range; ``nan_ok`` when NaN is a legitimate value (a
    critical radius NaN means "robust accuracy never fell to 50 % on the grid")."""

    name: str
    lo: float = -math.inf
    hi: float = math.inf
    nan_ok: bool = False
    required: bool = True


Check = Callable[[pd.DataFrame], str | None]  # an invariant: None, or what is wrong


@dataclass(frozen=True)
class Source:
    """One output file of a study (``path``, relative to ``results/<study>/``) with the
    text columns it must have (``keys``, with their allowed values when given), its numeric
    :class:`Column` s and cross-column invariants (``checks``)."""

    path: str
    keys: Mapping[str, tuple[str, ...] | None]
    numeric: tuple[Column, ...]
    checks: tuple[Check, ...] = ()
    built_by: str = ""  # which target builds it, for "not run: output absent" reasons


def load_source(path: str | Path, source: Source) -> pd.DataFrame:
    """The file at ``path`` checked against ``source`` (:class:`SummaryError` naming the file
    and the column for anything malformed)."""
    path = Path(path)
    try:
        df = pd.read_csv(path)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise SummaryError(f"{path}: cannot read it as CSV ({err})") from None
    if df.empty:
        raise SummaryError(f"{path}: no rows")
    for key, allowed in source.keys.items():
        if key not in df:
            raise SummaryError(f"{path}: missing column {key!r} (has {list(df.columns)})")
        if df[key].isna().any():
            raise SummaryError(f"{path}: column {key!r} has empty values")
        if allowed is not None:
            bad = sorted(set(df[key].astype(str)) - set(allowed))
            if bad:
                raise SummaryError(
                    f"{path}: column {key!r} has values {bad}, expected one of {list(allowed)}"
                )
    for col in source.numeric:
        if col.name not in df:
            if col.required:
                raise SummaryError(f"{path}: missing column {col.name!r} (has {list(df.columns)})")
            continue
        vals = pd.to_numeric(df[col.name], errors="coerce")
        text = df[col.name].notna() & vals.isna()
        if text.any():
            raise SummaryError(
                f"{path}: column {col.name!r} is not numeric "
                f"(e.g. {df[col.name][text].iloc[0]!r} in row {int(np.argmax(text.to_numpy()))})"
            )
        if not col.nan_ok and vals.isna().any():
            raise SummaryError(
                f"{path}: column {col.name!r} has NaN in rows "
                f"{np.nonzero(vals.isna().to_numpy())[0].tolist()[:5]}"
            )
        out = vals.notna() & ((vals < col.lo) | (vals > col.hi))
        if out.any():
            raise SummaryError(
                f"{path}: column {col.name!r} has {vals[out].iloc[0]!r} outside its valid "
                f"range [{col.lo}, {col.hi}]"
            )
        df[col.name] = vals.astype(float)
    for check in source.checks:
        problem = check(df)
        if problem:
            raise SummaryError(f"{path}: {problem}")
    return df


def not_above(lower: str, others: Sequence[str], nan_is_inf: bool = False) -> Check:
    """Invariant: column ``lower`` <= every column of ``others`` present (a worst case over
    attacks cannot beat any attack). With ``nan_is_inf``, NaN counts as +inf."""

    def check(df: pd.DataFrame) -> str | None:
        if lower not in df:
            return None
        lo = df[lower].fillna(math.inf) if nan_is_inf else df[lower]
        for other in others:
            if other not in df:
                continue
            hi = df[other].fillna(math.inf) if nan_is_inf else df[other]
            bad = (lo > hi + 1e-9) & lo.notna() & hi.notna()
            if bad.any():
                i = int(np.argmax(bad.to_numpy()))
                return (
                    f"column {lower!r} ({lo.iloc[i]}) exceeds column {other!r} ({hi.iloc[i]}) "
                    f"in row {i}: the worst case over attacks must be the smallest"
                )
        return None

    return check


# ---- measurements and verdict rules --------------------------------------------------------
@dataclass(frozen=True)
class Measurement:
    """Our number: one value per unit (seed, or dataset draw) with their mean and spread
    (sample std; 0 for one unit), or, for outputs that only keep aggregates, the mean,
    spread and number of units directly (:meth:`aggregated`; such a measurement has no
    per-unit values, so only rules on the mean apply to it). ``lower_bound`` marks values
    censored at the top of a radius grid (the true value is at least this)."""

    values: tuple[float, ...]
    unit: str = "seeds"
    lower_bound: bool = False
    note: str = ""
    agg: tuple[float, float, int] | None = None  # (mean, spread, n) when values are not kept
    spread_override: float | None = None  # a spread computed upstream (``note`` says which)

    def __post_init__(self) -> None:
        if not self.values and self.agg is None:
            raise NotRun("no values to measure")
        nums = self.values if self.agg is None else (self.agg[0], self.agg[1])
        if any(not math.isfinite(v) for v in nums):
            raise ValueError(f"measurement values must be finite, got {nums}")

    @classmethod
    def aggregated(
        cls, mean: float, spread: float, n: int, unit: str = "seeds", note: str = ""
    ) -> Measurement:
        return cls((), unit=unit, note=note, agg=(float(mean), float(spread), int(n)))

    @property
    def n(self) -> int:
        return len(self.values) if self.agg is None else self.agg[2]

    @property
    def mean(self) -> float:
        return float(np.mean(self.values)) if self.agg is None else self.agg[0]

    @property
    def spread(self) -> float:
        if self.spread_override is not None:
            return float(self.spread_override)
        if self.agg is not None:
            return self.agg[1]
        return float(np.std(self.values, ddof=1)) if self.n > 1 else 0.0


@dataclass(frozen=True)
class Rule:
    """A verdict rule on a :class:`Measurement`: "holds" when every unit's value passes the
    strong test (or the mean, with ``on="mean"``), "holds weaker" when the mean passes the
    weak test, else "does not hold". Tests are intervals [lo, hi]; ``what`` names the value
    in the rule's words."""

    what: str
    strong: tuple[float, float]
    weak: tuple[float, float]
    on: str = "every"  # "every" unit or the "mean" for the strong test

    def __post_init__(self) -> None:
        if self.on not in ("every", "mean"):
            raise ValueError(f"Rule.on must be 'every' or 'mean', got {self.on!r}")
        for lo, hi in (self.strong, self.weak):
            if not lo <= hi:
                raise ValueError(f"interval [{lo}, {hi}] is empty")

    def __call__(self, m: Measurement) -> str:
        return decide(self, m)

    def text(self, unit: str = "seeds") -> str:
        which = f"for each of the {unit}" if self.on == "every" else "on the mean"
        return (
            f"holds: {self.what} {_interval(self.strong)} {which}; holds weaker: "
            f"mean {_interval(self.weak)}; else does not hold"
        )


def _fmt(v: float) -> str:
    return f"{v:.3g}"


def _interval(iv: tuple[float, float]) -> str:
    lo, hi = iv
    if lo == -math.inf and hi == math.inf:
        return "is any value"
    if lo == -math.inf:
        return f"<= {_fmt(hi)}"
    if hi == math.inf:
        return f">= {_fmt(lo)}"
    return f"in [{_fmt(lo)}, {_fmt(hi)}]"


def _inside(v: float, iv: tuple[float, float]) -> bool:
    return iv[0] <= v <= iv[1]


def decide(rule: Rule, m: Measurement) -> str:
    """The verdict of ``rule`` on ``m`` (pure)."""
    if rule.on == "every" and m.agg is not None:
        raise ValueError(f"rule on every unit of {rule.what!r} needs per-unit values")
    strong = (
        all(_inside(v, rule.strong) for v in m.values)
        if rule.on == "every"
        else _inside(m.mean, rule.strong)
    )
    if strong:
        return HOLDS
    return WEAKER if _inside(m.mean, rule.weak) else FAILS


def at_least(what: str, strong: float, weak: float, on: str = "every") -> Rule:
    return Rule(what, (strong, math.inf), (weak, math.inf), on)


def at_most(what: str, strong: float, weak: float, on: str = "every") -> Rule:
    return Rule(what, (-math.inf, strong), (-math.inf, weak), on)


def between(
    what: str, strong: tuple[float, float], weak: tuple[float, float], on: str = "every"
) -> Rule:
    return Rule(what, strong, weak, on)


# ---- the claim ------------------------------------------------------------------------------
@dataclass(frozen=True)
class StudyContext:
    """What a claim may read besides the study's outputs: the study's name and config block,
    and the config entries of the datasets and models it uses."""

    name: str
    config: Mapping[str, Any]
    datasets: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    models: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    optimizers: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


Compute = Callable[[Mapping[str, pd.DataFrame], StudyContext], Measurement]


@dataclass(frozen=True)
class Claim:
    """One claim of a paper, as the ledger checks it (see the module docstring).

    ``sources``: the names of the study's :class:`Source` s that ``compute`` reads;
    ``setting``: what the row is about within the study (dataset, readout, regime);
    ``applies``: None, or a function of the context returning why the claim cannot be run
    in this configuration (e.g. the MNIST half is not configured)."""

    id: str
    claim: str
    paper: str
    measure: str
    rule: Rule
    compute: Compute
    sources: tuple[str, ...] = ("summary",)
    setting: str = ""
    applies: Callable[[StudyContext], str | None] | None = None

    def verdict(self, m: Measurement) -> str:
        return self.rule(m)


def restricted(
    claims: Sequence[Claim],
    cell: Mapping[str, str],
    keep: Callable[[pd.DataFrame], pd.Series] | None = None,
) -> list[Claim]:
    """The claims computed on one cell of a study (e.g. ``{"model": "prelu_p1"}``): every
    source with the cell's columns is cut to the cell's rows, plus the rows ``keep`` marks
    (e.g. the robust reference's, shared by every cell); the cell joins the setting."""

    def cut(df: pd.DataFrame) -> pd.DataFrame:
        mask = pd.Series(True, index=df.index)
        for col, value in cell.items():
            if col in df:
                mask &= df[col] == value
        return df[mask | keep(df)] if keep is not None else df[mask]

    def on_cell(compute: Compute) -> Compute:
        return lambda src, ctx: compute({k: cut(v) for k, v in src.items()}, ctx)

    tag = ", ".join(cell.values())
    return [replace(c, setting=f"{c.setting}, {tag}", compute=on_cell(c.compute)) for c in claims]
