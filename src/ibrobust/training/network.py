"""Training any network of the model registry: full-batch steepest descent, SGD or Adam.

One loop serves every study and architecture, so that a cross-paper experiment (sign
descent on the feature-averaging clusters, a pReLU net under 10-class supervision) is a
config entry:

* ``algorithm`` is an optimizer kind that trains networks (:data:`ibrobust.kinds.OPTIMIZERS`,
  capability ``trains: network``); its module builds the torch optimizer
  (``torch_optimizer``) and maps a config entry to this module's fields (``train_fields``):
  ``"gd"``: full-batch steepest descent w.r.t. ``norm`` (l2 = gradient descent, linf =
  sign descent, l1 = coordinate descent; :class:`ibrobust.updates.SteepestDescent`) with a
  constant step ``lr``; ``"sgd"`` / ``"adam"``: minibatches.
* A full-batch kind (capability ``full_batch``) steps once per epoch on the whole training
  set; the others take minibatches of ``batch_size`` (None = full batch) in an order drawn
  from the seed's own generator, so the same seed gives the same iterates.

Losses (:func:`ibrobust.training.losses.supervised_loss`; ``loss="auto"``): logistic on
the binary score for 2-class supervision, cross-entropy on the heads for k-class
supervision; ``"exponential"`` is exp(-y f) (binary only), formed in log space. Training stops at ``max_epochs`` or at the end of the first
epoch whose mean train loss is below ``stop_loss`` with 100% train accuracy.

(The two-layer nets of Study FA under l2 GD also have an exact, faster path in
:mod:`ibrobust.training.full_batch`.)
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from ibrobust.device import resolve_device  # noqa: F401  (re-exported)
from ibrobust.kinds import OPTIMIZERS
from ibrobust.seeding import torch_generator
from ibrobust.training.adversarial import (
    AdversarialConfig,
    adversarial_from_dict,
    batch_perturbation,
)
from ibrobust.training.losses import LOSSES, supervised_correct, supervised_loss
from ibrobust.training.protocol import Fitted
from ibrobust.updates.steepest import NORMS, SCALES


@dataclass(frozen=True)
class NetTrainConfig:
    algorithm: str = "adam"  # an optimizer kind that trains networks (ibrobust.kinds.OPTIMIZERS)
    lr: float = 1e-3
    max_epochs: int = 10  # gd: steps
    batch_size: int | None = 128  # None = full batch (gd always uses the full batch)
    norm: str = "l2"  # gd: geometry of the steepest step
    scale: str = "dual"  # gd: "dual" (l2: plain gradient) or "unit" (normalised; linf: sign(g))
    momentum: float = 0.0  # sgd
    betas: tuple[float, float] = (0.9, 0.999)  # adam
    weight_decay: float = 0.0  # sgd, adam
    loss: str = "auto"
    stop_loss: float | None = None  # stop once the epoch's mean loss is below it at 100% acc
    log_every: int = 1  # epochs between logged records
    n_checkpoints: int = 0  # log-spaced epochs whose weights are kept (plus the final one)
    eval_every: int | None = None  # epochs between curve points (on_eval; None: last only)
    # robust ERM: each batch -> its PGD perturbation (ibrobust.training.adversarial); None or
    # eps 0 = plain ERM. Logged loss/acc are then those of the perturbed batches.
    adversarial: AdversarialConfig | None = None

    def __post_init__(self) -> None:
        if self.algorithm not in networks():
            raise ValueError(f"algorithm must be one of {networks()}, got {self.algorithm!r}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if self.max_epochs < 1:
            raise ValueError(f"max_epochs must be >= 1, got {self.max_epochs}")
        if self.batch_size is not None and self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1 or None, got {self.batch_size}")
        if self.norm not in NORMS or self.scale not in SCALES:
            raise ValueError(
                f"norm must be in {NORMS} and scale in {SCALES}, got {self.norm!r}, {self.scale!r}"
            )
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {self.loss!r}")
        if self.log_every < 1 or self.n_checkpoints < 0 or (self.eval_every or 1) < 1:
            raise ValueError(
                f"log_every and eval_every must be >= 1 and n_checkpoints >= 0, got "
                f"{self.log_every}, {self.eval_every}, {self.n_checkpoints}"
            )
        if self.adversarial is not None and not isinstance(self.adversarial, AdversarialConfig):
            raise ValueError(f"adversarial must be an AdversarialConfig, got {self.adversarial!r}")


def networks() -> tuple[str, ...]:
    """The optimizer kinds that train networks (capability ``trains: network``)."""
    return tuple(k for k in OPTIMIZERS.kinds() if OPTIMIZERS.capability(k, "trains") == "network")


def checkpoint_epochs(max_epochs: int, n: int) -> set[int]:
    """``n`` log-spaced epochs in [1, max_epochs] (duplicates dropped); none when n = 0."""
    if n == 0:
        return set()
    return set(map(int, np.unique(np.round(np.geomspace(1, max_epochs, max(n, 2))).astype(int))))


@dataclass
class NetTrainResult:
    epochs: int
    converged: bool  # stop_loss reached (False when no stop_loss is set)
    history: list[dict] = field(default_factory=list)  # {epoch, loss, acc, seconds}
    checkpoints: dict[int, dict[str, torch.Tensor]] = field(default_factory=dict)  # epoch -> state


def _optimizer(params, cfg: NetTrainConfig) -> torch.optim.Optimizer:
    """The torch optimizer of ``cfg.algorithm``'s kind module (its ``torch_optimizer``)."""
    return OPTIMIZERS.load(cfg.algorithm).torch_optimizer(params, cfg)


def _epoch(model, x, y, fine, supervision, cfg, opt, bs, gen, perturb, epoch) -> tuple[float, int]:
    """One pass over the data (one step for full-batch training): (summed loss, correct)."""
    n, readout = x.shape[0], model.readout
    order = torch.randperm(n, generator=gen).to(x.device) if bs < n else None
    # steepest descent takes the loss's gradients directly (torch.autograd.grad): the same
    # update as backward() + step(), without the Optimizer's per-step machinery (profiler
    # record, hooks) and zero_grad; SGD and Adam go through torch.optim as usual
    params = _direct_params(opt)
    loss_sum, correct = 0.0, 0
    for lo in range(0, n, bs):
        idx = order[lo : lo + bs] if order is not None else slice(lo, lo + bs)
        xb, yb, fb = x[idx], y[idx], fine[idx]
        if perturb is not None:  # robust ERM: the step sees the batch's PGD perturbation
            xb = perturb(model, xb, yb, fb)
        logits = model(xb)
        loss = supervised_loss(supervision, logits, readout, yb, fb, cfg.loss)
        value = float(loss.detach())  # read once: the divergence check and the epoch's sum
        if not math.isfinite(value):
            raise FloatingPointError(
                f"training diverged in epoch {epoch} (loss={value}); lower lr={cfg.lr}"
            )
        if params is not None:
            opt.apply_gradients(torch.autograd.grad(loss, params, allow_unused=True))
        else:
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        loss_sum += value * xb.shape[0]
        correct += int(supervised_correct(supervision, logits.detach(), readout, yb, fb).sum())
    return loss_sum, correct


def _direct_params(opt: torch.optim.Optimizer) -> list[torch.Tensor] | None:
    """The parameters of an optimizer that takes explicit gradients (``apply_gradients``:
    steepest descent), in its order; None for one that reads ``.grad`` (SGD, Adam)."""
    if not callable(getattr(opt, "apply_gradients", None)):
        return None
    return [p for group in opt.param_groups for p in group["params"]]


def _record(model, epoch, mean_loss, acc, t0, cfg, done, on_eval) -> dict | None:
    """The epoch's history row (None when neither logged nor evaluated): loss and acc of the
    (perturbed) batches, plus the curve point of ``on_eval`` every ``eval_every`` epochs."""
    last = done or epoch == cfg.max_epochs
    every = cfg.eval_every
    curve = on_eval is not None and (last or (every is not None and epoch % every == 0))
    if not (curve or last or epoch % cfg.log_every == 0):
        return None
    rec = {"epoch": epoch, "loss": mean_loss, "acc": acc, "seconds": time.monotonic() - t0}
    if curve:
        rec.update(on_eval(model))
    return rec


def train_network(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    fine: torch.Tensor,
    supervision: str,
    cfg: NetTrainConfig,
    seed: int,
    device: torch.device | str | None = None,
    on_log: Callable[[dict], None] | None = None,
    on_eval: Callable[[nn.Module], dict] | None = None,
) -> NetTrainResult:
    """Train ``model`` in place on (x, y, fine); the model ends on the CPU in eval mode.

    ``device``: ``"auto"`` / None = CUDA when present, else the CPU; or any torch device.
    ``on_eval(model) -> {name: value}``: the curve point (e.g. clean and robust train / test
    accuracy, :mod:`ibrobust.training.curves`), taken every ``cfg.eval_every`` epochs and
    at the last one, merged into that epoch's history row (and passed to ``on_log``)."""
    device = resolve_device(device)
    model.to(device).train()
    x, y, fine = x.to(device), y.to(device), fine.to(device)
    n = x.shape[0]
    full = OPTIMIZERS.capability(cfg.algorithm, "full_batch") or cfg.batch_size is None
    bs = n if full else min(cfg.batch_size, n)
    opt = _optimizer([p for p in model.parameters() if p.requires_grad], cfg)
    gen = torch_generator(seed, "train", "shuffle")
    ckpt_at = checkpoint_epochs(cfg.max_epochs, cfg.n_checkpoints)
    result = NetTrainResult(epochs=0, converged=False)
    perturb = batch_perturbation(cfg.adversarial, supervision, seed)  # None: plain ERM
    t0 = time.monotonic()
    for epoch in range(1, cfg.max_epochs + 1):
        loss_sum, correct = _epoch(
            model, x, y, fine, supervision, cfg, opt, bs, gen, perturb, epoch
        )
        result.epochs = epoch
        done = cfg.stop_loss is not None and loss_sum / n < cfg.stop_loss and correct == n
        rec = _record(model, epoch, loss_sum / n, correct / n, t0, cfg, done, on_eval)
        if rec is not None:
            result.history.append(rec)
            if on_log is not None:
                on_log(rec)
        if epoch in ckpt_at:
            result.checkpoints[epoch] = {
                k: v.detach().cpu().clone() for k, v in model.state_dict().items()
            }
        if done:
            result.converged = True
            break
    model.to("cpu").eval()
    return result


def net_train_fields(opt: dict) -> dict[str, Any]:
    """NetTrainConfig fields of an ``optimizers`` entry whose kind trains networks (its
    module's ``train_fields``; the robust-ERM block typed)."""
    kind = opt.get("kind")
    if OPTIMIZERS.capability(kind, "trains") != "network":
        raise ValueError(f"optimizer kind {kind!r} cannot train a network; use {networks()}")
    fields: dict[str, Any] = OPTIMIZERS.load(kind).train_fields(opt)
    if "adversarial" in fields:  # robust ERM (None or eps 0: plain ERM)
        fields["adversarial"] = adversarial_from_dict(fields["adversarial"])
    return {"algorithm": kind, **fields}


def curve_recorder(opt: dict, cfg, data, supervision: str, seed: int):
    """The trainer's ``on_eval`` hook of an optimizer entry with ``eval_every`` (else None):
    clean and robust (training attack) accuracy on the train set and the first
    ``eval_points`` test points (:mod:`ibrobust.training.curves`)."""
    if opt.get("eval_every") is None:
        return None
    from ibrobust.training.curves import CurveRecorder

    tr, te = data.train, data.test
    return CurveRecorder(
        (tr.x, tr.y, tr.fine),
        (te.x, te.y, te.fine),
        supervision,
        cfg.adversarial,
        seed,
        points=opt.get("eval_points"),
    )


def fit_path(net, data, supervision, optimizer, seed, on_log=None, device=None) -> Fitted:
    """The training path's :class:`~ibrobust.training.protocol.Trainer` call: ``net`` trained
    in place on ``data.train`` by the ``optimizers`` entry ``optimizer`` (robust ERM and
    curves as it asks)."""
    tr = data.train
    cfg = NetTrainConfig(**net_train_fields(optimizer))
    curves = curve_recorder(optimizer, cfg, data, supervision, seed)
    res = train_network(net, tr.x, tr.y, tr.fine, supervision, cfg, seed, device, on_log, curves)
    # the last epoch's state is Fitted.state (the caller adds it to the iterates)
    return Fitted(net.state_dict(), res.history, res.epochs, res.converged, res.checkpoints)
