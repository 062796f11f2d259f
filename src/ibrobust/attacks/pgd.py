"""Projected gradient descent (Madry et al., ICLR 2018) under l2, l_inf or l1, batched over radii.

``pgd`` attacks every example at every radius of ``eps`` (the work list is radii x
examples, processed ``batch_size`` pairs per forward/backward pass), with ``restarts``
random starts, and keeps for each (radius, example) the perturbation with the *worst*
outcome for the model: a successful one (the :class:`~ibrobust.attacks.tasks.Task` says
the prediction is wrong) if any restart found one, otherwise the one with the highest
attack loss. Within a chunk, a point fooled by a restart skips the later restarts (its
outcome is decided; the starts are still drawn, so the random stream does not shift); every
restart runs all ``steps``.

``pgd_readouts`` is the same attack judged under several readouts of one network (its loss
must read none of them, e.g. the cross-entropy on the fine label): one trajectory per
restart, the worst case kept per readout, and a point skips the later restarts only once
it is fooled under every readout where it is still alive. With one readout it is ``pgd``.

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
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

import torch
from torch import nn

from ibrobust.attacks.balls import project_ball as _project
from ibrobust.attacks.balls import project_l1  # noqa: F401  (part of this module's API)
from ibrobust.attacks.balls import random_in_ball as _random_start
from ibrobust.attacks.balls import steepest_step as _steepest
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
    on_batch: Callable[[], None] | None = None,
) -> torch.Tensor:
    """Adversarial examples (R, n, *s) for inputs ``x`` (n, *s) and radii ``eps`` (R,).

    ``loss_fn(model, x, y, fine)`` (or its name in ``ATTACK_LOSSES``) is the per-example
    loss to maximise; ``task`` decides which restarts succeeded; ``box`` = (lo, hi) is the
    input range (``x`` must lie in it), None for unbounded inputs. ``outcome_only``: the
    caller needs only whether each point is fooled (robust accuracy), so a point fooled by
    a restart skips the later ones and keeps its first fooling example (else the fooling
    example of highest loss over all restarts); which points are fooled is the same.
    ``on_batch()`` is called after each restart of each chunk (progress).
    """
    return pgd_readouts(
        model, (model,), x, y, fine, eps, loss_fn, cfg, gen, box, task=task,
        outcome_only=outcome_only, on_batch=on_batch,
    )[0]  # fmt: skip


def pgd_readouts(
    model: nn.Module,
    judges: Sequence[nn.Module],
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
    live: torch.Tensor | None = None,
    outcome_only: bool = False,
    on_batch: Callable[[], None] | None = None,
) -> torch.Tensor:
    """One PGD attack judged under J readouts: adversarial examples (J, R, n, *s).

    The perturbation ascends ``loss_fn`` on ``model`` alone, so the loss must not depend on
    how the judges read the network (e.g. the cross-entropy on the fine label reads only
    the logits); ``judges`` (J modules, typically the model read through J binary readouts,
    :func:`ibrobust.models.readout.with_readout`) each decide under ``task`` whether a
    restart fooled a point. ``[j]`` keeps the worst example under judge j: a fooling one if
    any restart fooled j, else the one of highest loss.

    ``live`` (J, n) bool: the judges under which each point is still to be attacked (None:
    all). With ``outcome_only`` a point skips the later restarts only once it is fooled
    under every judge where it is live; a judge where it is not live is not waited for.
    Every restart still draws its starts for the whole chunk, so the random stream does
    not depend on which points skip. With one judge that is ``model`` itself (and ``live``
    None or all true) this is :func:`pgd`: the same draws and the same examples.
    """
    if isinstance(loss_fn, str):
        loss_fn = get_attack_loss(loss_fn)
    task = get_task(task)
    eps_t = _checked_radii(x, eps, box, len(judges), live)  # (R,)
    n_j, r_, n, shape = len(judges), eps_t.numel(), x.shape[0], tuple(x.shape[1:])
    xf = x.reshape(n, -1)  # (n, D): norms over all non-batch dims
    rest = (shape, max(1, math.ceil(cfg.l1_top * xf.shape[1])), outcome_only, on_batch)
    if r_ == 1 and n <= cfg.batch_size:  # one chunk (e.g. adversarial training): no copies
        with _attack_modes(model, judges):
            eps_n = float(eps_t[0])  # one radius: scalar ops, the same float32 values
            x_adv = _pgd_chunk_judged(
                model, judges, live, xf, y, fine, eps_n, loss_fn, cfg, gen, box, task, *rest
            )  # (J, n, D)
        return x_adv.reshape(n_j, 1, n, *shape)
    out = torch.empty(n_j, r_, n, xf.shape[1], dtype=x.dtype, device=x.device)
    with _attack_modes(model, judges):
        # flatten (radius, example) pairs and attack them in chunks
        idx_r = torch.arange(r_, device=x.device).repeat_interleave(n)
        idx_n = torch.arange(n, device=x.device).repeat(r_)
        for lo in range(0, r_ * n, cfg.batch_size):
            ir, ie = idx_r[lo : lo + cfg.batch_size], idx_n[lo : lo + cfg.batch_size]
            e = eps_t[ir, None]
            lv = None if live is None else live[:, ie]
            out[:, ir, ie] = _pgd_chunk_judged(
                model, judges, lv, xf[ie], y[ie], fine[ie], e, loss_fn, cfg, gen, box, task, *rest
            )
    return out.reshape(n_j, r_, n, *shape)


def _checked_radii(x, eps, box, n_judges: int, live) -> torch.Tensor:
    """The radii as an (R,) tensor of x's dtype and device; ValueError on bad inputs."""
    eps_t = torch.as_tensor(eps, dtype=x.dtype).reshape(-1).to(x.device)  # (R,)
    if (eps_t < 0).any():
        raise ValueError(f"radii must be >= 0, got {eps_t.tolist()}")
    if box is not None and not box[0] < box[1]:
        raise ValueError(f"box must be (lo, hi) with lo < hi, got {box}")
    if x.ndim < 2:
        raise ValueError(f"x must be (n, *s) with at least one feature dim, got {tuple(x.shape)}")
    if n_judges < 1:
        raise ValueError("judges must hold at least one module")
    n = x.shape[0]
    if live is not None and (live.dtype != torch.bool or tuple(live.shape) != (n_judges, n)):
        raise ValueError(
            f"live must be a ({n_judges}, {n}) bool tensor, got {live.dtype} {tuple(live.shape)}"
        )
    return eps_t


@contextmanager
def _attack_modes(model: nn.Module, judges: Sequence[nn.Module]) -> Iterator[None]:
    """:func:`attack_mode` for ``model`` and every other judge (each module once)."""
    with ExitStack() as stack:
        seen: set[int] = set()
        for m in (model, *judges):
            if id(m) not in seen:
                seen.add(id(m))
                stack.enter_context(attack_mode(m))
        yield


def _pgd_chunk(
    model, x, y, fine, eps, loss_fn, cfg, gen, box, task, shape, l1_k, outcome_only=False,
    on_batch=None,
):  # fmt: skip
    """Worst case over restarts for a chunk judged by ``model`` itself: x (b, D) flat, eps
    (b, 1) or one float -> x_adv (b, D) (see :func:`_pgd_chunk_judged`)."""
    return _pgd_chunk_judged(
        model, (model,), None, x, y, fine, eps, loss_fn, cfg, gen, box, task, shape, l1_k,
        outcome_only, on_batch,
    )[0]  # fmt: skip


def _pgd_chunk_judged(
    model,
    judges,
    live,
    x,
    y,
    fine,
    eps,
    loss_fn,
    cfg,
    gen,
    box,
    task,
    shape,
    l1_k,
    outcome_only,
    on_batch=None,
):
    """Worst case over restarts per judge for a chunk: x (b, D) flat, eps (b, 1) or one
    float, live (J, b) or None -> x_adv (J, b, D).

    ``outcome_only``: a point fooled under every judge where it is live keeps its examples
    and skips the later restarts (its outcome is decided). Every restart still draws its
    random starts for the whole chunk, so the generator's stream, and every other point's
    attack, do not shift. ``on_batch()`` (progress) is called after each restart."""
    n_j = len(judges)
    tick = on_batch or _no_tick
    if cfg.restarts == 1:  # the only restart's last iterate is the result: skip judging it
        delta = _start(x, eps, cfg, gen)
        x_adv = _pgd_run(model, x, y, fine, eps, delta, loss_fn, cfg, box, shape, l1_k)
        tick()
        return x_adv.expand(n_j, *x_adv.shape)
    best = x.expand(n_j, *x.shape).clone()  # (J, b, D)
    best_loss = torch.full((n_j, x.shape[0]), -float("inf"), dtype=x.dtype, device=x.device)
    best_fooled = torch.zeros(n_j, x.shape[0], dtype=torch.bool, device=x.device)
    dead = None if live is None else ~live  # (J, b): judges a point need not be fooled under
    for _ in range(cfg.restarts):
        delta = _start(x, eps, cfg, gen)
        decided = (best_fooled if dead is None else best_fooled | dead).all(0)  # (b,)
        skip = outcome_only and bool(decided.any())
        todo = torch.nonzero(~decided).flatten() if skip else None
        if todo is not None and todo.numel() == 0:
            continue  # all decided: the remaining restarts only draw their starts
        xs, ys, fs, es, ds = (_rows(v, todo) for v in (x, y, fine, eps, delta))
        x_adv = _pgd_run(model, xs, ys, fs, es, ds, loss_fn, cfg, box, shape, l1_k)
        with torch.no_grad():
            x_img = x_adv.reshape(-1, *shape)
            loss = loss_fn(model, x_img, ys, fs)
            for j, judge in enumerate(judges):
                fooled = ~task.correct(judge, x_img, ys, fs)
                # better = fooled where not yet fooled, else higher loss within the same status
                b_fooled, b_loss = _rows(best_fooled[j], todo), _rows(best_loss[j], todo)
                better = (fooled & ~b_fooled) | ((fooled == b_fooled) & (loss > b_loss))
                sel = torch.nonzero(better).flatten()
                rows = sel if todo is None else todo[sel]
                best[j, rows] = x_adv[sel]
                best_loss[j, rows] = loss[sel]
                best_fooled[j, rows] = b_fooled[sel] | fooled[sel]
        tick()
    return best.detach()


def _no_tick() -> None:
    pass


def _start(x: torch.Tensor, eps, cfg: PGDConfig, gen: torch.Generator) -> torch.Tensor:
    """A restart's start (b, D): uniform in the ball, or zero without ``random_start``."""
    if cfg.random_start:
        return _random_start(x.shape, eps, cfg.norm, gen, x)
    return torch.zeros_like(x)


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
    l1_box = cfg.norm == "l1" and box is not None
    with torch.enable_grad():  # also when called under no_grad; the moves are not recorded
        for _ in range(cfg.steps):
            delta.requires_grad_(True)
            loss = loss_fn(model, (x + delta).reshape(-1, *shape), y, fine)
            (grad,) = torch.autograd.grad(loss.sum(), delta)
            with torch.no_grad():
                if l1_box:  # drop moves the box would undo
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
        on_batch=ctx.tick,
    )[0]
    return correct_in_batches(ctx.task, model, x_adv, y, fine, ctx.eval_batch_size)


def run_spec_readouts(
    models: Sequence[nn.Module], x, y, fine, eps: float, spec: PGDSpec, ctx, gen, live
) -> torch.Tensor:
    """(J, n) bool: still correct under each of ``models`` (one network read through J
    readouts) after one PGD at radius ``eps`` whose loss reads none of them (a loss that
    aims at the fine labels), judged under every readout; ``live`` (J, n): where each point
    is still to be attacked (:func:`pgd_readouts`)."""
    x_adv = pgd_readouts(
        models[0], models, x, y, fine, [eps], spec.loss, spec.cfg, gen, box=ctx.box,
        task=ctx.task, live=live, outcome_only=True, on_batch=ctx.tick,
    )[:, 0]  # fmt: skip
    return torch.stack(
        [
            correct_in_batches(ctx.task, m, a, y, fine, ctx.eval_batch_size)
            for m, a in zip(models, x_adv, strict=True)
        ]
    )
