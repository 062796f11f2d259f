"""SGD with the loss-based learning rate on a homogeneous net, far below float64 (Study MARGIN).

Each mini-batch step descends alpha * (L_B / L(t-1)) * grad log L_B
(:mod:`ibrobust.updates.loss_based`), where log L_B is the log of the batch's mean
cross-entropy computed from float64 logit differences by log-sum-exp
(:func:`ibrobust.analysis.margin.log_ce`) and differentiated directly: the loss is never
formed, so training goes on at L = 10^-300, 10^-1000, ... with finite steps. After every
epoch the whole training set is evaluated (float64 logits) for the schedule's accept /
roll-back decision and for the per-epoch metrics of :func:`epoch_row`.

Checkpoints: the first accepted epoch whose train loss falls below each threshold of
``checkpoint_log10_losses`` (given as log10 L: 1e-120 and below are not floats one can
write everywhere), and the last epoch. Thresholds crossed in the same epoch share it.

Training stops after ``epochs`` accepted epochs, when the loss falls below
``stop_log10_loss``, or after ``max_consecutive_rollbacks`` redone epochs in a row (alpha
has then shrunk by 2^(n/10)); :attr:`MarginTrainResult.stop_reason` says which.

The constant-step arm, full-batch GD at one lr: :mod:`ibrobust.training.flow`.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn

from ibrobust.analysis.margin import (
    LOG10,
    MarginStats,
    eval_logits,
    log_ce,
    log_mean_loss,
    param_norm,
    require_homogeneous,
    stats_from_logits,
)
from ibrobust.device import resolve_device
from ibrobust.seeding import torch_generator
from ibrobust.updates.loss_based import LossBasedLR, LossBasedLRConfig

PAPER_CHECKPOINTS = (-10.0, -15.0, -20.0, -120.0)  # log10 train loss of the paper's models 1-4
# parameter dtypes a run may train in; logit differences and the loss are float64 in both
DTYPES = {"float64": torch.float64, "float32": torch.float32}


@dataclass(frozen=True)
class MarginTrainConfig:
    epochs: int = 100  # accepted epochs (redone epochs do not count)
    batch_size: int = 100  # the paper's
    schedule: LossBasedLRConfig = field(default_factory=LossBasedLRConfig)
    checkpoint_log10_losses: tuple[float, ...] = PAPER_CHECKPOINTS  # strictly decreasing
    stop_log10_loss: float | None = None  # stop once log10 L falls below it
    max_consecutive_rollbacks: int = 60  # alpha shrinks 2^6 = 64x before giving up
    momentum: float = 0.0  # the paper's SGD has none; the roll-back restores its buffers
    eval_batch_size: int = 1000
    dtype: str = "float64"  # of the net's parameters and inputs (a key of DTYPES)

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got {self.dtype!r}")
        if not isinstance(self.schedule, LossBasedLRConfig):
            raise TypeError(f"schedule must be a LossBasedLRConfig, got {self.schedule!r}")
        for key in ("epochs", "batch_size", "max_consecutive_rollbacks", "eval_batch_size"):
            v = getattr(self, key)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{key} must be a positive integer, got {v!r}")
        th = tuple(self.checkpoint_log10_losses)
        if not all(isinstance(t, int | float) and math.isfinite(t) for t in th):
            raise ValueError(f"checkpoint_log10_losses must be finite numbers, got {th!r}")
        if any(b >= a for a, b in zip(th, th[1:], strict=False)):
            raise ValueError(
                f"checkpoint_log10_losses must be strictly decreasing (each checkpoint at a "
                f"lower train loss than the one before), got {list(th)}"
            )
        if not 0 <= self.momentum < 1:
            raise ValueError(f"momentum must be in [0, 1), got {self.momentum!r}")

    @property
    def torch_dtype(self) -> torch.dtype:
        return DTYPES[self.dtype]


def config_from_dict(d: dict) -> MarginTrainConfig:
    """Typed config from a workflow dict; ``alpha`` / ``grow`` / ``shrink`` go to the schedule
    and checkpoint thresholds may be given as losses (``checkpoint_losses: [1e-10, ...]``)."""
    kw = dict(d)
    sched = {k: kw.pop(k) for k in ("alpha", "grow", "shrink") if k in kw}
    if "checkpoint_losses" in kw:
        losses = kw.pop("checkpoint_losses")
        if any(not (isinstance(v, int | float) and v > 0) for v in losses):
            raise ValueError(f"checkpoint_losses must be positive numbers, got {losses!r}")
        kw["checkpoint_log10_losses"] = tuple(math.log10(v) for v in losses)
    if "checkpoint_log10_losses" in kw:
        kw["checkpoint_log10_losses"] = tuple(kw["checkpoint_log10_losses"])
    try:
        return MarginTrainConfig(schedule=LossBasedLRConfig(**sched), **kw)
    except TypeError as err:
        raise ValueError(f"bad margin training settings {sorted(d)}: {err}") from None


@dataclass
class Checkpoint:
    name: str  # "model-1" .. for the thresholds in order, "final" for the last epoch
    epoch: int
    log10_loss: float
    threshold: float | None  # the log10 threshold it was taken for (None for "final")
    state_dict: dict[str, torch.Tensor]


@dataclass
class MarginTrainResult:
    history: list[dict]  # one row per accepted epoch (epoch 0 = initialisation)
    checkpoints: list[Checkpoint]
    stop_reason: str  # "epochs", "stop_log10_loss", "rollbacks" or "should_stop"
    rollbacks: int  # redone epochs in total
    seconds: float


def epoch_row(
    epoch: int,
    train: MarginStats,
    test_acc: float | None,
    alpha: float | None,
    log_eta: float | None,
    rollbacks: int,
    seconds: float,
) -> dict:
    """One history row (flat, float-valued: what the workflow logs step-indexed)."""
    row = {
        "epoch": epoch,
        "log10_train_loss": train.log10_loss,
        "q_min": train.q_min,
        "rho": train.rho,
        "normalized_margin": train.normalized_margin,
        "log10_normalized_margin": train.log10_normalized_margin,
        "smoothed_normalized_margin": train.smoothed_normalized_margin,
        "train_acc": train.accuracy,
        "test_acc": test_acc,
        "alpha": alpha,  # alpha(t) used during this epoch
        "log10_eta": None if log_eta is None else log_eta / LOG10,
        "rollbacks": rollbacks,
        "seconds": seconds,
    }
    return {k: v for k, v in row.items() if v is not None}


def _stats(net, x, y, degree, bs) -> MarginStats:
    return stats_from_logits(eval_logits(net, x, bs), y, param_norm(net), degree)


def _accuracy(net, x, y, bs) -> float:
    return float((eval_logits(net, x, bs).argmax(1) == y).double().mean())


def _checked_dtype(net: nn.Module, cfg: MarginTrainConfig) -> torch.dtype:
    """The net's parameter dtype, which must be the config's (ValueError naming ``dtype``)."""
    dtype = next(net.parameters()).dtype
    if dtype != cfg.torch_dtype:
        raise ValueError(
            f"dtype: the training config says {cfg.dtype} but the net's parameters are {dtype} "
            f"(build the net in the config's dtype)"
        )
    return dtype


def train_margin(
    net: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    cfg: MarginTrainConfig,
    seed: int,
    *,
    x_test: torch.Tensor | None = None,
    y_test: torch.Tensor | None = None,
    on_epoch: Callable[[dict], None] | None = None,
    on_checkpoint: Callable[[Checkpoint], None] | None = None,
    should_stop: Callable[[dict], bool] | None = None,
    device: torch.device | str | None = "cpu",
) -> MarginTrainResult:
    """Train ``net`` (in place) on (x (n, *s), y (n,) int64 class ids) with the loss-based
    schedule; ``net`` must be homogeneous (ValueError naming ``model`` otherwise) and have
    its parameters in ``cfg.dtype`` (ValueError naming ``dtype`` otherwise: the config says
    what a run trains in, so a net built in another dtype is refused, not silently cast).
    Inputs are cast to that dtype; logit differences and losses are float64. Batch orders come
    from ``torch_generator(seed, "margin", "batches")`` (a redone epoch draws a new one).
    ``should_stop(row)`` after an accepted epoch may end training early (the last epoch is
    still checkpointed as "final"). ``device``: see :func:`_to_device`; checkpoints are CPU
    tensors and the net ends on the CPU."""
    degree = require_homogeneous(net, "model")
    dtype = _checked_dtype(net, cfg)
    dev, x, y, test = _to_device(net, x, y, x_test, y_test, dtype, device)
    gen = torch_generator(seed, "margin", "batches")
    opt = _sgd(net, cfg)
    log = _Log(cfg, net, test, time.perf_counter(), on_epoch, on_checkpoint)
    stats = _stats(net, x, y, degree, cfg.eval_batch_size)
    sched = LossBasedLR(cfg.schedule, stats.log10_loss * LOG10)
    log.accepted(0, stats, None, None, 0)
    epoch = rollbacks = in_a_row = 0
    stop_reason = "epochs"
    while epoch < cfg.epochs:
        saved = (copy.deepcopy(net.state_dict()), copy.deepcopy(opt.state_dict()))
        alpha, log_eta = sched.alpha, sched.log_eta
        order = torch.randperm(len(x), generator=gen).to(dev).split(cfg.batch_size)
        diverged = _sgd_epoch(net, opt, sched, x, y, order, torch.finfo(dtype).max)
        stats = _stats(net, x, y, degree, cfg.eval_batch_size)
        if not sched.end_epoch(math.nan if diverged else stats.log10_loss * LOG10):
            net.load_state_dict(saved[0])
            opt.load_state_dict(saved[1])
            rollbacks, in_a_row = rollbacks + 1, in_a_row + 1
            if in_a_row >= cfg.max_consecutive_rollbacks:
                stop_reason = "rollbacks"
                break
            continue
        epoch, in_a_row = epoch + 1, 0
        row = log.accepted(epoch, stats, alpha, log_eta, rollbacks)
        stop_reason = _early_stop(cfg, stats, row, should_stop) or stop_reason
        if stop_reason != "epochs":
            break
    log.checkpoint(
        Checkpoint("final", epoch, log.history[-1]["log10_train_loss"], None, _state(net))
    )
    net.to("cpu")
    return MarginTrainResult(
        log.history, log.checkpoints, stop_reason, rollbacks, time.perf_counter() - log.t0
    )


def _sgd(net: nn.Module, cfg: MarginTrainConfig) -> torch.optim.SGD:
    """SGD over the trainable parameters with the config's momentum and lr 1: the loss-based
    schedule's step scale multiplies each batch's gradient (:func:`_sgd_epoch`)."""
    return torch.optim.SGD(
        [p for p in net.parameters() if p.requires_grad], lr=1.0, momentum=cfg.momentum
    )


def _to_device(net, x, y, x_test, y_test, dtype, device):
    """Move ``net`` and the data once to ``device`` (the config key,
    :func:`ibrobust.device.resolve_device`), the inputs cast to ``dtype``; batch orders are
    drawn on the CPU and moved, so ``auto`` without CUDA is ``cpu`` exactly."""
    dev = resolve_device(device)
    net.to(dev)
    test = None if x_test is None else (x_test.to(dev, dtype), y_test.to(dev, torch.int64))
    return dev, x.to(dev, dtype), y.to(dev, torch.int64), test


def _early_stop(cfg: MarginTrainConfig, stats: MarginStats, row: dict, should_stop) -> str | None:
    if cfg.stop_log10_loss is not None and stats.log10_loss < cfg.stop_log10_loss:
        return "stop_log10_loss"
    if should_stop is not None and should_stop(row):
        return "should_stop"
    return None


@dataclass
class _Log:
    """The history rows and checkpoints of a run as it goes (and the caller's callbacks)."""

    cfg: MarginTrainConfig
    net: nn.Module
    test: tuple[torch.Tensor, torch.Tensor] | None
    t0: float
    on_epoch: Callable[[dict], None] | None
    on_checkpoint: Callable[[Checkpoint], None] | None
    history: list[dict] = field(default_factory=list)
    checkpoints: list[Checkpoint] = field(default_factory=list)
    pending: list = field(default_factory=list)

    def __post_init__(self) -> None:
        self.pending = list(enumerate(self.cfg.checkpoint_log10_losses, start=1))

    def accepted(self, epoch, stats: MarginStats, alpha, log_eta, rollbacks: int) -> dict:
        """Record an accepted epoch (0 = the initialisation) and the checkpoints it crosses."""
        test_acc = None
        if self.test is not None:
            test_acc = _accuracy(self.net, *self.test, self.cfg.eval_batch_size)
        seconds = time.perf_counter() - self.t0 if epoch else 0.0
        row = epoch_row(epoch, stats, test_acc, alpha, log_eta, rollbacks, seconds)
        self.history.append(row)
        if self.on_epoch:
            self.on_epoch(row)
        while epoch and self.pending and stats.log10_loss < self.pending[0][1]:
            i, th = self.pending.pop(0)
            self.checkpoint(Checkpoint(f"model-{i}", epoch, stats.log10_loss, th, _state(self.net)))
        return row

    def checkpoint(self, ck: Checkpoint) -> None:
        self.checkpoints.append(ck)
        if self.on_checkpoint:
            self.on_checkpoint(ck)


def _sgd_epoch(net, opt, sched: LossBasedLR, x, y, batches, max_scale: float) -> bool:
    """One epoch of steps alpha * (L_B / L(t-1)) * grad log L_B; True if it diverged (a step
    factor beyond ``max_scale``, the largest number of the parameters' dtype, which the
    optimizer could not even apply: the epoch is redone like any other that raised the loss,
    since finishing it would only turn the parameters into inf / nan)."""
    net.train()
    try:
        for idx in batches:
            log_lb = log_mean_loss(log_ce(net(x[idx]), y[idx]))  # scalar, float64
            scale = sched.step_scale(float(log_lb.detach()))
            if not scale <= max_scale:  # inf, or beyond float32 for a float32 net
                return True
            opt.zero_grad(set_to_none=True)
            log_lb.backward()
            for group in opt.param_groups:
                group["lr"] = scale
            opt.step()
        return False
    finally:
        net.eval()


def _state(net: nn.Module) -> dict[str, torch.Tensor]:
    """A copy of the net's state on the CPU (what checkpoints.pt holds)."""
    return {k: v.detach().cpu().clone() for k, v in net.state_dict().items()}
