"""The logical form of a claim's source statement, and the rule family it fixes.

Every :class:`~ibrobust.claims.core.Claim` declares the form of what its source says
(:data:`FORMS`); the form decides which rules and which measurements may judge it, and a
claim whose rule or measurement does not fit its form is refused (:class:`FormError`) when
it is built (:func:`check_rule`) and when it is computed (:func:`check_measurement`):

================  ==========================================  =================================
form              the source says                             rule and measurement
================  ==========================================  =================================
existential       "there are cases", "can"                    a per-cell measurement
                                                              (:func:`per_cell`); holds if some
                                                              cell shows it, each cell's
                                                              interval Bonferroni-corrected
                                                              for the number of cells
universal         "for every" cell of a grid                  a per-cell measurement; holds if
                                                              every cell does (each at the
                                                              ledger's level), does not hold
                                                              if some cell fails (corrected)
asymptotic        o(1), Theta, "converges", "grows with       a trend along the growing
                  t / d / n"                                  variable (:func:`trend`, a
                                                              slope or last/first ratio with
                                                              its interval); a direction, or
                                                              a constant only with the quote
                                                              that gives it (``Rule.basis``)
bound             a number with a spread, a theory's          P1 / P2 / P3: a strong region
                  constant, a vanishing quantity, a bound     around the number, a weak one
                                                              (the same direction) around it
equivalence       "similarly", "the same", "alike"            a margin around 0 whose
                                                              derivation from the source's own
                                                              scale in that passage (or P4 and
                                                              why the source gives none) is
                                                              ``Rule.basis``
direction         a direction with no number                  P5: strong = weak = one side of
                                                              a bound
================  ==========================================  =================================

The per-cell decisions are :func:`judge`'s; the other forms are decided on one interval
(:func:`ibrobust.claims.rules.decide`). Pure functions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ibrobust.claims.intervals import LEVEL, Interval
from ibrobust.claims.measurement import CELLS, LEVEL_KIND, TREND, Measurement
from ibrobust.claims.rules import Decision, Rule, decide
from ibrobust.claims.verdicts import FAILS, HOLDS, INCONCLUSIVE, WEAKER, NotRun

EXISTENTIAL, UNIVERSAL, ASYMPTOTIC = "existential", "universal", "asymptotic"
BOUND, EQUIVALENCE, DIRECTION = "bound", "equivalence", "direction"
FORMS = (EXISTENTIAL, UNIVERSAL, ASYMPTOTIC, BOUND, EQUIVALENCE, DIRECTION)
# the measurement kinds each form may be judged on
KINDS = {
    EXISTENTIAL: (CELLS,),
    UNIVERSAL: (CELLS,),
    ASYMPTOTIC: (TREND,),
    BOUND: (LEVEL_KIND, TREND),
    EQUIVALENCE: (LEVEL_KIND,),
    DIRECTION: (LEVEL_KIND, TREND),
}


class FormError(ValueError):
    """A claim whose rule or measurement does not fit its declared form."""


def is_direction(rule: Rule) -> bool:
    """Strong = weak = one side of a finite bound (P5)."""
    return rule.strong == rule.weak and sum(math.isfinite(b) for b in rule.strong) == 1


def number_or_direction(rule: Rule) -> str:
    """The form of a claim whose source gives a number in one scope (a readout, an
    architecture) and only the direction in the others: a bound where the rule carries the
    number, a direction where it does not."""
    return DIRECTION if is_direction(rule) else BOUND


def check_rule(claim_id: str, form: str, rule: Rule) -> None:
    """FormError naming the claim when ``rule`` is not of the family ``form`` fixes."""
    if form not in FORMS:
        raise FormError(f"claim {claim_id}: form {form!r} is not one of {list(FORMS)}")
    fail = _rule_misfit(form, rule)
    if fail:
        raise FormError(f"claim {claim_id} ({form}): {fail}")


def _rule_misfit(form: str, rule: Rule) -> str:
    if form == DIRECTION and not is_direction(rule):
        return (
            "a direction (P5) has strong = weak = one side of a bound, got strong "
            f"{rule.strong}, weak {rule.weak}"
        )
    numbers = [b for b in rule.strong if math.isfinite(b) and b != 0]
    if form == BOUND and rule.strong == rule.weak and not numbers:
        return (
            "a bound (P1 / P2 / P3) has a strong region around the source's number (and a "
            "weaker one in the same direction, or the bound as stated), got strong = weak = "
            f"{rule.strong} (a direction: declare the form direction)"
        )
    if form == EQUIVALENCE:
        ends = (*rule.strong, *rule.weak)
        if not all(math.isfinite(b) for b in ends) or not rule.strong[0] <= 0 <= rule.strong[1]:
            return (
                "an equivalence is a finite margin around 0 (strong within weak), got strong "
                f"{rule.strong}, weak {rule.weak}"
            )
        if not rule.basis.strip():
            return (
                "an equivalence's margin needs its derivation from the source's own scale in "
                "the passage (Rule.basis), or 'P4: ' and why the source gives none"
            )
    if form == ASYMPTOTIC and not is_direction(rule) and not rule.basis.strip():
        return (
            "an asymptotic statement fixes no constant: judge the trend's direction, or give "
            "the quote that states the constant (Rule.basis)"
        )
    return ""


def check_measurement(claim_id: str, form: str, m: Measurement) -> None:
    """FormError naming the claim when ``m`` is not a kind of measurement ``form`` may be
    judged on (e.g. an asymptotic claim measured at one stopping point, an existential claim
    measured as one average)."""
    allowed = KINDS[form]
    if m.kind not in allowed:
        raise FormError(
            f"claim {claim_id} ({form}): measured as a {m.kind}, but this form is judged on "
            f"{' or '.join(allowed)} measurements"
        )
    if m.kind == TREND and not m.along.strip():
        raise FormError(f"claim {claim_id} ({form}): a trend names the variable it runs along")


def trend(m: Measurement, along: str) -> Measurement:
    """``m`` (a slope or a last/first ratio with its interval) marked as a trend along the
    variable ``along`` (e.g. "training steps t", "log k")."""
    return replace(m, kind=TREND, along=along)


def along(compute: Callable, variable: str) -> Callable:
    """A claim's ``compute`` whose measurement (a slope or a last/first ratio) is marked as a
    trend along ``variable`` (:func:`trend`)."""
    return lambda src, ctx: trend(compute(src, ctx), variable)


def per_cell(cells: Sequence[tuple[str, Measurement]], note: str = "") -> Measurement:
    """One measurement per cell of a grid (cell name, its measurement over units), as one
    measurement of kind ``cells`` for an existential or universal claim. Its values are the
    cells' means (for the spread shown); its verdict is :func:`judge`'s."""
    if not cells:
        raise NotRun("no cells to measure")
    names = tuple(name for name, _ in cells)
    if len(set(names)) != len(names):
        raise ValueError(f"cell names repeat: {names}")
    return Measurement(
        values=tuple(c.mean for _, c in cells),
        unit="cells",
        note=note,
        labels=names,
        kind=CELLS,
        cells=tuple(cells),
    )


def corrected_level(level: float, cells: int) -> float:
    """The per-cell level of a Bonferroni correction over ``cells`` cells: 1 - (1 - level) / m."""
    return 1 - (1 - level) / cells


@dataclass(frozen=True)
class CellResult:
    name: str
    decision: Decision
    interval: Interval | None


def _per_cell(rule: Rule, m: Measurement, level: float) -> list[CellResult]:
    out = []
    for name, cm in m.cells:
        out.append(CellResult(name, decide(rule, cm, level), cm.ci(level)))
    return out


def judge(form: str, rule: Rule, m: Measurement, level: float = LEVEL) -> Decision:
    """The verdict of ``rule`` on ``m`` under ``form``: one interval for every form but
    the per-cell ones; existential: holds (weaker) if some cell's corrected interval lies in
    the strong (weak) region, does not hold if every cell's lies wholly outside the weak
    region, else inconclusive; universal: holds (weaker) if every cell's interval at
    ``level`` does, does not hold if some cell's corrected interval lies outside the weak
    region, else inconclusive. The reason names the cells that decide; the decision carries
    the interval of the cell it shows (the ledger's ours)."""
    if form not in (EXISTENTIAL, UNIVERSAL):
        return decide(rule, m, level)
    k = len(m.cells)
    corr = corrected_level(level, k)
    corrected = _per_cell(rule, m, corr)
    tag = f"Bonferroni over {k} cells, each at {100 * corr:.4g} %"
    if form == EXISTENTIAL:
        for verdict in (HOLDS, WEAKER):
            shown = [c for c in corrected if c.decision.verdict == verdict]
            if shown:
                return _cells_decision(verdict, shown, f"{verdict} in", k, tag)
        if all(c.decision.verdict == FAILS for c in corrected):
            return _cells_decision(FAILS, _closest(rule, corrected), "no cell shows it:", k, tag)
        open_ = [c for c in corrected if c.decision.verdict == INCONCLUSIVE]
        return _cells_decision(INCONCLUSIVE, open_, "undecided in", k, tag)
    failing = [c for c in corrected if c.decision.verdict == FAILS]
    if failing:
        return _cells_decision(FAILS, failing, "does not hold in", k, tag)
    plain = _per_cell(rule, m, level)
    tag_plain = f"every cell at {100 * level:g} %"
    for verdict, allowed in ((HOLDS, (HOLDS,)), (WEAKER, (HOLDS, WEAKER))):
        if all(c.decision.verdict in allowed for c in plain):
            weakest = [c for c in plain if c.decision.verdict == verdict]
            return _cells_decision(verdict, weakest, f"{verdict} in all {k} cells;", k, tag_plain)
    open_ = [c for c in plain if c.decision.verdict not in (HOLDS, WEAKER)]
    return _cells_decision(INCONCLUSIVE, open_, "undecided in", k, tag_plain)


def _closest(rule: Rule, cells: list[CellResult]) -> list[CellResult]:
    """The cell whose interval comes nearest the weak region (the one closest to showing it)."""

    def gap(c: CellResult) -> float:
        if c.interval is None:
            return math.inf
        lo, hi = rule.weak
        return max(lo - c.interval.hi, c.interval.lo - hi, 0.0)

    return [min(cells, key=gap)]


def _cells_decision(verdict: str, shown: list[CellResult], what: str, k: int, tag: str) -> Decision:
    names = ", ".join(c.name for c in shown)
    count = f"{len(shown)} of {k} cells" if what.endswith("in") else ""
    reason = f"{what} {count + ': ' if count else ''}{names} ({tag})"
    first = shown[0]
    return Decision(verdict, reason, interval=first.interval, cell=first.name)


def cells_text(m: Measurement, level: float = LEVEL, corrected: bool = True) -> str:
    """Every cell's mean and (corrected) interval: ``eps=0.25: +0.012 [-0.01, 0.03]; ...``."""
    lv = corrected_level(level, len(m.cells)) if corrected else level
    parts = []
    for name, cm in m.cells:
        iv = cm.ci(lv)
        hi = "inf" if iv is not None and iv.hi == math.inf else f"{iv.hi:.3g}" if iv else ""
        parts.append(f"{name}: {cm.mean:.3g}" + (f" [{iv.lo:.3g}, {hi}]" if iv else ""))
    return "; ".join(parts)
