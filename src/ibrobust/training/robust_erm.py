"""Robust ERM for linear models and diagonal nets under l_inf perturbations, vectorised.

Tsilivis, Frank, Srebro, Kempe (NeurIPS 2024), Sec. 4-5.1. For eps >= 0 the worst-case
margin of w on (x_i, y_i) is the closed form ``m_i(w) = y_i <w, x_i> - eps ||w||_1`` and
the robust exponential loss is ``L(w) = (1/n) sum_i exp(-m_i(w))``, kept in log space:
``log L = logsumexp(-m) - log n`` (finite for margins of any size, so losses far below
1e-300 neither underflow nor give NaN). A *batch* of B independent problems -- data
draws x eps values -- runs as one tensor program: x (B, n, d), y (B, n), eps (B,),
w (B, d).

Algorithms (``RobustERMConfig.algorithm``):

* ``"gd"``  steepest descent w.r.t. l2 (gradient descent) on w, zero init;
* ``"cd"``  steepest descent w.r.t. l1 (coordinate descent), zero init;
* ``"sd"``  steepest descent w.r.t. l_inf (sign descent), zero init;
* ``"diag_gd"`` gradient descent on (u, v) of the diagonal net w = u*u - v*v, init
  u = v = alpha / sqrt(d) (:mod:`ibrobust.models.diagonal`).

The step directions come from :func:`ibrobust.updates.steepest.steepest_direction`, the
same function :class:`~ibrobust.updates.steepest.SteepestDescent` uses, so the two cannot
diverge (a unit test runs both side by side).

Numerics. Every step uses the loss-normalised gradient ``G = grad L / L = sum_i p_i
grad(-m_i)`` with ``p = softmax(-m)`` (O(1), never underflows) and multiplies the
direction by ``eta_t * L`` (``scale="dual"``, degree-1 homogeneous direction) or ``eta_t``
(``scale="unit"``), both formed in log space. The adaptive step size is
``eta_t = min(lr_max, c / L(w_t))``, so the dual step is ``min(lr_max * L, c) * dir(G)``.

Subgradient of ||w||_1 at w_j = 0 (``zero_subgradient``): ``"min_norm"`` (default) takes
the element of the subdifferential of least magnitude, i.e. soft-thresholds the data
gradient by eps on zero coordinates -- the choice of the steepest *flow* of Theorem 4.3,
and what keeps coordinate descent from picking a coordinate whose penalty outweighs
its gain. ``"zero"`` takes sign(0) = 0, which is what autograd through ``abs`` gives
(the behaviour of a plain PyTorch implementation).

Stopping rule (identical for all algorithms): problem b stops as soon as its train loss
is below ``loss_threshold`` (checked before each step) or after ``max_iters`` steps;
``iters[b]`` is the number of steps it took. A problem whose log-loss turns non-finite
(a step size that diverges) stops too and is flagged ``diverged``. Finished problems are
removed from the working batch, so they cost nothing and their iterates are exactly
those of a run on their own.

Checkpoints (``checkpoint_decades``). The iterate of each problem at every *decade of the
train loss*: the first step t at which L(w_t) <= 10^-k, for k = 1, 2, ... (a grid fixed in
loss space, the same for every run; one checkpoint when a step crosses several decades at
once, at the deepest one; none once the loss is non-finite). A run that stops at a
threshold 10^-K has its stopping iterate as its last checkpoint. Each checkpoint keeps
(problem, t, log L, w): what the caller evaluates along training (e.g. the margin) with
the same functions it applies to the final w. Its cost is one comparison of (b,) losses
per step and a copy of w at the ~log10(1/L) checkpoints.

Speed (CPU, float64). The batch runs in consecutive cache-sized sub-batches
(``chunk_bytes``, default 8 MiB of signed inputs: 4 problems at n = d = 512); one
iteration is two batched matrix-vector products, memory-bound, and a sub-batch that
stays in the last-level cache is ~2.5x faster per problem than one 64 MiB batch. Run with
``torch.set_num_threads(1)`` when jobs share the cores: OpenMP barriers on a busy
2-core machine made 2 threads up to 20x slower (``benchmarks/bench_price_linear.py``).

Default c. ``c=None`` uses ``c_b = 1 / R_b^2`` with ``R_b = max_i ||x_bi||_*`` the largest
*dual* norm of the clean training inputs (l2 for gd / diag_gd, l_inf for cd, l1 for
sd): the exponential loss is (L R_*^2)-smooth w.r.t. ||.|| along the step, so this is the
natural ``eta_t = 1 / (R^2 L)`` of App. F.1 ("R is the largest norm of the train data").
The paper trains the diagonal net with a *constant* small step (``adaptive=False``): with
``c / L`` steps its parameter step is proportional to |u|, so w grows geometrically and
a large c diverges. ``c_scale`` multiplies the default per-problem c (``c_scale / R_b^2``):
for the diagonal net the (u, v)-space step is the w-space one times ~|u|, so from the
small init a multiple of ``1 / R^2`` is needed to leave the init within a few thousand
steps (the workflow's config records the value and why).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ibrobust.models.diagonal import diagonal_init, diagonal_weight
from ibrobust.training.loss_checkpoints import Checkpoints
from ibrobust.updates.steepest import SCALES, TIES, adaptive_log_lr, dual_norm, steepest_direction

# the geometry of each algorithm (diag_gd: GD on (u, v))
ALGORITHM_NORM = {"gd": "l2", "cd": "l1", "sd": "linf", "diag_gd": "l2"}
ALGORITHMS = tuple(ALGORITHM_NORM)
ZERO_SUBGRADIENTS = ("min_norm", "zero")
DTYPES = {"float64": torch.float64, "float32": torch.float32}
LN10 = math.log(10.0)
CHUNK_BYTES = 8 << 20  # sub-batch size that keeps the signed inputs in a CPU's last-level cache


@dataclass(frozen=True)
class RobustERMConfig:
    algorithm: str = "gd"  # "gd" | "cd" | "sd" | "diag_gd"
    adaptive: bool = True  # eta_t = min(lr_max, c / L(w_t)) (linear models, App. F.1); False -> lr
    lr: float = 1e-2  # constant step size when adaptive=False (the paper's diag-net choice)
    c: float | None = None  # adaptive numerator; None -> c_scale / (max_i ||x_i||_*)^2 per problem
    c_scale: float = 1.0  # multiplier of the default c (only with c=None; see module docstring)
    lr_max: float = (
        math.inf
    )  # cap eta_max of the adaptive step (the paper's finite value is not in our text)
    scale: str = "dual"  # "dual" (unnormalised steepest descent, Thm 4.3) | "unit" (normalised)
    tie: str = "split"  # coordinate-descent tie rule (see ibrobust.updates.steepest)
    zero_subgradient: str = "min_norm"  # d||w||_1 at w_j = 0: "min_norm" (soft threshold) | "zero"
    # the stopping rule's defaults = the schema's study_price_linear.stopping
    loss_threshold: float = 1e-4  # stop a problem once its train loss < this; 0 -> never
    max_iters: int = 5000
    alpha: float = 0.01  # diag_gd init scale: u = v = alpha / sqrt(d)
    dtype: str = "float64"
    history_every: int = 0  # > 0: record log-loss of all problems every this many steps
    checkpoint_decades: bool = False  # record (t, log L, w) at each decade of the loss

    def __post_init__(self) -> None:
        for key, allowed in (
            ("algorithm", ALGORITHMS),
            ("scale", SCALES),
            ("tie", TIES),
            ("zero_subgradient", ZERO_SUBGRADIENTS),
            ("dtype", tuple(DTYPES)),
        ):
            if getattr(self, key) not in allowed:
                raise ValueError(f"{key} must be one of {allowed}, got {getattr(self, key)!r}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if self.c is not None and not self.c > 0:
            raise ValueError(f"c must be > 0 or None, got {self.c}")
        if not self.c_scale > 0:
            raise ValueError(f"c_scale must be > 0, got {self.c_scale}")
        if self.c is not None and self.c_scale != 1.0:
            raise ValueError(
                f"c_scale scales the default c and needs c=None, got c={self.c}, "
                f"c_scale={self.c_scale}"
            )
        if not self.lr_max > 0:
            raise ValueError(f"lr_max must be > 0, got {self.lr_max}")
        if self.adaptive and self.scale == "unit" and not math.isfinite(self.lr_max):
            raise ValueError(
                f"lr_max must be finite for adaptive unit-scale steps, got {self.lr_max}"
            )
        if not 0 <= self.loss_threshold < 1:
            raise ValueError(f"loss_threshold must be in [0, 1), got {self.loss_threshold}")
        if self.max_iters < 0:
            raise ValueError(f"max_iters must be >= 0, got {self.max_iters}")
        if not self.alpha > 0:
            raise ValueError(f"alpha must be > 0, got {self.alpha}")
        if self.history_every < 0:
            raise ValueError(f"history_every must be >= 0, got {self.history_every}")

    @property
    def norm(self) -> str:
        return ALGORITHM_NORM[self.algorithm]


@dataclass
class RobustERMResult:
    w: torch.Tensor  # (B, d) final linear predictor (u*u - v*v for diag_gd)
    log_loss: torch.Tensor  # (B,) natural log of the final robust train loss
    iters: torch.Tensor  # (B,) int64 steps taken
    converged: torch.Tensor  # (B,) bool: loss < loss_threshold
    diverged: (
        torch.Tensor
    )  # (B,) bool: log-loss became non-finite (step size too large); stopped there
    c: torch.Tensor  # (B,) adaptive numerator used
    u: torch.Tensor | None = None  # (B, d) diag_gd only
    v: torch.Tensor | None = None
    # rows {"epoch": step, "log_loss": (B,)} (one full-batch step is one epoch); NaN once stopped
    history: list[dict] | None = None
    checkpoints: Checkpoints | None = None  # config.checkpoint_decades only


def robust_log_loss(
    w: torch.Tensor, z: torch.Tensor, eps: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """(log L (B,), margins (B, n)) for w (B, d), signed inputs z = y x (B, n, d), eps (B,).

    log L = logsumexp(-m) - log n with m = z w - eps ||w||_1: exact in log space.
    """
    # w^T z^T as a row-vector product: ~7x faster than z @ w for batched float64 bmm on CPU
    s = torch.bmm(w.unsqueeze(1), z.transpose(1, 2)).squeeze(1)  # (B, n)
    m = s - (eps * w.abs().sum(-1)).unsqueeze(-1)  # (B, n)
    return torch.logsumexp(-m, dim=-1) - math.log(z.shape[1]), m


def normalized_gradient(
    w: torch.Tensor,
    z: torch.Tensor,
    eps: torch.Tensor,
    m: torch.Tensor,
    zero_subgradient: str = "min_norm",
) -> torch.Tensor:
    """(B, d) G = grad L / L = sum_i p_i (-z_i + eps s), p = softmax(-m), s in d||w||_1."""
    p = torch.softmax(-m, dim=-1)  # (B, n), sums to 1
    data = -torch.bmm(p.unsqueeze(1), z).squeeze(1)  # (B, d)
    pen = eps.unsqueeze(-1)  # (B, 1); times sum_i p_i = 1
    g = data + pen * torch.sign(w)
    if zero_subgradient == "min_norm":
        soft = torch.sign(data) * (data.abs() - pen).clamp_min(0)  # least |.| in data + pen [-1, 1]
        g = torch.where(w == 0, soft, g)
    return g


def default_c(x: torch.Tensor, norm: str) -> torch.Tensor:
    """(B,) 1 / (max_i ||x_bi||_*)^2 for x (B, n, d), dual norm of the algorithm's ``norm``."""
    r = dual_norm(x, norm).amax(-1)  # (B,)
    if not bool((r > 0).all()):
        raise ValueError(
            "default c needs non-zero training inputs in every problem (max dual norm is 0)"
        )
    return 1.0 / r**2


def _as_batch(x: torch.Tensor, y: torch.Tensor, eps: float | torch.Tensor, dtype: torch.dtype):
    if x.dim() != 3 or y.shape != x.shape[:2]:
        raise ValueError(
            f"x must be (B, n, d) and y (B, n), got x {tuple(x.shape)} and y {tuple(y.shape)}"
        )
    x = x.to(dtype)
    y = y.to(dtype)
    if not bool((y.abs() == 1).all()):
        raise ValueError("y must be in {-1, +1}")
    eps = torch.as_tensor(eps, dtype=dtype, device=x.device)
    if eps.dim() == 0:
        eps = eps.expand(x.shape[0])
    if eps.shape != (x.shape[0],):
        raise ValueError(
            f"eps must be a float or (B,)=({x.shape[0]},), got shape {tuple(eps.shape)}"
        )
    if not bool((eps >= 0).all()):
        raise ValueError(f"eps must be >= 0, got min {float(eps.min())}")
    return x, y, eps.clone()


def train_robust_erm(
    x: torch.Tensor,
    y: torch.Tensor,
    eps: float | torch.Tensor,
    config: RobustERMConfig,
    *,
    chunk_bytes: int = CHUNK_BYTES,
) -> RobustERMResult:
    """Robust ERM on B independent problems at once (module docstring for the math).

    Args:
        x: (B, n, d) training inputs; y: (B, n) labels in {-1, +1};
        eps: l_inf radius, a float or (B,) per problem (0 -> standard ERM).
        config: algorithm, step size and stopping rule.
        chunk_bytes: problems run in consecutive sub-batches whose signed inputs take at
            most this many bytes (at least one problem each): each iteration streams
            the whole sub-batch through memory twice, so a sub-batch that stays in the
            CPU cache is several times faster per problem than one large batch. Only
            speed depends on it; every problem's iterates are its own.
    """
    dtype = DTYPES[config.dtype]
    x, y, eps = _as_batch(x, y, eps, dtype)
    bsz, n, d = x.shape
    if chunk_bytes < 1:
        raise ValueError(f"chunk_bytes must be >= 1, got {chunk_bytes}")
    c = (
        torch.full((bsz,), config.c, dtype=dtype)
        if config.c is not None
        else config.c_scale * default_c(x, config.norm)
    )
    diag = config.algorithm == "diag_gd"
    out = RobustERMResult(
        w=torch.zeros((bsz, d), dtype=dtype),
        log_loss=torch.zeros(bsz, dtype=dtype),
        iters=torch.zeros(bsz, dtype=torch.int64),
        converged=torch.zeros(bsz, dtype=torch.bool),
        diverged=torch.zeros(bsz, dtype=torch.bool),
        c=c,
        u=torch.zeros((bsz, d), dtype=dtype) if diag else None,
        v=torch.zeros((bsz, d), dtype=dtype) if diag else None,
        history=[] if config.history_every else None,
    )
    per_problem = n * d * torch.finfo(dtype).bits // 8
    step = max(1, chunk_bytes // per_problem)
    history: dict[int, torch.Tensor] = {}
    checkpoints: list | None = [] if config.checkpoint_decades else None
    for lo in range(0, bsz, step):
        sl = slice(lo, min(lo + step, bsz))
        _train_chunk(x[sl], y[sl], eps[sl], c[sl], config, out, sl, history, checkpoints)
    if checkpoints is not None:
        out.checkpoints = Checkpoints.stack(checkpoints, d, dtype)
    log_thr = math.log(config.loss_threshold) if config.loss_threshold > 0 else -math.inf
    out.converged = out.log_loss < log_thr
    out.diverged = ~torch.isfinite(out.log_loss)
    if out.history is not None:
        out.history = [{"epoch": t, "log_loss": row} for t, row in sorted(history.items())]
    return out


def _checkpoint(checkpoints: list, idx, t: int, log_loss, w, next_log) -> None:
    """Record the problems whose loss reached their next decade (``next_log``, updated in
    place to the decade below the deepest one reached)."""
    new = log_loss <= next_log
    if bool(new.any()):
        new &= torch.isfinite(log_loss)
        checkpoints.append((idx[new], t, log_loss[new], w[new].clone()))
        k = torch.floor(-log_loss[new] / LN10)  # the deepest decade: L <= 10^-k
        next_log[new] = -(k + 1) * LN10


def _train_chunk(
    x: torch.Tensor,
    y: torch.Tensor,
    eps: torch.Tensor,
    c: torch.Tensor,
    config: RobustERMConfig,
    out: RobustERMResult,
    sl: slice,
    history: dict[int, torch.Tensor],
    checkpoints: list | None = None,
) -> None:
    """Run problems ``sl`` of the batch to their stopping rule, writing into ``out`` (and
    the checkpoints at the loss decades into ``checkpoints`` when it is a list)."""
    bsz, n, d = x.shape
    dtype = x.dtype
    z = y.unsqueeze(-1) * x  # (b, n, d) signed inputs
    log_thr = math.log(config.loss_threshold) if config.loss_threshold > 0 else -math.inf
    diag = config.algorithm == "diag_gd"
    total = out.w.shape[0]

    # working set: the still-running problems, compacted whenever some stop
    idx = torch.arange(sl.start, sl.stop)  # positions in the full batch
    za, epsa, ca = z, eps, c
    if diag:
        u, v = diagonal_init(d, config.alpha, batch=(bsz,), dtype=dtype)  # (b, d) each
        w = diagonal_weight(u, v)
    else:
        u = v = None
        w = torch.zeros((bsz, d), dtype=dtype)
    next_log = torch.full((bsz,), -LN10, dtype=dtype)  # log 10^-(k+1), k the deepest decade

    for t in range(config.max_iters + 1):
        log_loss, m = robust_log_loss(w, za, epsa)  # (b,), (b, n)
        if config.history_every and t % config.history_every == 0:
            history.setdefault(t, torch.full((total,), math.nan, dtype=dtype))[idx] = log_loss
        if checkpoints is not None:  # one comparison per step; the rest at checkpoints only
            _checkpoint(checkpoints, idx, t, log_loss, w, next_log)
        stop = (log_loss < log_thr) | ~torch.isfinite(log_loss)  # converged, or diverged
        if t == config.max_iters:
            stop = torch.ones_like(stop)
        if bool(stop.any()):
            done = idx[stop]
            out.w[done] = w[stop]
            out.log_loss[done] = log_loss[stop]
            out.iters[done] = t
            if diag:
                out.u[done] = u[stop]
                out.v[done] = v[stop]
            keep = ~stop
            if not bool(keep.any()):
                return
            idx, za, epsa, ca = idx[keep], za[keep], epsa[keep], ca[keep]
            next_log = next_log[keep]
            w, m, log_loss = w[keep], m[keep], log_loss[keep]
            if diag:
                u, v = u[keep], v[keep]

        w, u, v = _step(w, u, v, za, epsa, ca, m, log_loss, config)


def _step(w, u, v, za, epsa, ca, m, log_loss, config: RobustERMConfig):
    """One step of the running problems: (w, u, v) after it (u, v: diag_gd only)."""
    d = w.shape[-1]
    g = normalized_gradient(w, za, epsa, m, config.zero_subgradient)  # (b, d) grad L / L
    if config.adaptive:
        log_eta = adaptive_log_lr(log_loss, ca, config.lr_max).to(w.dtype)  # min(lr_max, c / L)
    else:
        log_eta = torch.full_like(log_loss, math.log(config.lr))
    # dual: step = eta * dir(grad L) = eta * L * dir(G); unit: eta * dir(G)
    log_mult = log_eta + log_loss if config.scale == "dual" else log_eta
    mult = torch.exp(log_mult).unsqueeze(-1)  # (b, 1)
    if config.algorithm == "diag_gd":
        gu, gv = 2 * u * g, -2 * v * g  # chain rule through w = u*u - v*v
        step = steepest_direction(torch.cat([gu, gv], -1), "l2", scale=config.scale, tie=config.tie)
        u = u - mult * step[:, :d]
        v = v - mult * step[:, d:]
        return diagonal_weight(u, v), u, v
    w = w - mult * steepest_direction(g, config.norm, scale=config.scale, tie=config.tie)
    return w, u, v


__all__ = [
    "ALGORITHMS",
    "ALGORITHM_NORM",
    "Checkpoints",
    "RobustERMConfig",
    "RobustERMResult",
    "default_c",
    "normalized_gradient",
    "robust_log_loss",
    "train_robust_erm",
]
