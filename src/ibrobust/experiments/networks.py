"""Glue of the network studies (FA, FA-IMAGES, PRELU, cross-paper combinations).

:func:`fit` turns one ``train`` job - a dataset, a ``models`` entry, an ``optimizers``
entry, a supervision and a seed - into a saved model state, a history table and a few
scalars. The training path comes from the entries' kinds (:func:`ibrobust.kinds.trainer`)
and its module is loaded on demand, so a job's code hash covers only the path it runs:

* ``construct``: the hand-built robust reference of Study FA (not trained);
* ``gram_gd``: a ``two_layer`` net under l2 ``gd`` with logistic / cross-entropy loss, by
  the exact Gram-space GD of :mod:`ibrobust.training.full_batch` (same iterates, ~2d/n
  fewer flops), which keeps the log-spaced checkpoints of the lambda decomposition;
* ``prelu``: a pReLU net under plain SGD / Adam, by the official loop with a written-out
  backward pass (:func:`ibrobust.training.prelu.train_prelu`; exponential or logistic loss
  of the binary score, cross-entropy of the heads for k-class supervision; on the CPU);
* ``network``: everything else, by :func:`ibrobust.training.network.train_network`
  (full-batch steepest descent in any norm, SGD, Adam); a two-layer net trained that way
  gets the same checkpoint fields, so the decomposition also runs on, e.g., sign descent.

The heads and readout come from the model's kind (:func:`ibrobust.models.registry.model_readout`):
(+1, -1) for 2-class supervision and the class signs for k-class supervision, except that a
pReLU net may have one binary head (the official synthetic net).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd
import torch
from torch import nn

from ibrobust import kinds
from ibrobust.data.dataset import Dataset
from ibrobust.models.registry import BuildContext, build_model, model_readout, model_state
from ibrobust.training.adversarial import adversarial_from_dict
from ibrobust.training.losses import supervised_correct

# optimizers-registry keys -> NetTrainConfig fields, per kind
_NET_KEYS = {
    "gd": {
        "lr": "lr",
        "max_steps": "max_epochs",
        "stop_loss": "stop_loss",
        "log_every": "log_every",
        "n_checkpoints": "n_checkpoints",
        "norm": "norm",
        "scale": "scale",
        "loss": "loss",
        "adversarial": "adversarial",
        "eval_every": "eval_every",
    },
    **{
        kind: {
            "lr": "lr",
            "epochs": "max_epochs",
            "batch_size": "batch_size",
            "weight_decay": "weight_decay",
            "stop_loss": "stop_loss",
            "log_every": "log_every",
            "n_checkpoints": "n_checkpoints",
            "loss": "loss",
            "momentum": "momentum",
            "betas": "betas",
            "adversarial": "adversarial",
            "eval_every": "eval_every",
        }
        for kind in ("sgd", "adam")
    },
}
# keys of the gd entry that GDConfig (ibrobust.training.full_batch) takes
_GRAM_KEYS = ("lr", "max_steps", "stop_loss", "n_checkpoints", "log_every", "method")


def net_train_fields(opt: dict) -> dict[str, Any]:
    """NetTrainConfig fields of an ``optimizers`` entry of kind gd, sgd or adam."""
    kind = opt.get("kind")
    if kind not in _NET_KEYS:
        raise ValueError(f"optimizer kind {kind!r} cannot train a network; use {sorted(_NET_KEYS)}")
    keys = _NET_KEYS[kind]
    fields: dict[str, Any] = {keys[k]: v for k, v in opt.items() if k in keys}
    if "betas" in fields:
        fields["betas"] = tuple(float(b) for b in fields["betas"])
    if "adversarial" in fields:  # robust ERM (None or eps 0: plain ERM)
        fields["adversarial"] = adversarial_from_dict(fields["adversarial"])
    return {"algorithm": kind, **fields}


def curve_recorder(opt: dict, cfg, data: Dataset, supervision: str, seed: int):
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


def prelu_train_fields(opt: dict, supervision: str) -> dict[str, Any]:
    """PreluTrainConfig fields of an ``optimizers`` entry of kind sgd or adam (the ``prelu``
    training path): the loss of the supervision (binary: ``exponential`` -> exp,
    ``auto`` / ``logistic`` -> logistic; k-class: cross-entropy)."""
    if opt.get("kind") not in ("sgd", "adam"):
        raise ValueError(f"the prelu training path takes sgd or adam, got {opt.get('kind')!r}")
    loss = opt.get("loss", "auto")
    if supervision == "multiclass":
        if loss == "exponential":
            raise ValueError("multiclass supervision trains with cross-entropy, not 'exponential'")
        name = "ce"
    elif supervision == "binary":
        name = "exp" if loss == "exponential" else "logistic"
    else:
        raise ValueError(f"unknown supervision {supervision!r}")
    fields: dict[str, Any] = {
        "optimizer": opt["kind"],
        "lr": float(opt["lr"]),
        "epochs": int(opt["epochs"]),
        "loss": name,
    }
    if opt.get("batch_size") is not None:
        fields["batch_size"] = int(opt["batch_size"])
    if "betas" in opt:
        fields["betas"] = tuple(float(b) for b in opt["betas"])
    if "matmul" in opt:
        fields["matmul"] = str(opt["matmul"])
    return fields


def _fit_prelu(trainer, net, data: Dataset, supervision: str, opt: dict, seed: int, on_log):
    """(trained net, history, epochs) by the fast pReLU loop on the flattened inputs."""
    tr = data.train
    fields = prelu_train_fields(opt, supervision)
    fields.setdefault("batch_size", len(tr))  # batch_size null = the full batch
    cfg = trainer.PreluTrainConfig(**fields)
    labels = tr.fine if cfg.loss == "ce" else tr.y
    every = int(opt.get("log_every", 1))
    history: list[dict] = []
    t0 = time.monotonic()

    def on_epoch(rec: dict) -> None:
        if rec["epoch"] % every and rec["epoch"] != cfg.epochs:
            return
        rec = {**rec, "seconds": time.monotonic() - t0}
        history.append(rec)
        if on_log is not None:
            on_log(rec)

    res = trainer.train_prelu(net, tr.x.flatten(1), labels, cfg, seed, on_epoch=on_epoch)
    return res.model, pd.DataFrame(history), cfg.epochs


def _fit_network(trainer, net, data: Dataset, supervision, opt: dict, seed, device, on_log):
    """The generic loop (robust ERM and curves as the optimizer entry asks)."""
    cfg = trainer.NetTrainConfig(**net_train_fields(opt))
    curves = curve_recorder(opt, cfg, data, supervision, seed)
    tr = data.train
    return trainer.train_network(
        net, tr.x, tr.y, tr.fine, supervision, cfg, seed, device, on_log, curves
    )


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
    trainer = kinds.load(kinds.TRAINERS, path, "training path")
    tr = data.train
    if path == "construct":
        if data.means is None:
            raise ValueError("the robust reference needs synthetic cluster data (cluster means)")
        net = trainer.robust_reference_net(data.means, data.sign, beta=model["beta"])
        state = model_state(net, model, None, supervision="binary")
        history = pd.DataFrame([{"step": 0, "loss": float("nan")}])
        return FitResult(state, history, evaluate(net, data, "binary"))

    readout = model_readout(model, supervision, data.sign)
    ctx = BuildContext(data.input_shape, readout, seed, tr.x)
    net = build_model(model, ctx)
    init = {k: v.detach().clone() for k, v in net.state_dict().items()}
    if path == "gram_gd":
        gd = trainer.GDConfig(**{k: opt[k] for k in _GRAM_KEYS if k in opt})
        res = trainer.train_gd(
            tr.x,
            tr.y,
            tr.fine,
            init["weight"],
            init["bias"],
            readout,
            supervision,
            gd,
            on_log=on_log,
        )
        net.load_state_dict({**init, "weight": res.weight, "bias": res.bias})
        ckpts = {s: {"weight": w, "bias": b} for s, (w, b) in res.checkpoints.items()}
        history, n_steps, converged = pd.DataFrame(res.history), res.steps, res.converged
    elif path == "prelu":
        net, history, n_steps = _fit_prelu(trainer, net, data, supervision, opt, seed, on_log)
        ckpts, converged = {0: init, n_steps: net.state_dict()}, False
    else:
        res = _fit_network(trainer, net, data, supervision, opt, seed, device, on_log)
        ckpts = {0: init, **res.checkpoints, res.epochs: net.state_dict()}
        history, n_steps, converged = pd.DataFrame(res.history), res.epochs, res.converged
    if model["kind"] == "two_layer":  # the lambda decomposition reads these
        steps = sorted(ckpts)
        extra = {
            "init_weight": init["weight"],
            "init_bias": init["bias"],
            "ckpt_steps": torch.tensor(steps),
            "ckpt_weight": torch.stack([ckpts[s]["weight"].detach().clone() for s in steps]),
            "ckpt_bias": torch.stack([ckpts[s]["bias"].detach().clone() for s in steps]),
        }
    else:
        extra = {"checkpoints": {str(e): s for e, s in ckpts.items() if e not in (0, n_steps)}}
    state = model_state(net, model, ctx, supervision=supervision, **extra)
    state.update(steps=torch.tensor(n_steps), converged=torch.tensor(converged))
    metrics = {**evaluate(net, data, supervision), "train.steps": float(n_steps)}
    metrics["train.converged"] = float(converged)
    return FitResult(state, history, metrics)
