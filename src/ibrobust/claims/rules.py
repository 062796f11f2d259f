"""How a verdict is decided: a :class:`Rule` (a strong and a weak region, stated in
words; :func:`at_least`, :func:`at_most`, :func:`between`) and :func:`decide`, which turns a
measurement's interval into holds, holds weaker, does not hold, or inconclusive when the
interval straddles the rule's threshold, with the units an estimate says would decide it;
:func:`fragility` asks whether the verdict survives leaving out any one unit."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from ibrobust.claims.intervals import LEVEL, Interval, resolution_spans, units_needed
from ibrobust.claims.measurement import Measurement
from ibrobust.claims.verdicts import FAILS, HOLDS, INCONCLUSIVE, WEAKER


@dataclass(frozen=True)
class Rule:
    """A verdict rule: the strong region (the claim holds as the paper states it) and the
    weak region (it holds in the weaker form; contains the strong one), as intervals
    [lo, hi]. The verdict is decided on our number's interval (:func:`decide`); ``what``
    names the value in the rule's words. ``strict``: the weak region's finite bounds are
    exclusive (a direction: "> 0", "more robust"), and so is a strong bound on one of them;
    an interval that only touches such a bound (a tie on every unit: [0, 0]) is outside.
    ``basis``: where the rule's number comes from when its form asks for it
    (:mod:`ibrobust.claims.forms`): an equivalence's margin from the source's scale, an
    asymptotic claim's constant from the quote that states it."""

    what: str
    strong: tuple[float, float]
    weak: tuple[float, float]
    strict: bool = False
    basis: str = ""

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

    def regions(self) -> str:
        """The two regions in short: ``strong >= 0.9, weak >= 0.5``."""
        strong = _region(self.strong, self._open(self.strong))
        return f"strong {strong}, weak {_region(self.weak, self._open(self.weak))}"

    def _open(self, region: tuple[float, float]) -> tuple[bool, bool]:
        """Which ends of ``region`` (strong or weak) are exclusive: under ``strict``, its
        finite ends that are the weak region's (an infinite end is never reached, and a
        censored interval's upper end +inf lies within a region open to +inf)."""
        if not self.strict:
            return (False, False)
        lo, hi = region
        return (
            lo == self.weak[0] and math.isfinite(lo),
            hi == self.weak[1] and math.isfinite(hi),
        )

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
    """A verdict and its reason; a per-cell decision also carries the interval of the cell it
    shows (``cell``), which the ledger reports as ours."""

    verdict: str
    reason: str = ""
    interval: Interval | None = None
    cell: str = ""


def decide(rule: Rule, m: Measurement, level: float = LEVEL) -> Decision:
    """The verdict of ``rule`` on the interval of ``m`` (pure):

    * holds: the whole interval lies in the strong region;
    * holds weaker: it lies in the weak region (not wholly in the strong one);
    * does not hold: it lies wholly outside the weak region;
    * inconclusive: it straddles a bound of the weak region, or one unit gave no interval.

    The reason of an inconclusive verdict names the interval, the threshold it straddles
    and about how many units would decide (:func:`ibrobust.claims.intervals.units_needed`);
    a "holds weaker" whose interval straddles the strong threshold says the same of it.
    Where the measurement's read-off uncertainty (a value read off a grid,
    :attr:`Measurement.brackets`) alone keeps the interval across the threshold, it says
    that a finer measurement would decide, never a number of units."""
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
    res = f" ({m.resolution})" if m.resolution else ""
    if resolution_spans(iv, b):
        return (
            f"{text}; the measurement's resolution{res} alone spans it: a finer measurement "
            f"would decide, no number of {unit} does"
        )
    if need is None:
        return f"{text}; the estimate sits on it: no number of {unit} decides"
    if iv.readoff != (0.0, 0.0):
        return (
            f"{text}; about {need} {unit} at this resolution{res} would decide (now {iv.n}, "
            "from the measured spread), or a finer measurement"
        )
    return f"{text}; about {need} {unit} would decide (now {iv.n}, from the measured spread)"


@dataclass(frozen=True)
class Fragility:
    """Whether a verdict survives leaving out any one unit: ``fragile`` True (some unit's
    removal changes it; ``reason`` says which and to what), False, or None (not assessed:
    the measurement has no unit to leave out)."""

    fragile: bool | None
    reason: str = ""


def fragility(
    rule: Rule,
    m: Measurement,
    level: float = LEVEL,
    judge: Callable[[Rule, Measurement, float], Decision] = decide,
) -> Fragility:
    """A verdict is *fragile* when dropping any one unit (seed, draw or run) changes it
    (:meth:`Measurement.leave_one_out`); ``judge`` decides (a form's, e.g. per cell). Pure."""
    subsets = m.leave_one_out()
    if not subsets:
        return Fragility(None, "not assessed: no unit to leave out")
    base = judge(rule, m, level).verdict
    changed = []
    for name, sub in subsets:
        v = judge(rule, sub, level).verdict
        if v != base:
            changed.append(f"without {name}: {v}")
    if changed:
        return Fragility(True, "; ".join(changed))
    return Fragility(False)


def at_least(what: str, strong: float, weak: float, strict: bool = False, basis: str = "") -> Rule:
    return Rule(what, (strong, math.inf), (weak, math.inf), strict, basis)


def at_most(what: str, strong: float, weak: float, strict: bool = False, basis: str = "") -> Rule:
    return Rule(what, (-math.inf, strong), (-math.inf, weak), strict, basis)


def between(
    what: str,
    strong: tuple[float, float],
    weak: tuple[float, float],
    strict: bool = False,
    basis: str = "",
) -> Rule:
    return Rule(what, strong, weak, strict, basis)
