"""What a claim is, how our number is measured, and how its verdict is decided.

A :class:`Claim` is data: an id, the claim in one sentence, the paper's number(s), how
our number is computed from a study's outputs (in words), a :class:`Rule` (a strong and a
weak region, stated in words), and ``compute``: a pure function from the study's loaded
outputs to a :class:`Measurement` (one value per unit - seed, dataset draw, run - and the
interval around their mean, :mod:`ibrobust.claims.intervals`). :func:`decide` turns the
interval and the rule into a verdict: holds, holds weaker, does not hold, or inconclusive
when the interval straddles the rule's threshold, with the units an estimate says would
decide it.

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

from ibrobust.claims.citations import Citation
from ibrobust.claims.intervals import (
    LEVEL,
    Interval,
    censored,
    slope_interval,
    t_interval,
    units_needed,
)

HOLDS, WEAKER, FAILS = "holds", "holds weaker", "does not hold"
INCONCLUSIVE, NOT_APPLICABLE, NOT_RUN = "inconclusive", "not applicable", "not run"
VERDICTS = (HOLDS, WEAKER, INCONCLUSIVE, FAILS, NOT_APPLICABLE, NOT_RUN)
JUDGED = (HOLDS, WEAKER, INCONCLUSIVE, FAILS)  # verdicts decided on a measurement


class SummaryError(ValueError):
    """A study output the ledger cannot trust (names the file and the column)."""


class NotRun(Exception):  # noqa: N818  (a verdict, not an error)
    """Raised by a claim's ``compute`` when the outputs hold no rows to measure it on
    (e.g. a readout the study did not evaluate); the message is the reason."""


class NotApplicable(Exception):  # noqa: N818  (a verdict, not an error)
    """Raised by a claim's ``compute`` (or returned as a reason by its ``not_applicable``)
    when the study cannot test the claim by construction, whatever its numbers: e.g. one run
    where the claim needs an interval over runs, or a study configured to stop before the
    claimed regime. The message is the reason."""


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
    """Our number: one value per unit (seed, dataset draw, run, cell) and the interval the
    verdict is decided on. The interval is the t interval over the values
    (:func:`ibrobust.claims.intervals.t_interval`) unless ``compute`` gives another method:
    ``interval`` maps the ledger's level to the interval (over points, a pooled slope;
    :mod:`ibrobust.claims.intervals`), e.g. ``partial(wilson, k, n)`` (or is an Interval
    of one level, e.g. in tests).
    ``points``: test points behind each unit's value (shown beside n). ``lower_bound`` marks
    values censored at the top of a radius grid (the interval then has no upper end)."""

    values: tuple[float, ...]
    unit: str = "seeds"
    lower_bound: bool = False
    note: str = ""
    interval: Interval | Callable[[float], Interval | None] | None = None
    points: int | None = None
    # the units' names, for the fragility note (e.g. ("seed 0", "seed 1", "seed 2"))
    labels: tuple[str, ...] | None = None
    # leave-one-unit-out measurements where ``interval`` is not the t interval over
    # ``values`` (e.g. a pooled slope over seeds): (dropped unit's name, measurement)
    jackknife: Callable[[], list[tuple[str, Measurement]]] | None = None

    def __post_init__(self) -> None:
        if not self.values:
            raise NotRun("no values to measure")
        if any(not math.isfinite(v) for v in self.values):
            raise ValueError(f"measurement values must be finite, got {self.values}")
        if self.labels is not None and len(self.labels) != len(self.values):
            raise ValueError(f"{len(self.labels)} labels for {len(self.values)} values")

    def leave_one_out(self) -> list[tuple[str, Measurement]] | None:
        """The measurement without each of its units in turn: (unit's name, measurement).
        From ``jackknife`` where the interval stands on something else than ``values``;
        None where no unit can be left out (one unit, or an interval over the points of one
        run: points are not units the verdict's robustness is asked about)."""
        if self.jackknife is not None:
            return self.jackknife()
        if self.interval is not None or len(self.values) < 2:
            return None
        # without labels the units have no names: say which one by its place, not as "seed 1"
        # (which reads as seed id 1 where the seeds are 0, 1, 2)
        names = self.labels or tuple(
            f"the {_ordinal(i + 1)} of {self.n} {self.unit}" for i in range(self.n)
        )
        return [
            (
                names[i],
                replace(
                    self,
                    values=self.values[:i] + self.values[i + 1 :],
                    labels=None if self.labels is None else names[:i] + names[i + 1 :],
                ),
            )
            for i in range(self.n)
        ]

    @property
    def n(self) -> int:
        """Units with a value (the interval may stand on others, e.g. points)."""
        return len(self.values)

    @property
    def mean(self) -> float:
        """The center of the interval (the mean of the values for a t interval)."""
        iv = self._given(None)
        return iv.center if iv is not None else float(np.mean(self.values))

    def _given(self, level: float | None) -> Interval | None:
        """The interval ``compute`` gave, at ``level`` (None: at its own or the default)."""
        iv = self.interval
        if iv is None or isinstance(iv, Interval):
            if iv is not None and level is not None and iv.level != level:
                raise ValueError(f"a fixed interval at level {iv.level} asked for at {level}")
            return iv
        return iv(LEVEL if level is None else level)

    @property
    def spread(self) -> float:
        """Sample sd of the per-unit values (0 for one unit)."""
        return float(np.std(self.values, ddof=1)) if len(self.values) > 1 else 0.0

    def ci(self, level: float = LEVEL) -> Interval | None:
        """The interval the verdict is decided on (None: one unit and no other method)."""
        iv = self._given(level) if self.interval is not None else None
        if self.interval is None:
            iv = t_interval(self.values, self.unit, level)
        if iv is not None and self.lower_bound:
            iv = censored(iv)
        return iv


def _ordinal(i: int) -> str:
    """1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, 21st."""
    suffix = "th" if 10 <= i % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(i % 10, "th")
    return f"{i}{suffix}"


def pooled_slope(
    x: Sequence[float],
    y: Sequence[float],
    groups: Sequence,
    unit: str,
    note: str = "",
    group_name: str = "seed",
) -> Measurement:
    """The least-squares slope of ``y`` on ``x`` common to the ``groups`` (an intercept per
    group, :func:`ibrobust.claims.intervals.slope_interval`), as a measurement: its values are
    the per-group slopes (groups with two or more x values), its interval the pooled slope's,
    and leaving one group out refits without it (:func:`fragility`)."""
    xs, ys, gs = np.asarray(x, float), np.asarray(y, float), np.asarray(groups)
    names = list(dict.fromkeys(gs.tolist()))
    slopes = []
    for g in names:
        sel = gs == g
        if len(set(xs[sel].tolist())) >= 2:
            slopes.append(float(np.polyfit(xs[sel], ys[sel], 1)[0]))
    if not slopes:
        raise NotRun(f"no {group_name} with two or more distinct x values")

    def iv(level: float) -> Interval | None:
        return slope_interval(xs, ys, unit, level, groups=gs)

    def without() -> list[tuple[str, Measurement]]:
        out = []
        for g in names:
            keep = gs != g
            if len(set(gs[keep].tolist())) >= 1 and keep.sum() >= 3:
                try:
                    out.append(
                        (f"{group_name} {g}",
                         pooled_slope(xs[keep], ys[keep], gs[keep], unit, note, group_name))
                    )  # fmt: skip
                except NotRun:
                    continue
        return out

    return Measurement(
        tuple(slopes), unit=f"{group_name}s", note=note, interval=iv, jackknife=without
    )


@dataclass(frozen=True)
class Rule:
    """A verdict rule: the strong region (the claim holds as the paper states it) and the
    weak region (it holds in the weaker form; contains the strong one), as intervals
    [lo, hi]. The verdict is decided on our number's interval (:func:`decide`); ``what``
    names the value in the rule's words. ``strict``: the weak region's finite bounds are
    exclusive (a direction: "> 0", "more robust"), and so is a strong bound on one of them;
    an interval that only touches such a bound (a tie on every unit: [0, 0]) is outside."""

    what: str
    strong: tuple[float, float]
    weak: tuple[float, float]
    strict: bool = False

    def __post_init__(self) -> None:
        for lo, hi in (self.strong, self.weak):
            if not lo <= hi:
                raise ValueError(f"interval [{lo}, {hi}] is empty")
        if not (self.weak[0] <= self.strong[0] and self.strong[1] <= self.weak[1]):
            raise ValueError(f"the weak region {self.weak} must contain the strong {self.strong}")

    def text(self, level: float = LEVEL) -> str:
        pct = f"{100 * level:g} %"
        return (
            f"holds: the {pct} interval of {self.what} {_region(self.strong, self._open(self.strong))}"
            f"; holds weaker: {_region(self.weak, self._open(self.weak))}; does not hold: wholly "
            "outside it; else inconclusive"
        )

    def _open(self, region: tuple[float, float]) -> tuple[bool, bool]:
        """Which ends of ``region`` (strong or weak) are exclusive."""
        if not self.strict:
            return (False, False)
        return (region[0] == self.weak[0], region[1] == self.weak[1])

    def thresholds(self) -> list[float]:
        return [v for v in (*self.weak, *self.strong) if math.isfinite(v)]


def _fmt(v: float) -> str:
    return f"{v:.3g}"


def _region(iv: tuple[float, float], open_: tuple[bool, bool] = (False, False)) -> str:
    lo, hi = iv
    if lo == -math.inf and hi == math.inf:
        return "anywhere"
    if lo == -math.inf:
        return f"{'<' if open_[1] else '<='} {_fmt(hi)}"
    if hi == math.inf:
        return f"{'>' if open_[0] else '>='} {_fmt(lo)}"
    return f"within {'(' if open_[0] else '['}{_fmt(lo)}, {_fmt(hi)}{')' if open_[1] else ']'}"


def _within(lo: float, hi: float, region: tuple[float, float], open_=(False, False)) -> bool:
    above = lo > region[0] if open_[0] else lo >= region[0]
    below = hi < region[1] if open_[1] else hi <= region[1]
    return above and below


def _disjoint(lo: float, hi: float, region: tuple[float, float], open_=(False, False)) -> bool:
    under = hi <= region[0] if open_[0] else hi < region[0]
    over = lo >= region[1] if open_[1] else lo > region[1]
    return under or over


@dataclass(frozen=True)
class Decision:
    verdict: str
    reason: str = ""


def decide(rule: Rule, m: Measurement, level: float = LEVEL) -> Decision:
    """The verdict of ``rule`` on the interval of ``m`` (pure):

    * holds: the whole interval lies in the strong region;
    * holds weaker: it lies in the weak region (not wholly in the strong one);
    * does not hold: it lies wholly outside the weak region;
    * inconclusive: it straddles a bound of the weak region, or one unit gave no interval.

    The reason of an inconclusive verdict names the interval, the threshold it straddles
    and about how many units would decide (:func:`ibrobust.claims.intervals.units_needed`);
    a "holds weaker" whose interval straddles the strong threshold says the same of it."""
    iv = m.ci(level)
    if iv is None:
        return Decision(
            INCONCLUSIVE,
            f"one {m.unit.rstrip('s')} ({_fmt(m.mean)}) gives no interval: at least 2 "
            f"{m.unit} are needed",
        )
    lo, hi = iv.lo, iv.hi
    if _within(lo, hi, rule.strong, rule._open(rule.strong)):
        return Decision(HOLDS)
    weak = rule._open(rule.weak)
    if _within(lo, hi, rule.weak, weak):
        return Decision(WEAKER, _straddled(iv, rule.strong, "strong", m))
    if _disjoint(lo, hi, rule.weak, weak):
        return Decision(FAILS)
    return Decision(INCONCLUSIVE, _straddled(iv, rule.weak, "weak", m))


def _straddled(iv: Interval, region: tuple[float, float], which: str, m: Measurement) -> str:
    """Which bound of ``region`` lies inside ``iv``, and the units an estimate says would
    move the interval off it."""
    inside = [b for b in region if math.isfinite(b) and iv.lo <= b <= iv.hi]
    if not inside:
        return ""
    b = min(inside, key=lambda t: abs(t - iv.center))
    hi = "inf" if iv.hi == math.inf else _fmt(iv.hi)
    text = f"interval [{_fmt(iv.lo)}, {hi}] straddles the {which} threshold {_fmt(b)}"
    need = units_needed(iv, b)
    unit = iv.unit
    if m.lower_bound and iv.hi == math.inf and b > iv.center:
        return f"{text}; censored at the grid's top: a larger radius grid would decide"
    if need is None:
        return f"{text}; the estimate sits on it: no number of {unit} decides"
    return f"{text}; about {need} {unit} would decide (now {iv.n}, from the measured spread)"


@dataclass(frozen=True)
class Fragility:
    """Whether a verdict survives leaving out any one unit: ``fragile`` True (some unit's
    removal changes it; ``reason`` says which and to what), False, or None (not assessed:
    the measurement has no unit to leave out)."""

    fragile: bool | None
    reason: str = ""


def fragility(rule: Rule, m: Measurement, level: float = LEVEL) -> Fragility:
    """A verdict is *fragile* when dropping any one unit (seed, draw or run) changes it
    (:meth:`Measurement.leave_one_out`). Pure."""
    subsets = m.leave_one_out()
    if not subsets:
        return Fragility(None, "not assessed: no unit to leave out")
    base = decide(rule, m, level).verdict
    changed = []
    for name, sub in subsets:
        v = decide(rule, sub, level).verdict
        if v != base:
            changed.append(f"without {name}: {v}")
    if changed:
        return Fragility(True, "; ".join(changed))
    return Fragility(False)


def at_least(what: str, strong: float, weak: float, strict: bool = False) -> Rule:
    return Rule(what, (strong, math.inf), (weak, math.inf), strict)


def at_most(what: str, strong: float, weak: float, strict: bool = False) -> Rule:
    return Rule(what, (-math.inf, strong), (-math.inf, weak), strict)


def between(
    what: str, strong: tuple[float, float], weak: tuple[float, float], strict: bool = False
) -> Rule:
    return Rule(what, strong, weak, strict)


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

    ``citation``: where it comes from (document, place, quote, scope); ``derivation``:
    how ``rule``'s strong and weak regions follow from the quote (the source's number within
    its own spread or the theory's constant for the strong region, the same direction for the
    weak one; a trend judged over the grid the source shows);
    ``sources``: the names of the study's :class:`Source` s that ``compute`` reads;
    ``setting``: what the row is about within the study (dataset, readout, regime);
    ``applies``: None, or a function of the context returning why the claim cannot be run
    in this configuration (e.g. the MNIST half is not configured): "not run";
    ``not_applicable``: None, or a function of the context returning why the study cannot
    test the claim by construction (e.g. it stops before the claimed regime): "not
    applicable" (``compute`` may also raise :class:`NotApplicable`)."""

    id: str
    claim: str
    citation: Citation
    derivation: str
    paper: str
    measure: str
    rule: Rule
    compute: Compute
    sources: tuple[str, ...] = ("summary",)
    setting: str = ""
    applies: Callable[[StudyContext], str | None] | None = None
    not_applicable: Callable[[StudyContext], str | None] | None = None

    def __post_init__(self) -> None:
        if not self.derivation.strip():
            raise ValueError(f"claim {self.id}: a rule needs its derivation from the source")

    def verdict(self, m: Measurement, level: float = LEVEL) -> Decision:
        return decide(self.rule, m, level)


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
