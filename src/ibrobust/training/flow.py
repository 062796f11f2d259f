"""The constant-step arm of Study MARGIN: full-batch gradient descent theta <- theta - lr *
grad L with one constant lr, the gradient flow's stand-in (its time t = step x lr), from the
same initialisation as the loss-based run (:mod:`ibrobust.training.margin`); the step is
computed as lr * L * grad log L (grad log L in float64 log space, as there)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from ibrobust.analysis.margin import (
    LOG10,
    log_ce,
    log_mean_loss,
    margins,
    param_norm,
    require_homogeneous,
    stats_from_logits,
)
from ibrobust.training.margin import (
    DTYPES,
    PAPER_CHECKPOINTS,
    Checkpoint,
    MarginTrainResult,
    _accuracy,
    _checked_dtype,
    _state,
    _to_device,
    epoch_row,
)

SEPARATED = "separated"  # the checkpoint at the first step the data is fit (L_sum < log 2)


def half_decades(last: int) -> list[int]:
    """Steps 10^(k/2), rounded, from 10 to ``last`` (10, 32, 100, 316, 1000, 3162, ...): the
    constant-step run's checkpoints after separation, evenly spaced in ln t."""
    out, k = [], 2
    while (s := round(10 ** (k / 2))) <= last:
        out.append(s)
        k += 1
    return out


@dataclass(frozen=True)
class FlowConfig:
    lr: float  # the constant step on grad L (full batch): the flow's time is t = step x lr
    epochs: int = 20000  # full-batch steps (one step = one epoch)
    log_every: int = 10  # a history row every log_every steps (and at step 0, checkpoints, the end)
    checkpoint_log10_losses: tuple[float, ...] = PAPER_CHECKPOINTS  # those the run reaches
    eval_batch_size: int = 1000  # test-accuracy evaluation at the checkpoints
    dtype: str = "float64"  # of the net's parameters (a key of DTYPES), as the loss-based run

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got {self.dtype!r}")
        lr = self.lr
        if (
            isinstance(lr, bool)
            or not isinstance(lr, int | float)
            or not (math.isfinite(lr) and lr > 0)
        ):
            raise ValueError(f"lr must be a finite number > 0, got {lr!r}")
        for key in ("epochs", "log_every", "eval_batch_size"):
            v = getattr(self, key)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{key} must be a positive integer, got {v!r}")
        th = tuple(self.checkpoint_log10_losses)
        if any(b >= a for a, b in zip(th, th[1:], strict=False)):
            raise ValueError(f"checkpoint_log10_losses must be strictly decreasing, got {list(th)}")

    @property
    def torch_dtype(self) -> torch.dtype:
        return DTYPES[self.dtype]


def flow_config_from_dict(d: dict) -> FlowConfig:
    """Typed config from a workflow dict (``checkpoint_log10_losses`` as a list)."""
    kw = dict(d)
    if "checkpoint_log10_losses" in kw:
        kw["checkpoint_log10_losses"] = tuple(kw["checkpoint_log10_losses"])
    try:
        return FlowConfig(**kw)
    except TypeError as err:
        raise ValueError(f"bad constant-step settings {sorted(d)}: {err}") from None


def train_flow(
    net: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    cfg: FlowConfig,
    *,
    x_test: torch.Tensor | None = None,
    y_test: torch.Tensor | None = None,
    on_step: Callable[[dict], None] | None = None,
    device: torch.device | str | None = "cpu",
) -> MarginTrainResult:
    """Full-batch GD on ``net`` (in place, homogeneous, parameters in ``cfg.dtype``: the
    checks of :func:`train_margin`) with the constant step ``cfg.lr`` for ``cfg.epochs``
    steps: theta <- theta - lr * L * grad log L (= lr * grad L; log L from float64 logit
    differences). The forward pass of each step gives that step's margins and loss, so the
    history (one :func:`epoch_row` per logged step, ``epoch`` = step, ``time`` = step x lr,
    ``log10_eta`` = log10 lr) costs no extra pass. Logged: every ``log_every`` steps, step
    0, each checkpoint and the last step. Checkpoints: the first step below each loss
    threshold it reaches (``model-<i>`` as in :func:`train_margin`), the first step at which
    the data is fit in the theorem's sense (``separated``: L_sum < log 2 and every training
    point classified correctly), each step of :func:`half_decades` after it (``step-<s>``:
    evenly spaced in ln t, so that a checkpoint trend, e.g. the KKT residual's, has points
    along the whole run) and the last step (``final``); test accuracy at the checkpoints
    only. Stops early ("diverged") if the loss is no longer finite. ``device`` (the config
    key, :func:`ibrobust.device.resolve_device`): the net and the data move there once;
    checkpoints are CPU tensors and the net ends on the CPU."""
    degree = require_homogeneous(net, "model")
    _, x, y, test = _to_device(net, x, y, x_test, y_test, _checked_dtype(net, cfg), device)
    params = [p for p in net.parameters() if p.requires_grad]
    t0 = time.perf_counter()
    history: list[dict] = []
    checkpoints: list[Checkpoint] = []
    pending = list(enumerate(cfg.checkpoint_log10_losses, start=1))
    fit_seen, stop_reason = False, "epochs"
    marks = set(half_decades(cfg.epochs - 1))  # the last step is "final"
    net.train()
    try:
        for step in range(cfg.epochs + 1):
            logits = net(x)  # (n, k)
            lce = log_ce(logits, y)  # (n,) float64
            log_l = log_mean_loss(lce)
            log10_l = float(log_l.detach()) / LOG10
            names, fit_seen = _step_names(step, pending, log10_l, fit_seen, marks, logits, lce, y)
            last = step == cfg.epochs or not math.isfinite(log10_l)
            if last:
                names.append(("final", None))
                stop_reason = "epochs" if math.isfinite(log10_l) else "diverged"
            if names or last or step % cfg.log_every == 0:
                row = _flow_row(net, logits, y, degree, step, cfg, t0, test if names else None)
                history.append(row)
                if on_step:
                    on_step(row)
                for name, th in names:
                    checkpoints.append(Checkpoint(name, step, log10_l, th, _state(net)))
            if last:
                break
            _gd_step(log_l, params, cfg.lr)
    finally:
        net.eval().to("cpu")
    return MarginTrainResult(history, checkpoints, stop_reason, 0, time.perf_counter() - t0)


def _step_names(step, pending, log10_l, fit_seen, marks, logits, lce, y) -> tuple[list, bool]:
    """The checkpoints (name, threshold) at ``step`` (thresholds crossed; ``separated`` at the
    first fit step; ``step-<s>`` at each mark after it) and whether the data is fit by now."""
    names = _thresholds_crossed(pending, log10_l) if step else []
    if not fit_seen and math.isfinite(log10_l):
        fit_seen = _is_fit(logits.detach(), lce.detach(), y)
        names += [(SEPARATED, None)] if fit_seen else []
    elif fit_seen and step in marks:
        names.append((f"step-{step}", None))
    return names, fit_seen


def _flow_row(net, logits, y, degree, step, cfg, t0, test) -> dict:
    """The history row of ``step`` (test accuracy only when ``test`` is given)."""
    stats = stats_from_logits(logits.detach(), y, param_norm(net), degree)
    test_acc = None
    if test is not None:
        test_acc = _accuracy(net, *test, cfg.eval_batch_size)
    seconds = time.perf_counter() - t0 if step else 0.0
    row = epoch_row(step, stats, test_acc, None, math.log(cfg.lr), 0, seconds)
    row = {**row, "time": step * cfg.lr}
    row.pop("rollbacks")
    return row


def _gd_step(log_l: torch.Tensor, params: list, lr: float) -> None:
    """theta <- theta - lr * L * grad log L, in place."""
    grads = torch.autograd.grad(log_l, params)  # grad log L
    scale = lr * math.exp(float(log_l.detach()))  # lr * L: the step on grad log L
    with torch.no_grad():
        for p, g in zip(params, grads, strict=True):
            p.sub_(g, alpha=scale)


def _thresholds_crossed(pending: list[tuple[int, float]], log10_l: float) -> list[tuple]:
    """(name, threshold) of each pending loss threshold the loss is now below (popped)."""
    names = []
    while math.isfinite(log10_l) and pending and log10_l < pending[0][1]:
        names.append((f"model-{pending[0][0]}", pending.pop(0)[1]))
    return names


def _is_fit(logits: torch.Tensor, lce: torch.Tensor, y: torch.Tensor) -> bool:
    """The data is fit in the theorem's sense: every point classified correctly and
    L_sum < log 2, i.e. log L_sum < log log 2 (``lce``: the per-point log cross-entropy)."""
    log_sum = float(torch.logsumexp(lce, dim=0))
    return bool((margins(logits, y) > 0).all()) and log_sum < math.log(math.log(2.0))
