"""Error control across looks: the union-bound alpha spending of the ledger's level.

A row judged again after more units is a repeated look at the same claim. Judging every look
on a 95 % interval makes the chance that *some* look gives a wrong "holds" or "does not
hold" grow with the looks (the naive column of ``benchmarks/decide_looks.py``). The method
here spends the ledger's error ``alpha = 1 - ledger.level`` over the looks: look ``k`` is
judged on the row's usual interval (:mod:`ibrobust.claims.intervals`: t, bootstrap, Wilson,
a pooled slope) at the level ``1 - alpha_k`` with

    alpha_k = alpha * k^-s / zeta(s)        (s = decide.spending_power, default 2:
                                             alpha_k = alpha * 6 / (pi^2 k^2))

so that ``sum_k alpha_k = alpha``. By the union bound the chance that any of the looks'
intervals misses the true value is at most ``alpha``, whatever the number of looks and
however the units added at each look depend on the data seen so far (the planner's choice):
each look's interval only has to hold its own level, which the existing intervals do (the
t interval exactly for normal units). Look 1 is judged at ``1 - alpha_1`` too (96.96 % for
alpha 0.05, s 2): a sequence that spent all of alpha at its first look would have nothing
left for the second.

Why not a library: ``confseq`` (Howard, Ramdas et al.), the maintained package of
anytime-valid confidence sequences, covers bounded values (betting, empirical Bernstein on
[0, 1]) and sub-Gaussian values with a known scale; the ledger's units are a few (2-10)
unbounded values of unknown variance (radii, slopes, accuracy differences), where those
sequences are far wider than a t interval, and it builds a C++ extension from source. A
group-sequential design (Lan-DeMets spending over a declared number of looks) needs that
number declared in advance; the planner's looks are open-ended. The union bound over the
existing intervals is a few lines and valid for any number of data-dependent looks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

METHODS = ("union_bound",)  # decide.ci_method's values (the schema's enum)


@dataclass(frozen=True)
class Spending:
    """The union-bound spending of ``alpha`` over looks 1, 2, ...: ``alpha_k = alpha *
    k^-power / zeta(power)`` (``power`` > 1 so that the sum is finite; a larger power spends
    more of alpha at the first looks)."""

    alpha: float
    power: float = 2.0

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {self.alpha!r}")
        if not self.power > 1:
            raise ValueError(f"decide.spending_power must be > 1, got {self.power!r}")

    def alpha_at(self, look: int) -> float:
        """The error spent at look ``look`` (1-based)."""
        if look < 1:
            raise ValueError(f"looks count from 1, got {look}")
        return self.alpha * look**-self.power / _zeta(self.power)

    def level_at(self, look: int) -> float:
        """The two-sided level look ``look`` is judged at."""
        return 1 - self.alpha_at(look)

    def spent(self, looks: int) -> float:
        """The error spent by looks 1..``looks`` together (at most ``alpha``)."""
        return sum(self.alpha_at(k) for k in range(1, looks + 1))

    def method(self, look: int) -> str:
        """How the ledger's ``ci_method`` names a look's level."""
        return (
            f"look {look}, union-bound alpha spending "
            f"(alpha {self.alpha:g} x k^-{self.power:g} / zeta({self.power:g}): "
            f"{100 * self.level_at(look):.2f} %)"
        )


def _zeta(s: float) -> float:
    from scipy.special import zeta  # here: the Snakefile imports this module torch-free, fast

    return float(zeta(s))


def spending(level: float, ci_method: str = "union_bound", power: float = 2.0) -> Spending:
    """The config's method (``decide.ci_method``, ``decide.spending_power``) at the
    ledger's level (``ledger.level``)."""
    if ci_method not in METHODS:
        raise ValueError(f"decide.ci_method must be one of {list(METHODS)}, got {ci_method!r}")
    if not 0 < level < 1 or math.isnan(level):
        raise ValueError(f"ledger.level must be in (0, 1), got {level!r}")
    return Spending(1 - level, power)
