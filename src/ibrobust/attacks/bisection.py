"""Per-point critical radii by bisection under the worst case over an attack set.

A point's critical radius under a set of attacks is the smallest radius at which *any* of
them flips it (the worst case over attacks, the robust accuracy of
:mod:`ibrobust.attacks.suite`). On a radius grid it is known only to within the grid cell
where the point is first flipped; :func:`bisect_radii` narrows each point's cell to a stated
tolerance by bisection, asking at each midpoint whether any attack flips the point there
(:func:`worst_case_oracle`: the same attacks, through their kinds' ``run_spec``, never
weakened). The bracket starts from the grid (:func:`grid_brackets`): the largest grid radius
at which every attack failed, the smallest at which one succeeded, so bisection can only
lower a point's radius below the grid's and the robust accuracy it gives at any grid radius
is at most the grid's.

The study's critical radius (the first radius at which robust accuracy falls to ``level``)
is an order statistic of the per-point radii (:func:`crossing_bracket`): robust accuracy at
r is the fraction of points whose radius exceeds r, so it falls to ``level`` at the k-th
smallest radius, k = ceil((1 - level) n); with each radius in [lo_i, hi_i], that order
statistic lies in [k-th smallest lo, k-th smallest hi], a bracket no wider than the
tolerance.

Points whose bisection midpoints coincide are attacked together (one attack call per
distinct radius, as the suite's grid), so the attacks' scalar-radius interface is kept.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from ibrobust.attacks.mode import attack_mode
from ibrobust.attacks.suite import AttackContext, parse_attack

# (idx (m,) int64, radius) -> (m,) bool: flipped at that radius by some attack
Oracle = Callable[[torch.Tensor, float], torch.Tensor]


def grid_brackets(
    correct: Mapping[str, torch.Tensor], radii: Sequence[float]
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per point, the grid cell (lo, hi] of its critical radius under the worst case over
    the attacks: ``correct`` maps each attack to its (R, n) bool mask over ``radii`` (the
    suite's masks, monotone in the radius). lo: the largest grid radius below the first at
    which some attack flips the point (0 when it is flipped at the smallest radius); hi: that
    first radius (inf where no attack flips it on the grid: lo is the grid's top). A point
    misclassified clean has (0, 0) when the grid starts at 0."""
    if not correct:
        raise ValueError("grid_brackets needs at least one attack's mask")
    order = sorted(range(len(radii)), key=lambda i: radii[i])
    r = torch.tensor([float(radii[i]) for i in order], dtype=torch.float64)
    worst = torch.stack([m[order] for m in correct.values()]).all(0)  # (R, n)
    n = worst.shape[1]
    lo = torch.zeros(n, dtype=torch.float64)
    hi = torch.full((n,), math.inf, dtype=torch.float64)
    flipped = ~worst.cpu()
    any_flip = flipped.any(0)
    first = torch.argmax(flipped.to(torch.int8), dim=0)  # first True (0 where none)
    hi[any_flip] = r[first[any_flip]]
    prev = (first - 1).clamp(min=0)
    lo[any_flip] = torch.where(first[any_flip] > 0, r[prev[any_flip]], torch.zeros(()).double())
    lo[~any_flip] = r[-1]
    return lo, hi


def bisect_radii(
    flipped_at: Oracle,
    lo: torch.Tensor,
    hi: torch.Tensor,
    tolerance: float,
    max_steps: int = 60,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Bisect each point's bracket (lo_i, hi_i] (flipped at hi_i, not at lo_i) until
    hi_i - lo_i <= ``tolerance``: at the midpoint, ``flipped_at(idx, mid)`` says which of the
    points idx some attack flips there (then hi = mid, else lo = mid). Points with an infinite
    hi (never flipped) keep their bracket. Returns the final (lo, hi), float64 (n,)."""
    if not tolerance > 0:
        raise ValueError(f"tolerance must be > 0, got {tolerance}")
    lo, hi = lo.clone().double(), hi.clone().double()
    if lo.shape != hi.shape or bool((lo > hi).any()):
        raise ValueError("brackets need lo <= hi, of one shape")
    for _ in range(max_steps):
        todo = (torch.isfinite(hi) & (hi - lo > tolerance)).nonzero().flatten()
        if todo.numel() == 0:
            break
        mid = 0.5 * (lo[todo] + hi[todo])
        for value in torch.unique(mid).tolist():
            idx = todo[mid == value]
            flip = flipped_at(idx, float(value)).to(torch.bool).cpu()
            hi[idx[flip]] = value
            lo[idx[~flip]] = value
    else:
        todo = torch.isfinite(hi) & (hi - lo > tolerance)
        if bool(todo.any()):
            raise RuntimeError(
                f"{int(todo.sum())} brackets wider than {tolerance} after {max_steps} steps"
            )
    return lo, hi


def worst_case_oracle(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    fine: torch.Tensor,
    specs: Mapping[str, dict],
    ctx: AttackContext,
    gen: torch.Generator,
) -> Oracle:
    """Whether some attack of ``specs`` (the config's attack entries, in their order) flips
    the points idx at a radius: each attack runs, through its kind's ``run_spec``, on the
    points no earlier attack has flipped (as the suite's worst case)."""
    kinds = [parse_attack(spec) for spec in specs.values()]

    def flipped_at(idx: torch.Tensor, eps: float) -> torch.Tensor:
        idx = idx.to(x.device)
        alive = torch.ones(idx.numel(), dtype=torch.bool, device=x.device)
        with attack_mode(model):
            for kind, cfg in kinds:
                live = alive.nonzero().flatten()
                if live.numel() == 0:
                    break
                j = idx[live]
                alive[live] = kind.run_spec(model, x[j], y[j], fine[j], float(eps), cfg, ctx, gen)
        return ~alive

    return flipped_at


@dataclass(frozen=True)
class Crossing:
    """The radius at which robust accuracy falls to ``level``, from per-point brackets: it
    lies in [lo, hi] (hi = inf: censored, more than ``level`` of the points survive the
    grid's top). ``value``: the bracket's midpoint (lo when censored)."""

    lo: float
    hi: float
    level: float

    @property
    def value(self) -> float:
        return self.lo if math.isinf(self.hi) else 0.5 * (self.lo + self.hi)

    @property
    def censored(self) -> bool:
        return math.isinf(self.hi)


def crossing_cell(lo: torch.Tensor, hi: torch.Tensor, level: float = 0.5) -> torch.Tensor:
    """Which points' brackets are the crossing's own (:func:`crossing_bracket`): those equal
    to its (lo, hi]. Bisecting only them narrows the crossing as far as bisecting every
    point would (the other points' brackets lie wholly below or above it: on a grid the
    brackets are cells, which do not overlap), at the cost of one attack call per step."""
    c = crossing_bracket(lo, hi, level)
    return (lo.double() == c.lo) & (hi.double() == c.hi)


def crossing_bracket(lo: torch.Tensor, hi: torch.Tensor, level: float = 0.5) -> Crossing:
    """The first radius at which the fraction of points whose radius exceeds it falls to
    ``level``: the k-th smallest radius, k = ceil((1 - level) n), bracketed by the k-th
    smallest lower and upper ends."""
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    n = lo.numel()
    if n == 0 or hi.numel() != n:
        raise ValueError("crossing_bracket needs one bracket per point, at least one point")
    k = math.ceil((1 - level) * n - 1e-9)  # 1e-9: (1 - 0.5) * 1000 is 500, not 500.0000001
    k = min(max(k, 1), n)
    a = torch.sort(lo.double()).values[k - 1]
    b = torch.sort(hi.double()).values[k - 1]
    return Crossing(float(a), float(b), level)
