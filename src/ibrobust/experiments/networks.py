"""Glue of the network studies (FA, FA-IMAGES, PRELU, cross-paper combinations).

:func:`fit` turns one ``train`` job - a dataset, a ``models`` entry, an ``optimizers``
entry, a supervision and a seed - into a saved model state, a history table and a few
scalars. It picks the training path from the entries' kinds:

* the hand-built robust reference of Study FA is constructed, not trained;
* a ``two_layer`` net under l2 ``gd`` (logistic / cross-entropy loss) uses the exact
  Gram-space GD of :mod:`ibrobust.training.full_batch` (same iterates, ~2d/n fewer flops),
  which also keeps the log-spaced checkpoints of the lambda decomposition;
* everything else goes through :func:`ibrobust.training.network.train_network` (full-batch
  steepest descent in any norm, SGD, Adam); a two-layer net trained that way gets the same
  checkpoint fields, so the decomposition also runs on, e.g., sign descent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd
import torch
from torch import nn

from ibrobust.data.dataset import Dataset
from ibrobust.models.registry import BuildContext, build_model, model_state
from ibrobust.models.robust_reference import robust_reference_net
from ibrobust.models.two_layer import TwoLayerFixed, readout_for
from ibrobust.training.full_batch import GDConfig, train_gd
from ibrobust.training.network import NetTrainConfig, batch_correct, train_network

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
    },
    "sgd": {
        "lr": "lr",
        "epochs": "max_epochs",
        "batch_size": "batch_size",
        "momentum": "momentum",
        "weight_decay": "weight_decay",
        "stop_loss": "stop_loss",
        "log_every": "log_every",
        "n_checkpoints": "n_checkpoints",
        "loss": "loss",
    },
    "adam": {
        "lr": "lr",
        "epochs": "max_epochs",
        "batch_size": "batch_size",
        "betas": "betas",
        "weight_decay": "weight_decay",
        "stop_loss": "stop_loss",
        "log_every": "log_every",
        "n_checkpoints": "n_checkpoints",
        "loss": "loss",
    },
}


def net_train_config(opt: dict) -> NetTrainConfig:
    """:class:`NetTrainConfig` of an ``optimizers`` entry of kind gd, sgd or adam."""
    kind = opt.get("kind")
    if kind not in _NET_KEYS:
        raise ValueError(f"optimizer kind {kind!r} cannot train a network; use {sorted(_NET_KEYS)}")
    keys = _NET_KEYS[kind]
    fields: dict[str, Any] = {keys[k]: v for k, v in opt.items() if k in keys}
    if "betas" in fields:
        fields["betas"] = tuple(float(b) for b in fields["betas"])
    return NetTrainConfig(algorithm=kind, **fields)


def uses_gram_gd(model: dict, opt: dict) -> bool:
    """The exact fast path: two-layer net, l2 GD with its plain gradient, logistic/CE loss."""
    return (
        model.get("kind") == "two_layer"
        and opt.get("kind") == "gd"
        and opt.get("norm", "l2") == "l2"
        and opt.get("scale", "dual") == "dual"
        and opt.get("loss", "auto") in ("auto", "logistic", "ce")
        and opt.get("method", "gram") in ("gram", "direct")
    )


@dataclass
class FitResult:
    state: dict  # what models.registry.load_model rebuilds the net from
    history: pd.DataFrame  # one row per logged step/epoch: loss, acc
    metrics: dict[str, float]  # train/test accuracies, steps, converged


def _evaluate(net: nn.Module, data: Dataset, supervision: str, batch: int = 2048) -> dict:
    def acc(split, fn) -> float:
        out = []
        with torch.no_grad():
            for lo in range(0, len(split), batch):
                sl = slice(lo, lo + batch)
                out.append(fn(net(split.x[sl]), split.y[sl], split.fine[sl]))
        return float(torch.cat(out).float().mean())

    ro = net.readout
    res = {
        "train.acc": acc(data.train, lambda z, y, f: batch_correct(z, ro, y, f, supervision)),
        "test.binary_acc": acc(data.test, lambda z, y, f: batch_correct(z, ro, y, f, "binary")),
    }
    if supervision == "multiclass":
        res["test.fine_acc"] = acc(data.test, lambda z, y, f: z.argmax(1) == f)
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
    tr = data.train
    if model["kind"] == "robust_reference":
        if data.means is None:
            raise ValueError("the robust reference needs synthetic cluster data (cluster means)")
        net = robust_reference_net(data.means, data.sign, beta=model["beta"])
        state = model_state(net, model, None, supervision="binary")
        history = pd.DataFrame([{"step": 0, "loss": float("nan")}])
        return FitResult(state, history, _evaluate(net, data, "binary"))

    readout = readout_for(supervision, data.sign)
    ctx = BuildContext(data.input_shape, readout, seed, tr.x)
    net = build_model(model, ctx)
    if uses_gram_gd(model, opt):
        assert isinstance(net, TwoLayerFixed)
        w0, b0 = net.weight.detach().clone(), net.bias.detach().clone()
        gd = GDConfig(**{k: v for k, v in opt.items() if k in GDConfig.__dataclass_fields__})
        res = train_gd(tr.x, tr.y, tr.fine, w0, b0, readout, supervision, gd, on_log=on_log)
        net = TwoLayerFixed(res.weight, res.bias, readout)
        steps = sorted(res.checkpoints)
        extra = _two_layer_checkpoints(
            w0,
            b0,
            steps,
            [res.checkpoints[s][0] for s in steps],
            [res.checkpoints[s][1] for s in steps],
        )
        history, n_steps, converged = pd.DataFrame(res.history), res.steps, res.converged
    else:
        cfg = net_train_config(opt)
        init = {k: v.detach().clone() for k, v in net.state_dict().items()}
        res = train_network(net, tr.x, tr.y, tr.fine, supervision, cfg, seed, device, on_log)
        extra = {}
        if isinstance(net, TwoLayerFixed):  # the decomposition reads these
            steps = [0, *sorted(res.checkpoints), res.epochs]
            states = [
                init,
                *(res.checkpoints[s] for s in sorted(res.checkpoints)),
                net.state_dict(),
            ]
            steps, states = _dedupe(steps, states)
            extra = _two_layer_checkpoints(
                init["weight"],
                init["bias"],
                steps,
                [s["weight"] for s in states],
                [s["bias"] for s in states],
            )
        else:
            extra = {"checkpoints": {str(e): s for e, s in res.checkpoints.items()}}
        history, n_steps, converged = pd.DataFrame(res.history), res.epochs, res.converged
    state = model_state(net, model, ctx, supervision=supervision, **extra)
    state.update(steps=torch.tensor(n_steps), converged=torch.tensor(converged))
    metrics = {**_evaluate(net, data, supervision), "train.steps": float(n_steps)}
    metrics["train.converged"] = float(converged)
    return FitResult(state, history, metrics)


def _dedupe(steps: list[int], states: list[dict]) -> tuple[list[int], list[dict]]:
    seen: dict[int, dict] = {}
    for s, st in zip(steps, states, strict=True):
        seen[s] = st
    keys = sorted(seen)
    return keys, [seen[k] for k in keys]


def _two_layer_checkpoints(w0, b0, steps, weights, biases) -> dict:
    return {
        "init_weight": w0.detach().clone(),
        "init_bias": b0.detach().clone(),
        "ckpt_steps": torch.tensor(steps),
        "ckpt_weight": torch.stack([w.detach().clone() for w in weights]),
        "ckpt_bias": torch.stack([b.detach().clone() for b in biases]),
    }
