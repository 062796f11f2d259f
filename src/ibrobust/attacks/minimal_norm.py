"""Per-point minimal adversarial distances: FAB (from above, tight) and l2 PGD bisection.

Study MARGIN measures a point's robustness R(x) = the distance from x to the nearest
misclassified input in the [0, 1] box, and robust accuracy at eps = the fraction of
points with R(x) > eps. Any adversarial example found gives an *upper* bound on R(x);
a minimal-norm attack searches for the closest one.

:func:`fab_distances`: FAB (Croce & Hein, ICML 2020, "Minimally distorted adversarial
examples with a fast adaptive boundary attack"), the untargeted ``FABAttack_PT`` of the
official AutoAttack code (PyPI ``pyautoattack``, already a dependency of the project's
attack suite). Why FAB: it is built to *minimise* the perturbation norm (l2, l_inf or
l1) rather than to succeed within a fixed eps, it is maintained with AutoAttack, and it
needs no step-size or constant search (Carlini-Wagner needs a binary search on its
constant per point and thousands of iterations). We call ``attack_single_run`` once per
restart (the first from x itself, the others from FAB's own random starts) and keep,
per point, the smallest perturbation that the *model* (in its own dtype) misclassifies,
so AutoAttack's "first success wins" of ``perturb`` does not hide a smaller one; then
a bisection on the segment from x to FAB's point (``refine_steps``) removes FAB's
deliberate overshoot (eta = 1.05), which otherwise leaves it ~0.5% above l2 PGD bisection.
FAB works in float32 (it casts its inputs); the model wrapper feeds it in the model's dtype.

:func:`pgd_bisection` is the independent cross-check: per point, the smallest l2 radius
at which l2 PGD on the Carlini-Wagner margin (``fine_margin``, with restarts) finds a
misclassified point, by doubling then bisection. It is also an upper bound on R(x), so
a good minimal-norm attack should lie below it; the certified radius of
:mod:`ibrobust.analysis.lipschitz` lies below both.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from ibrobust.attacks.losses import fine_margin
from ibrobust.attacks.mode import attack_mode
from ibrobust.attacks.pgd import PGDConfig, _pgd_chunk
from ibrobust.attacks.tasks import get_task

FAB_NORMS = {"l2": "L2", "linf": "Linf", "l1": "L1"}  # ours -> AutoAttack's


@dataclass(frozen=True)
class FABConfig:
    norm: str = "l2"  # "l2", "linf" or "l1"
    n_iter: int = 100  # FAB's default
    restarts: int = 1  # 1 = FAB from x only; more add FAB's random starts
    batch_size: int = 250
    # FAB's own defaults (AutoAttack): step cap, overshoot, backward step; restart radius
    alpha_max: float = 0.1
    eta: float = 1.05
    beta: float = 0.9
    restart_eps: float | None = None  # None: AutoAttack's default for the norm
    # bisection on the segment x -> x_adv after FAB: FAB overshoots the boundary by design
    # (eta = 1.05); the smallest misclassified point on the segment only tightens the bound
    refine_steps: int = 20

    def __post_init__(self) -> None:
        if self.norm not in FAB_NORMS:
            raise ValueError(f"norm must be one of {sorted(FAB_NORMS)}, got {self.norm!r}")
        for key in ("n_iter", "restarts", "batch_size"):
            v = getattr(self, key)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{key} must be a positive integer, got {v!r}")
        if not isinstance(self.refine_steps, int) or self.refine_steps < 0:
            raise ValueError(f"refine_steps must be an integer >= 0, got {self.refine_steps!r}")


@torch.no_grad()
def refine_on_segment(
    model: nn.Module, x: torch.Tensor, adv: torch.Tensor, y: torch.Tensor, steps: int
) -> torch.Tensor:
    """x + t (adv - x) with the smallest t in (0, 1] found misclassified by ``steps``
    bisections (adv itself must be misclassified): an adversarial point no farther than adv."""
    dtype = next(model.parameters()).dtype
    lo = torch.zeros(len(x), 1, dtype=torch.float64, device=x.device)
    hi = torch.ones(len(x), 1, dtype=torch.float64, device=x.device)
    shape = (-1,) + (1,) * (x.ndim - 1)
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        pt = x + mid.reshape(shape).to(x.dtype) * (adv - x)
        wrong = (model(pt.to(dtype)).argmax(1) != y)[:, None]
        hi = torch.where(wrong, mid, hi)
        lo = torch.where(wrong, lo, mid)
    return x + hi.reshape(shape).to(x.dtype) * (adv - x)


def _norm(delta: torch.Tensor, norm: str) -> torch.Tensor:  # (n, *s) -> (n,)
    flat = delta.flatten(1)
    if norm == "l2":
        return flat.norm(dim=1)
    if norm == "linf":
        return flat.abs().amax(dim=1)
    return flat.abs().sum(dim=1)


class _Float32Logits(nn.Module):
    """FAB's view of ``model``: float32 in, the model's dtype inside, float32 logits out."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model
        self.dtype = next(model.parameters()).dtype

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(x.to(self.dtype)).float()


def fab_distances(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    cfg: FABConfig,
    seed: int,
    tick: Callable[[], None] | None = None,
) -> torch.Tensor:
    """(n,) float64 minimal adversarial distances in ``cfg.norm`` of the points x (n, C, H, W)
    in [0, 1] with labels y (n,) int64: 0 for points the model already misclassifies,
    inf where FAB found no adversarial example. ``tick()`` (progress): after each restart
    of each batch."""
    from pyautoattack.fab_pt import FABAttack_PT  # here: the Snakefile reads this module

    if x.min() < 0 or x.max() > 1:
        raise ValueError("FAB needs inputs in the box [0, 1]")
    wrapped = _Float32Logits(model)
    dist = torch.full((len(x),), math.inf, dtype=torch.float64, device=x.device)
    with attack_mode(model), torch.random.fork_rng(devices=[]):
        fab = FABAttack_PT(
            wrapped,
            norm=FAB_NORMS[cfg.norm],
            n_restarts=1,
            n_iter=cfg.n_iter,
            eps=cfg.restart_eps,
            alpha_max=cfg.alpha_max,
            eta=cfg.eta,
            beta=cfg.beta,
            seed=seed,
            device=x.device,
        )
        torch.random.manual_seed(seed)
        for lo in range(0, len(x), cfg.batch_size):
            xb = x[lo : lo + cfg.batch_size].float()
            yb = y[lo : lo + cfg.batch_size]
            with torch.no_grad():
                wrong = wrapped(xb).argmax(1) != yb
            best = torch.where(wrong, 0.0, math.inf).to(torch.float64)
            todo = (~wrong).nonzero().squeeze(1)
            for r in range(cfg.restarts):
                if len(todo) == 0:
                    break
                adv = fab.attack_single_run(xb[todo], yb[todo], use_rand_start=r > 0)
                with torch.no_grad():
                    fooled = model(adv.to(wrapped.dtype)).argmax(1) != yb[todo]
                if cfg.refine_steps and fooled.any():
                    hit = fooled.nonzero().squeeze(1)
                    adv[hit] = refine_on_segment(
                        model, xb[todo][hit], adv[hit], yb[todo][hit], cfg.refine_steps
                    )
                d = _norm((adv - xb[todo]).to(torch.float64), cfg.norm)
                d = torch.where(fooled, d, math.inf)
                best[todo] = torch.minimum(best[todo], d)
                if tick is not None:
                    tick()
            dist[lo : lo + len(xb)] = best
    return dist


@dataclass(frozen=True)
class BisectionConfig:
    steps: int = 50  # PGD steps per radius
    restarts: int = 2  # PGD restarts per radius (random starts)
    step_size: float = 0.1  # relative to the radius
    start: float = 1.0  # first radius tried; doubled until PGD succeeds
    doublings: int = 8  # at most start * 2^doublings
    bisections: int = 10  # bracket shrinks 2^bisections x

    def __post_init__(self) -> None:
        for key in ("steps", "restarts", "doublings", "bisections"):
            v = getattr(self, key)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{key} must be a positive integer, got {v!r}")
        if not (self.step_size > 0 and self.start > 0):
            raise ValueError(f"step_size and start must be > 0, got {self.step_size}, {self.start}")


def pgd_bisection(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    cfg: BisectionConfig,
    gen: torch.Generator,
    box: tuple[float, float] | None = (0.0, 1.0),
    tick: Callable[[], None] | None = None,
) -> torch.Tensor:
    """(n,) float64 upper bounds on the minimal l2 adversarial distance of x (n, *s), y (n,)
    int64: the smallest radius at which l2 PGD (``fine_margin`` loss) misclassifies, within
    a factor 1 + 2^-bisections of the bracket; 0 for misclassified points, inf if PGD
    fails even at ``start * 2^doublings``. All points move through the search together;
    ``box`` None = unconstrained inputs (cluster data). ``tick()`` (progress): after each
    PGD restart."""
    fooled_at = _PGDProbe(model, x, y, cfg, gen, box, tick)
    with attack_mode(model):
        with torch.no_grad():
            wrong = model(x.to(fooled_at.dtype)).argmax(1) != y
        lo = torch.zeros(len(x), dtype=torch.float64, device=x.device)
        hi = torch.full((len(x),), math.inf, dtype=torch.float64, device=x.device)
        hi[wrong] = 0.0
        eps = torch.full((len(x),), cfg.start, dtype=torch.float64, device=x.device)
        for _ in range(cfg.doublings + 1):  # bracket: PGD fails at lo, succeeds at hi
            idx = torch.isinf(hi).nonzero().squeeze(1)
            if len(idx) == 0:
                break
            ok = fooled_at(eps[idx], idx)
            hi[idx[ok]] = eps[idx[ok]]
            lo[idx[~ok]] = eps[idx[~ok]]
            eps[idx[~ok]] *= 2
        lo[wrong] = 0.0
        for _ in range(cfg.bisections):
            idx = (torch.isfinite(hi) & ~wrong).nonzero().squeeze(1)
            if len(idx) == 0:
                break
            mid = 0.5 * (lo[idx] + hi[idx])
            ok = fooled_at(mid, idx)
            hi[idx[ok]] = mid[ok]
            lo[idx[~ok]] = mid[~ok]
    return hi


class _PGDProbe:
    """Whether l2 PGD at per-point radii eps (m,) misclassifies the points idx (m,)."""

    def __init__(self, model, x, y, cfg: BisectionConfig, gen, box, tick=None):
        self.model, self.y, self.gen, self.box, self.tick = model, y, gen, box, tick
        self.pgd = PGDConfig(
            norm="l2", steps=cfg.steps, restarts=cfg.restarts, step_size=cfg.step_size
        )
        self.task = get_task("fine")
        self.dtype = next(model.parameters()).dtype
        self.xf = x.to(self.dtype).flatten(1)  # (n, D)
        self.shape = tuple(x.shape[1:])
        self.yf = y.to(self.dtype)

    def __call__(self, eps: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        xf, yf, y = self.xf[idx], self.yf[idx], self.y[idx]
        radius = eps[:, None].to(self.dtype)
        adv = _pgd_chunk(
            self.model, xf, yf, y, radius, fine_margin, self.pgd, self.gen, self.box,
            self.task, self.shape, 1, on_batch=self.tick,
        )  # fmt: skip
        with torch.no_grad():
            return ~self.task.correct(self.model, adv.reshape(-1, *self.shape), yf, y)


def robust_accuracy_curve(distances: torch.Tensor, eps: torch.Tensor) -> torch.Tensor:
    """(E,) fraction of points with distance > eps (R(x) > eps) for each radius in eps (E,)."""
    return (distances[None, :] > eps[:, None].to(distances.dtype)).double().mean(1)
