"""The fit stage of the network studies (FA, FA-IMAGES, PRELU, cross-paper combinations).

:func:`fit` turns one ``train`` job - a dataset, a ``models`` entry, an ``optimizers``
entry, a supervision and a seed - into a saved model state, a history table and a few
scalars. The training path comes from the entries' kinds (:func:`ibrobust.kinds.trainer`)
and its module is loaded on demand, so a job's code hash covers only the path it runs:

* ``construct``: a constructed model (capability ``constructed``, e.g. the hand-built robust
  reference of Study FA): built from the data by its kind's ``construct``, not trained;
* ``gram_gd``: a ``two_layer`` net under l2 ``gd`` with logistic / cross-entropy loss, by
  the exact Gram-space GD of :mod:`ibrobust.training.full_batch` (same iterates, ~2d/n
  fewer flops), which keeps the log-spaced checkpoints of the lambda decomposition;
* ``prelu``: a pReLU net under plain SGD / Adam, by the official loop with a written-out
  backward pass (:func:`ibrobust.training.prelu.train_prelu`; exponential or logistic loss
  of the binary score, cross-entropy of the heads for k-class supervision);
* ``network``: everything else, by :func:`ibrobust.training.network.train_network`
  (full-batch steepest descent in any norm, SGD, Adam); a two-layer net trained that way
  gets the same checkpoint fields (its kind's ``checkpoint_fields``), so the decomposition
  also runs on, e.g., sign descent.

Every training path runs on ``device`` (the config key, :func:`ibrobust.device.resolve_device`;
the saved state is on the CPU); a constructed model is built on the CPU.

The heads and readout come from the model's kind (:func:`ibrobust.models.registry.model_readout`):
(+1, -1) for 2-class supervision and the class signs for k-class supervision, except that a
pReLU net may have one binary head (the official synthetic net).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd
import torch
from torch import nn

from ibrobust import kinds
from ibrobust.data.dataset import Dataset
from ibrobust.models.registry import (
    BuildContext,
    build_model,
    checkpoint_fields,
    construct_model,
    model_readout,
    model_state,
)
from ibrobust.training.losses import supervised_correct
from ibrobust.training.protocol import check_history


@dataclass
class FitResult:
    state: dict  # what models.registry.load_model rebuilds the net from
    history: pd.DataFrame  # one row per logged step/epoch: loss, acc
    metrics: dict[str, float]  # train/test accuracies, steps, converged


def evaluate(net: nn.Module, data: Dataset, supervision: str, batch: int = 2048) -> dict:
    """Train accuracy on the trained labels, test accuracy of the binary task (and of the
    fine classes for a k-class model)."""

    def acc(split, sup: str) -> float:
        out = []
        with torch.no_grad():
            for lo in range(0, len(split), batch):
                sl = slice(lo, lo + batch)
                z = net(split.x[sl])
                out.append(supervised_correct(sup, z, net.readout, split.y[sl], split.fine[sl]))
        return float(torch.cat(out).float().mean())

    res = {"train.acc": acc(data.train, supervision), "test.binary_acc": acc(data.test, "binary")}
    if supervision == "multiclass":
        res["test.fine_acc"] = acc(data.test, "multiclass")
    return res


def fit(
    model: dict,
    opt: dict,
    data: Dataset,
    supervision: str,
    seed: int,
    on_log: Callable[[dict], None] | None = None,
    device: str | None = None,
) -> FitResult:
    """Build (or construct) and train one model; see the module docstring for the paths."""
    path = kinds.trainer(model, opt)
    if path == kinds.CONSTRUCT:  # built from the data, not trained
        net = construct_model(model, data)
        state = model_state(net, model, None, supervision="binary")
        history = pd.DataFrame([{"epoch": 0, "loss": float("nan")}])
        return FitResult(state, history, evaluate(net, data, "binary"))

    trainer = kinds.load_trainer(path)
    readout = model_readout(model, supervision, data.sign)
    ctx = BuildContext(data.input_shape, readout, seed, data.train.x)
    net = build_model(model, ctx)
    init = {k: v.detach().clone() for k, v in net.state_dict().items()}
    fitted = trainer.fit_path(net, data, supervision, opt, seed, on_log=on_log, device=device)
    net.load_state_dict(fitted.state)
    ckpts = {0: init, **fitted.checkpoints}
    ckpts.setdefault(fitted.epochs, net.state_dict())
    extra = checkpoint_fields(model, init, ckpts, fitted.epochs)
    state = model_state(net, model, ctx, supervision=supervision, **extra)
    n_steps, converged = fitted.epochs, fitted.converged
    state.update(steps=torch.tensor(n_steps), converged=torch.tensor(converged))
    metrics = {**evaluate(net, data, supervision), "train.steps": float(n_steps)}
    metrics["train.converged"] = float(converged)
    history = pd.DataFrame(check_history(fitted.history))
    return FitResult(state, history, metrics)
