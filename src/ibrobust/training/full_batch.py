"""Full-batch gradient descent on the fixed-second-layer two-layer net.

Two exact implementations of the same iterates:

* ``method="direct"``: plain autograd on W (the reference, and the shape every
  steepest-descent optimizer can reuse);
* ``method="gram"``: GD keeps each neuron in w_r(0) + span{x_i}, so we train the
  coefficients A (N x n) of W(t) = W(0) + A(t) X instead. With K = X X^T precomputed,
  one step costs one (n x n) @ (n x N) product instead of two (n x d) @ (d x N) ones:
  about 2d/n fewer flops (6x at the paper's d=3072, n=1000). A(t) is also, exactly,
  the per-sample coefficient of the lambda decomposition (Lemma: lambda_j = sum of
  A over cluster j), which the analysis cross-checks against least squares.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from ibrobust.data.dataset import Dataset
from ibrobust.device import resolve_device
from ibrobust.training.losses import supervised_accuracy, supervised_loss
from ibrobust.training.protocol import Fitted, OnLog


@dataclass(frozen=True)
class GDConfig:
    # defaults = the config schema's optimizer_gd (tests/unit/test_defaults.py)
    lr: float = 0.5
    max_steps: int = 20000
    stop_loss: float = 1e-5  # stop once train loss < stop_loss and train accuracy is 100%
    n_checkpoints: int = 16  # log-spaced checkpoints in [0, max_steps] (+ the final step)
    log_every: int = 100
    method: str = "gram"  # "gram" (fast, exact for GD) or "direct" (autograd)

    def __post_init__(self) -> None:
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if self.max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {self.max_steps}")
        if self.n_checkpoints < 1 or self.log_every < 1:
            raise ValueError(
                f"n_checkpoints and log_every must be >= 1, got {self.n_checkpoints}, {self.log_every}"
            )
        if self.method not in ("gram", "direct"):
            raise ValueError(f"method must be 'gram' or 'direct', got {self.method!r}")


def checkpoint_steps(max_steps: int, n: int) -> list[int]:
    """0 plus ``n`` log-spaced integer steps in [1, max_steps] (duplicates dropped)."""
    steps = np.unique(np.round(np.geomspace(1, max_steps, max(n, 2))).astype(int))
    return [0, *map(int, steps)]


@dataclass
class TrainResult:
    weight: torch.Tensor  # (H, m, d) final
    bias: torch.Tensor  # (H, m) final
    epochs: int  # steps taken (one full-batch step is one epoch)
    converged: bool  # reached stop_loss with 100% train accuracy
    history: list[dict] = field(default_factory=list)  # {epoch, loss, acc} every log_every
    checkpoints: dict[int, tuple[torch.Tensor, torch.Tensor]] = field(default_factory=dict)


class _Iterates:
    """W(t) and its update, in the coefficient space (``gram``) or directly (``direct``)."""

    def __init__(self, x: torch.Tensor, w0: torch.Tensor, cfg: GDConfig) -> None:
        self.x, self.w0, self.lr, self.gram = x, w0, cfg.lr, cfg.method == "gram"
        if self.gram:
            self.kern = x @ x.T  # (n, n)
            self.z0 = x @ w0.T  # (n, N)
            self.coef = x.new_zeros(w0.shape[0], x.shape[0])  # W = W0 + coef X
        else:
            self.w = w0.clone()

    def pre(self, b: torch.Tensor) -> torch.Tensor:
        """(n, N) pre-activations at the current weights."""
        if self.gram:
            return torch.addmm(self.z0, self.kern, self.coef.T) + b
        return torch.addmm(b, self.x, self.w.T)

    def step(self, gz: torch.Tensor) -> None:
        if self.gram:
            self.coef.sub_(self.lr * gz.T)
        else:
            self.w.sub_(self.lr * (gz.T @ self.x))

    def weights(self) -> torch.Tensor:
        if self.gram:
            return self.w0 + self.coef @ self.x
        return self.w.clone()


def train_gd(
    x: torch.Tensor,
    y: torch.Tensor,
    fine: torch.Tensor,
    weight0: torch.Tensor,
    bias0: torch.Tensor,
    readout: torch.Tensor,
    supervision: str,
    cfg: GDConfig,
    on_log: Callable[[dict], None] | None = None,
) -> TrainResult:
    """Full-batch GD from (weight0, bias0); returns final weights, history, checkpoints."""
    h, m, d = weight0.shape
    n = x.shape[0]
    if x.shape[1] != d:
        raise ValueError(f"x has dimension {x.shape[1]}, weights expect {d}")
    ckpt_at = set(checkpoint_steps(cfg.max_steps, cfg.n_checkpoints))
    it = _Iterates(x, weight0.reshape(h * m, d), cfg)
    b = bias0.reshape(-1).clone()
    result = TrainResult(weight=weight0, bias=bias0, epochs=0, converged=False)
    t = 0
    while True:
        z = it.pre(b)  # (n, N) pre-activations
        heads = torch.relu(z).reshape(n, h, m).mean(-1).requires_grad_(True)  # (n, H)
        loss = supervised_loss(supervision, heads, readout, y, fine)
        (g_heads,) = torch.autograd.grad(loss, heads)  # (n, H), cheap: the heads only
        loss_v = float(loss.detach())
        if not math.isfinite(loss_v):
            raise FloatingPointError(
                f"training diverged at step {t} (loss={loss_v}); lower lr={cfg.lr}"
            )
        acc = supervised_accuracy(supervision, heads.detach(), readout, y, fine)
        done = (loss_v < cfg.stop_loss and acc == 1.0) or t >= cfg.max_steps
        if t in ckpt_at or done:
            result.checkpoints[t] = (it.weights().reshape(h, m, d).clone(), b.reshape(h, m).clone())
        if t % cfg.log_every == 0 or done:
            rec = {"epoch": t, "loss": loss_v, "acc": acc}
            result.history.append(rec)
            if on_log is not None:
                on_log(rec)
        if done:
            result.converged = loss_v < cfg.stop_loss and acc == 1.0
            break
        # dL/dz = dL/dheads / m on active units (ReLU'(0) = 0, as autograd)
        gz = (g_heads / m).repeat_interleave(m, dim=1) * (z > 0)  # (n, N)
        it.step(gz)
        b.sub_(cfg.lr * gz.sum(0))
        t += 1
    result.weight = it.weights().reshape(h, m, d)
    result.bias = b.reshape(h, m).clone()
    result.epochs = t
    return result


# keys of the gd entry that GDConfig takes
GD_KEYS = ("lr", "max_steps", "stop_loss", "n_checkpoints", "log_every", "method")


def fit_path(
    net: nn.Module,
    data: Dataset,
    supervision: str,
    optimizer: Mapping[str, Any],
    seed: int,
    on_log: OnLog | None = None,
    device: str | None = None,
) -> Fitted:
    """The ``gram_gd`` training path (:class:`ibrobust.training.protocol.Trainer`): a
    ``two_layer`` net's (weight, bias) under GD. Deterministic (``seed`` is unused); the data
    and weights move to ``device`` (the config key, :func:`ibrobust.device.resolve_device`)
    once, the state and checkpoints come back on the CPU."""
    cfg = GDConfig(**{k: optimizer[k] for k in GD_KEYS if k in optimizer})
    dev = resolve_device(device)
    init = {k: v.detach().clone() for k, v in net.state_dict().items()}
    tr = data.train.to(dev)
    w0, b0, readout = (t.to(dev) for t in (init["weight"], init["bias"], net.readout))
    res = train_gd(tr.x, tr.y, tr.fine, w0, b0, readout, supervision, cfg, on_log)
    return Fitted(
        state={**init, "weight": res.weight.cpu(), "bias": res.bias.cpu()},
        history=res.history,
        epochs=res.epochs,
        converged=res.converged,
        checkpoints={
            s: {"weight": w.cpu(), "bias": b.cpu()} for s, (w, b) in res.checkpoints.items()
        },
    )
