"""Projected gradient descent (Madry et al., ICLR 2018) under l2, l_inf or l1, batched over radii.

``pgd`` attacks every example at every radius of ``eps`` (the work list is radii x
examples, processed ``batch_size`` pairs per forward/backward pass), with ``restarts``
random starts, and keeps for each (radius, example) the perturbation with the *worst*
outcome for the model: a successful one (the :class:`~ibrobust.attacks.tasks.Task` says
the prediction is wrong) if any restart found one, otherwise the one with the highest
attack loss. Within a chunk, a point fooled by a restart skips the later restarts (its
outcome is decided; the starts are still drawn, so the random stream does not shift); every
restart runs all ``steps``.

Inputs are (n, *s): flat (n, d) vectors (cluster data, no box) or images (n, C, H, W)
in [0, 1] (``box=(0, 1)``); norms are taken over all non-batch dimensions.

Each step moves ``alpha = step_size * eps`` along the steepest-ascent direction of the
norm: the normalised gradient (l2), its sign (l_inf), or for l1 the signs of the
``ceil(l1_top * D)`` largest-|gradient| coordinates scaled to unit l1 norm (one
coordinate is the exact steepest l1 step; a few per step is the stronger "sparse l1
descent" of Tramer & Boneh, NeurIPS 2019). It then projects onto the ball (l1: the
sort-based projection of Duchi et al., ICML 2008) and then onto the box. Ball-then-box is
the standard PGD projection, not the Euclidean projection onto the intersection (it is
for l_inf, where both sets are boxes): clamping to the box only moves coordinates towards
x, so the point stays in the ball and is feasible for both. With l1 and a box, gradient
coordinates pointing out of the box at a pixel already on it are dropped before the top-k
selection (they could not move).

Random starts are uniform in the ball (then clamped to the box). The model is put in eval
mode with its parameters frozen, and restored (:func:`~ibrobust.attacks.mode.attack_mode`);
random draws come from ``gen`` only (on its device, then moved to the input's device).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import torch
from torch import nn

from ibrobust.attacks.losses import AttackLoss, get_attack_loss
from ibrobust.attacks.mode import attack_mode
from ibrobust.attacks.tasks import Task, correct_in_batches, get_task, strict_keys
from ibrobust.norms import NORMS  # noqa: E402,F401  (the one list)


@dataclass(frozen=True)
class PGDConfig:
    norm: str = "l2"  # "l2", "linf" or "l1"
    steps: int = 50
    restarts: int = 3
    step_size: float = 0.1  # relative to eps (2.5 / steps is Madry's choice for steps=25)
    random_start: bool = True
    batch_size: int = 4096  # (radius, example) pairs per forward/backward pass
    l1_top: float = 0.01  # l1 only: fraction of coordinates moved per step (at least one)

    def __post_init__(self) -> None:
        if self.norm not in NORMS:
            raise ValueError(f"norm must be one of {NORMS}, got {self.norm!r}")
        if self.steps < 1 or self.restarts < 1:
            raise ValueError(f"steps and restarts must be >= 1, got {self.steps}, {self.restarts}")
        if not self.step_size > 0:
            raise ValueError(f"step_size must be > 0, got {self.step_size}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")
        if not 0 < self.l1_top <= 1:
            raise ValueError(f"l1_top must be in (0, 1], got {self.l1_top}")


def project_l1(delta: torch.Tensor, eps: torch.Tensor) -> torch.Tensor:
    """Euclidean projection of each row of ``delta`` (b, D) onto the l1 ball of radius eps (b, 1).

    Duchi, Shalev-Shwartz, Singer, Chandra (ICML 2008), Fig. 1: sort |v| decreasingly (u),
    rho = max{j : u_j > (sum_{i<=j} u_i - eps) / j}, theta = (sum_{i<=rho} u_i - eps) / rho,
    w = sign(v) max(|v| - theta, 0). Rows already inside the ball are returned unchanged.
    """
    a = delta.abs()
    u = a.sort(dim=1, descending=True).values  # (b, D)
    css = u.cumsum(dim=1)
    j = torch.arange(1, a.shape[1] + 1, device=a.device, dtype=a.dtype)
    cond = u - (css - eps) / j > 0  # true on a prefix of j
    rho = (cond * j).amax(dim=1, keepdim=True).clamp_min(1)  # (b, 1); eps = 0 -> 1
    theta = ((css.gather(1, rho.long() - 1) - eps) / rho).clamp_min(0)  # (b, 1)
    proj = delta.sign() * (a - theta).clamp_min(0)
    inside = a.sum(dim=1, keepdim=True) <= eps
    return torch.where(inside, delta, proj)


def _project(delta: torch.Tensor, eps: torch.Tensor | float, norm: str) -> torch.Tensor:
    """Onto the ball of radius ``eps``: (b, 1) per row, or one float for every row."""
    if norm == "linf":
        if isinstance(eps, float):  # one radius: a single scalar clamp
            return delta.clamp(-eps, eps)
        return torch.maximum(torch.minimum(delta, eps), -eps)
    if norm == "l1":
        return project_l1(delta, eps)
    nrm = delta.norm(dim=1, keepdim=True).clamp_min(1e-12)
    e = torch.tensor(eps, dtype=delta.dtype) if isinstance(eps, float) else eps  # exact division
    return delta * torch.clamp(e / nrm, max=1.0)


def _random_start(
    shape: tuple[int, int],
    eps: torch.Tensor | float,
    norm: str,
    gen: torch.Generator,
    like: torch.Tensor | None = None,
) -> torch.Tensor:
    """(b, D) uniform in the ball of radius eps ((b, 1) or one float), drawn from ``gen`` on
    its device, returned with the dtype and on the device of ``like`` (default: of eps)."""
    b, d = shape
    ref = eps if like is None else like
    dt, dev = ref.dtype, ref.device
    if norm == "linf":
        return (2 * torch.rand(shape, generator=gen, dtype=dt).to(dev) - 1) * eps
    if norm == "l1":
        # normalised exponentials are uniform on the simplex of D+1 coordinates; the first D
        # are uniform in {u >= 0, sum u <= 1}; random signs make it the l1 ball
        e = torch.empty(b, d + 1, dtype=dt).exponential_(generator=gen)
        u = e[:, :d] / e.sum(dim=1, keepdim=True)
        s = 2 * torch.randint(0, 2, shape, generator=gen).to(dt) - 1
        return (u * s).to(dev) * eps
    # uniform in the l2 ball: direction uniform on the sphere, radius eps * U^(1/D)
    g = torch.randn(shape, generator=gen, dtype=dt)
    g = g / g.norm(dim=1, keepdim=True).clamp_min(1e-12)
    r = torch.rand(b, 1, generator=gen, dtype=dt) ** (1.0 / d)
    return (g * r).to(dev) * eps


def _steepest(grad: torch.Tensor, norm: str, l1_k: int) -> torch.Tensor:
    """(b, D) unit-norm steepest-ascent direction of the norm for the gradient."""
    if norm == "linf":
        return grad.sign()
    if norm == "l1":
        idx = grad.abs().topk(l1_k, dim=1).indices  # (b, k)
        step = torch.zeros_like(grad).scatter_(1, idx, grad.gather(1, idx).sign())
        return step / l1_k
    return grad / grad.norm(dim=1, keepdim=True).clamp_min(1e-12)


def pgd(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    fine: torch.Tensor,
    eps: torch.Tensor | list[float],
    loss_fn: AttackLoss | str,
    cfg: PGDConfig,
    gen: torch.Generator,
    box: tuple[float, float] | None = None,
    *,
    task: Task | str = "binary",
    outcome_only: bool = False,
) -> torch.Tensor:
    """Adversarial examples (R, n, *s) for inputs ``x`` (n, *s) and radii ``eps`` (R,).

    ``loss_fn(model, x, y, fine)`` (or its name in ``ATTACK_LOSSES``) is the per-example
    loss to maximise; ``task`` decides which restarts succeeded; ``box`` = (lo, hi) is the
    input range (``x`` must lie in it), None for unbounded inputs. ``outcome_only``: the
    caller needs only whether each point is fooled (robust accuracy), so a point fooled by
    a restart skips the later ones and keeps its first fooling example (else the fooling
    example of highest loss over all restarts); which points are fooled is the same.
    """
    if isinstance(loss_fn, str):
        loss_fn = get_attack_loss(loss_fn)
    task = get_task(task)
    eps_t = torch.as_tensor(eps, dtype=x.dtype).reshape(-1).to(x.device)  # (R,)
    if (eps_t < 0).any():
        raise ValueError(f"radii must be >= 0, got {eps_t.tolist()}")
    if box is not None and not box[0] < box[1]:
        raise ValueError(f"box must be (lo, hi) with lo < hi, got {box}")
    if x.ndim < 2:
        raise ValueError(f"x must be (n, *s) with at least one feature dim, got {tuple(x.shape)}")
    r_, n, shape = eps_t.numel(), x.shape[0], tuple(x.shape[1:])
    xf = x.reshape(n, -1)  # (n, D): norms over all non-batch dims
    rest = (shape, max(1, math.ceil(cfg.l1_top * xf.shape[1])), outcome_only)  # l1_k: moved
    if r_ == 1 and n <= cfg.batch_size:  # one chunk (e.g. adversarial training): no copies
        with attack_mode(model):
            eps_n = float(eps_t[0])  # one radius: scalar ops, the same float32 values
            x_adv = _pgd_chunk(model, xf, y, fine, eps_n, loss_fn, cfg, gen, box, task, *rest)
        return x_adv.reshape(1, n, *shape)
    out = torch.empty(r_, n, xf.shape[1], dtype=x.dtype, device=x.device)
    with attack_mode(model):
        # flatten (radius, example) pairs and attack them in chunks
        idx_r = torch.arange(r_, device=x.device).repeat_interleave(n)
        idx_n = torch.arange(n, device=x.device).repeat(r_)
        for lo in range(0, r_ * n, cfg.batch_size):
            sl = slice(lo, lo + cfg.batch_size)
            ir, ie = idx_r[sl], idx_n[sl]
            e = eps_t[ir, None]
            out[ir, ie] = _pgd_chunk(
                model, xf[ie], y[ie], fine[ie], e, loss_fn, cfg, gen, box, task, *rest
            )
    return out.reshape(r_, n, *shape)


def _pgd_chunk(
    model, x, y, fine, eps, loss_fn, cfg, gen, box, task, shape, l1_k, outcome_only=False
):
    """Worst case over restarts for a chunk: x (b, D) flat, eps (b, 1) -> x_adv (b, D).

    ``outcome_only``: a point fooled by a restart keeps that example and skips the later
    restarts (its outcome is decided). Every restart still draws its random starts for the
    whole chunk, so the generator's stream, and every other point's attack, do not shift."""
    best = x.clone()
    best_loss = torch.full((x.shape[0],), -float("inf"), dtype=x.dtype, device=x.device)
    best_fooled = torch.zeros(x.shape[0], dtype=torch.bool, device=x.device)
    for _ in range(cfg.restarts):
        delta = (
            _random_start(x.shape, eps, cfg.norm, gen, x)
            if cfg.random_start
            else torch.zeros_like(x)
        )
        if cfg.restarts == 1:  # the only restart's last iterate is the result: skip judging it
            return _pgd_run(model, x, y, fine, eps, delta, loss_fn, cfg, box, shape, l1_k)
        skip = outcome_only and bool(best_fooled.any())
        todo = torch.nonzero(~best_fooled).flatten() if skip else None
        if todo is not None and todo.numel() == 0:
            continue  # all fooled: the remaining restarts only draw their starts
        xs, ys, fs, es, ds = (_rows(v, todo) for v in (x, y, fine, eps, delta))
        x_adv = _pgd_run(model, xs, ys, fs, es, ds, loss_fn, cfg, box, shape, l1_k)
        with torch.no_grad():
            loss = loss_fn(model, x_adv.reshape(-1, *shape), ys, fs)
            fooled = ~task.correct(model, x_adv.reshape(-1, *shape), ys, fs)
            # better = fooled where not yet fooled, else higher loss within the same status
            b_fooled, b_loss = _rows(best_fooled, todo), _rows(best_loss, todo)
            better = (fooled & ~b_fooled) | ((fooled == b_fooled) & (loss > b_loss))
            sel = torch.nonzero(better).flatten()
            rows = sel if todo is None else todo[sel]
            best[rows] = x_adv[sel]
            best_loss[rows] = loss[sel]
            best_fooled[rows] = b_fooled[sel] | fooled[sel]
    return best.detach()


def _rows(v: torch.Tensor, idx: torch.Tensor | None) -> torch.Tensor:
    return v if idx is None or not isinstance(v, torch.Tensor) else v[idx]


def _pgd_run(model, x, y, fine, eps, delta, loss_fn, cfg, box, shape, l1_k):
    """One restart's ``cfg.steps`` steps from the start ``delta`` (b, D) -> x + delta; ``eps``
    is (b, 1), or one float when every row has the same radius (fewer broadcast ops)."""
    if isinstance(eps, float):  # the float32 product, as the (b, 1) path computes it
        alpha = float(cfg.step_size * torch.tensor(eps, dtype=x.dtype))
    else:
        alpha = cfg.step_size * eps  # (b, 1)
    if box is not None:
        delta = (x + delta).clamp(*box) - x
    for _ in range(cfg.steps):
        with torch.enable_grad():  # also when called under no_grad
            delta.requires_grad_(True)
            loss = loss_fn(model, (x + delta).reshape(-1, *shape), y, fine)
            (grad,) = torch.autograd.grad(loss.sum(), delta)
        with torch.no_grad():
            if cfg.norm == "l1" and box is not None:  # drop moves the box would undo
                x_cur = x + delta
                blocked = ((x_cur <= box[0]) & (grad < 0)) | ((x_cur >= box[1]) & (grad > 0))
                grad = grad.masked_fill(blocked, 0.0)
            delta = _project(delta + alpha * _steepest(grad, cfg.norm, l1_k), eps, cfg.norm)
            if box is not None:
                delta = (x + delta).clamp(*box) - x
    return (x + delta).detach()


# ---- the ``pgd`` kind of the attack suite (ibrobust.attacks.suite, ibrobust.kinds) ----------
@dataclass(frozen=True)
class PGDSpec:
    cfg: PGDConfig
    loss: str = "margin"


SPEC_KEYS = {f.name for f in dataclasses.fields(PGDConfig)} | {"loss"}


def parse_spec(spec: dict) -> PGDSpec:
    """A config entry (without ``kind``) -> validated settings (ValueError naming the key)."""
    strict_keys("pgd", spec, SPEC_KEYS)
    loss = spec.get("loss", "margin")
    get_attack_loss(loss)  # ValueError on an unknown loss
    return PGDSpec(PGDConfig(**{k: v for k, v in spec.items() if k != "loss"}), loss)


def describe(spec: PGDSpec) -> dict:
    """What runs (flat): the PGDConfig fields and the loss."""
    return {**dataclasses.asdict(spec.cfg), "loss": spec.loss}


def run_spec(model, x, y, fine, eps: float, spec: PGDSpec, ctx, gen) -> torch.Tensor:
    """(n,) bool: still correct (under ``ctx.task``) after PGD at radius ``eps``."""
    x_adv = pgd(
        model,
        x,
        y,
        fine,
        [eps],
        spec.loss,
        spec.cfg,
        gen,
        box=ctx.box,
        task=ctx.task,
        outcome_only=True,
    )[0]
    return correct_in_batches(ctx.task, model, x_adv, y, fine, ctx.eval_batch_size)
