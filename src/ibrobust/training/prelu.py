"""Minibatch training of pReLU networks (Min & Vidal, ICML 2024), one run or a sweep at once.

What it computes is the official loop (``prelu_f_dist.py`` / ``prelu_mnist.py``): every
epoch a fresh random permutation of the training set, minibatches of ``batch_size`` in
that order (a shorter last batch is kept, like ``DataLoader(shuffle=True)``), one
optimizer step per minibatch on the minibatch mean loss:

* ``loss="exponential"``: mean exp(-y f(x)) with f = ``binary_score`` (synthetic study, labels
  y in {-1, +1});
* ``loss="cross_entropy"``: cross-entropy of the heads against an int64 class label (MNIST: y mod 2
  for the 2-class task, the digit for the 10-class one);
* ``loss="logistic"``: mean log(1 + exp(-y f(x))) with f = ``binary_score`` (labels in
  {-1, +1}); with two heads read as (+1, -1) it equals the 2-way cross-entropy of those
  heads against the class (y < 0), so one code path serves one- and two-head binary nets;
* ``optimizer="sgd"`` (plain SGD, synthetic: lr 0.2, batch 100) or ``"adam"`` (the formula
  of ``torch.optim.Adam`` with its defaults; MNIST: lr 1e-3, batch 1000).

The kernels (forward, loss, written-out backward, Adam, evaluation) and how they are
computed and at which precision: :mod:`ibrobust.training.prelu_kernels`.

Sweeps. ``train_prelu_sweep`` trains S runs (e.g. alphas x seeds at one p) as one tensor
program: weights (S, h, D), data (S, n, D), batched products. Run s uses its own seed's
shuffling stream, so its iterates are those of ``train_prelu`` on run s alone (same
formulas, batched; equal up to floating-point summation order). ``train_prelu`` is the
S = 1 case of the same code.

Logging. After each epoch ``on_epoch(record)`` receives
``{"epoch", "loss", "acc"}`` (+ ``"run"`` in a sweep): the mean loss and accuracy of
the epoch's minibatches, each evaluated just before its own step (free: the training
forward computes them). ``eval_every = k > 0`` adds the exact full-training-set
``"full_loss"`` / ``"full_acc"`` at epochs 0, k, 2k, ... and the last one (one extra
forward pass over the training set each time). A non-finite loss raises
``FloatingPointError`` at the end of the epoch, naming the run and the epoch.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from ibrobust.data.dataset import Dataset
from ibrobust.device import resolve_device
from ibrobust.models.prelu import PreluNet
from ibrobust.seeding import torch_generator
from ibrobust.training.losses import TRAINING_LOSSES, training_loss
from ibrobust.training.prelu_kernels import (
    MARGIN_LOSSES,
    Adam,
    Spec,
    check_labels,
    evaluate,
    forward,
    grads,
    loss_grad,
    low_bmm,
    prepare,
    spec_of,
)
from ibrobust.training.protocol import Fitted, OnLog

LOSSES = TRAINING_LOSSES  # ibrobust.training.losses: one set of loss names
MATMULS = ("fp32", "bf16")  # operand precision of the two big products
OPTIMIZERS = ("sgd", "adam")


@dataclass(frozen=True)
class PreluTrainConfig:
    lr: float = 0.2  # official synthetic SGD; MNIST uses Adam with lr 1e-3
    batch_size: int = 100
    epochs: int = 401
    loss: str = "exponential"  # or "logistic" (binary score, labels +-1), "cross_entropy" (heads)
    optimizer: str = "sgd"  # "sgd" or "adam"
    betas: tuple[float, float] = (0.9, 0.999)  # Adam only (torch defaults)
    adam_eps: float = 1e-8  # Adam only (torch default)
    eval_every: int = 0  # full-training-set loss/accuracy every k epochs; 0 = never
    eval_chunk: int = 4096  # rows per forward in the full-set evaluation
    matmul: str = "fp32"  # "bf16": the two big products take bfloat16 operands (see module doc)

    def __post_init__(self) -> None:
        if not (math.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"lr must be finite and > 0, got {self.lr}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")
        if self.epochs < 0:
            raise ValueError(f"epochs must be >= 0, got {self.epochs}")
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {self.loss!r}")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}")
        if len(self.betas) != 2 or not all(0 <= b < 1 for b in self.betas):
            raise ValueError(f"betas must be two numbers in [0, 1), got {self.betas}")
        if not self.adam_eps > 0:
            raise ValueError(f"adam_eps must be > 0, got {self.adam_eps}")
        if self.matmul not in MATMULS:
            raise ValueError(f"matmul must be one of {MATMULS}, got {self.matmul!r}")
        if self.eval_every < 0 or self.eval_chunk < 1:
            raise ValueError(
                f"eval_every must be >= 0 and eval_chunk >= 1, got {self.eval_every}, {self.eval_chunk}"
            )


@dataclass
class PreluTrainResult:
    model: PreluNet  # trained copy (the input net is not modified)
    history: list[dict] = field(default_factory=list)  # one record per epoch, see module doc
    steps: int = 0  # optimizer steps taken


def _check_shapes(nets, x, labels, seeds) -> None:
    n_runs = len(nets)
    if x.ndim != 3 or x.shape[0] != n_runs or x.shape[2] != nets[0].weight.shape[1]:
        raise ValueError(
            f"x must be (S={n_runs}, n, D={nets[0].weight.shape[1]}), got {tuple(x.shape)}"
        )
    if labels.shape != x.shape[:2]:
        raise ValueError(f"labels must be (S, n)={tuple(x.shape[:2])}, got {tuple(labels.shape)}")
    if len(seeds) != n_runs:
        raise ValueError(f"need one seed per run: {n_runs} nets, {len(seeds)} seeds")


class _Stack:
    """The S runs' weights, data views, shuffling streams and optimizer state."""

    def __init__(self, nets, x, labels, cfg: PreluTrainConfig, seeds, spec: Spec) -> None:
        dt = x.dtype
        self.cfg, self.spec, self.seeds, self.x = cfg, spec, seeds, x
        self.labels = labels.to(dt) if cfg.loss in MARGIN_LOSSES else labels
        spec.readout = spec.readout.to(dt)
        if spec.center is not None:
            spec.center = spec.center.to(dt)
        self.w = torch.stack([net.weight.detach().to(dt) for net in nets]).contiguous()  # (S, h, D)
        self.v = torch.stack(
            [net.out_weight.detach().to(dt) for net in nets]
        ).contiguous()  # (S, H, h)
        self.has_b = nets[0].out_bias is not None
        self.b = (
            torch.stack([net.out_bias.detach().to(dt) for net in nets]) if self.has_b else None
        )  # (S, H)
        self.gens = [torch_generator(int(sd), "prelu", "shuffle") for sd in seeds]
        self.n_runs, self.n = len(nets), x.shape[1]
        # rows are gathered with one index_select on a flat (S n, D) view (advanced indexing
        # x[runs, idx] was ~20% of a step at D = 200); expanded (shared) data is not copied
        run_offsets = (torch.arange(self.n_runs, device=x.device) * self.n).unsqueeze(1)  # (S, 1)
        x_shared, y_shared = x.stride(0) == 0, self.labels.stride(0) == 0
        self.x_rows = x[0] if x_shared else x.reshape(self.n_runs * self.n, x.shape[2])
        self.y_rows = self.labels[0] if y_shared else self.labels.reshape(-1)  # (n | S n,)
        self.x_off = 0 if x_shared else run_offsets
        self.y_off = 0 if y_shared else run_offsets
        self.tensors = [self.w, self.v] + ([self.b] if self.has_b else [])
        self.low = cfg.matmul == "bf16"
        if self.low and dt != torch.float32:
            raise ValueError(f"matmul='bf16' trains fp32 weights; got data of dtype {dt}")
        # bfloat16 copies of W and of its gradient product, allocated once: a fresh (S, h, D)
        # buffer per step costs more in page faults than the conversion itself
        self.w_lp = torch.empty_like(self.w, dtype=torch.bfloat16) if self.low else None
        self.gw_lp = torch.empty_like(self.w, dtype=torch.bfloat16) if self.low else None
        self.adam = (
            Adam(self.tensors, cfg.lr, cfg.betas, cfg.adam_eps) if cfg.optimizer == "adam" else None
        )
        self.steps = 0

    def full_eval(self) -> list[dict]:
        lo, ac = evaluate(self.x, self.labels, self.w, self.v, self.b, self.spec, self.cfg)
        return [{"full_loss": float(a), "full_acc": float(c)} for a, c in zip(lo, ac, strict=True)]

    def epoch(self, epoch: int) -> list[dict]:
        """One pass of minibatches in a fresh permutation per run; the epoch's records."""
        n, n_runs = self.n, self.n_runs
        # the draws on the generators' CPU, moved: the same orders on every device
        perm = torch.stack([torch.randperm(n, generator=g) for g in self.gens]).to(self.x.device)
        loss_sum = torch.zeros(n_runs, dtype=torch.float64, device=self.x.device)  # (S,)
        correct = torch.zeros(n_runs, dtype=torch.float64, device=self.x.device)
        for lo in range(0, n, self.cfg.batch_size):
            idx = perm[:, lo : lo + self.cfg.batch_size]  # (S, B)
            val, cor = self.step(idx)
            loss_sum.add_(val, alpha=idx.shape[1])  # float64 accumulators
            correct.add_(cor)
        bad = ~torch.isfinite(loss_sum)
        if bool(bad.any()):
            run = int(bad.nonzero()[0])
            raise FloatingPointError(
                f"training diverged in run {run} (seed {self.seeds[run]}) at epoch {epoch}: "
                f"non-finite loss; lower lr={self.cfg.lr}"
            )
        return [
            {"epoch": epoch, "loss": float(ls / n), "acc": float(cr / n)}
            for ls, cr in zip(loss_sum, correct, strict=True)
        ]

    def step(self, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One optimizer step on the minibatch rows ``idx`` (S, B); its (loss, correct)."""
        n_runs, d = self.n_runs, self.x.shape[2]
        xb = self.x_rows.index_select(0, (idx + self.x_off).reshape(-1)).view(n_runs, -1, d)
        yb = self.y_rows.index_select(0, (idx + self.y_off).reshape(-1)).view(n_runs, -1)
        xt, t = prepare(xb, self.spec)
        xt_lp = None
        if self.low:  # the step's bfloat16 operands, converted once
            self.w_lp.copy_(self.w)
            xt_lp = xt.to(torch.bfloat16)
        low = (xt_lp, self.w_lp) if self.low else None
        logits, cache = forward(xt, t, self.w, self.v, self.b, self.spec.p, low)
        val, cor, g = loss_grad(logits, yb, self.spec.readout, self.cfg.loss)
        gv, gz, c = grads(g, t, cache, self.spec.p)
        gb = g.sum(1) if self.has_b else None  # (S, H)
        if self.adam is None:
            self._sgd(xt, xt_lp, gv, gz, c, gb)
        else:
            if self.low:
                gw = low_bmm(gz.transpose(1, 2), xt_lp, self.gw_lp).float()
            else:
                gw = torch.bmm(gz.transpose(1, 2), xt)  # (S, h, D)
            if c is not None:
                gw.sub_(c.unsqueeze(-1) * self.w)
            self.adam.step(self.tensors, [gw, gv] + ([gb] if self.has_b else []))
        self.steps += 1
        return val, cor

    def _sgd(self, xt, xt_lp, gv, gz, c, gb) -> None:
        lr, w = self.cfg.lr, self.w
        self.v.sub_(gv, alpha=lr)
        if self.has_b:
            self.b.sub_(gb, alpha=lr)
        if c is not None:
            w.mul_((1 + lr * c).unsqueeze(-1))  # the ||w_j|| term, along w_j
        if self.low:  # the product in bfloat16, the update in fp32
            w.sub_(low_bmm(gz.transpose(1, 2), xt_lp, self.gw_lp), alpha=lr)
        else:
            w.baddbmm_(gz.transpose(1, 2), xt, alpha=-lr)  # (S, h, D), fused update

    def results(self, nets, histories) -> list[PreluTrainResult]:
        dt, b = self.x.dtype, self.b
        results = []
        for s, net in enumerate(nets):
            out = PreluNet(
                self.w[s].clone(),
                self.v[s].clone(),
                net.readout.detach().to(dt),
                net.p,
                out_bias=None if b is None else b[s].clone(),
                center=net.center.detach().to(dt),
                normalize_input=net.normalize_input,
            )
            results.append(PreluTrainResult(model=out, history=histories[s], steps=self.steps))
        return results


def _train_stacked(
    nets: Sequence[PreluNet],
    x: torch.Tensor,
    labels: torch.Tensor,
    cfg: PreluTrainConfig,
    seeds: Sequence[int],
    on_epoch: Callable[[dict], None] | None,
    sweep: bool,
) -> list[PreluTrainResult]:
    spec = spec_of(nets)
    _check_shapes(nets, x, labels, seeds)
    check_labels(labels, cfg.loss, nets[0].heads)
    stack = _Stack(nets, x, labels, cfg, seeds, spec)
    histories: list[list[dict]] = [[] for _ in nets]

    def emit(recs: list[dict]) -> None:
        for s, rec in enumerate(recs):
            if sweep:
                rec = {"run": s, **rec}
            histories[s].append(rec)
            if on_epoch is not None:
                on_epoch(rec)

    if cfg.eval_every:
        emit([{"epoch": 0, **r} for r in stack.full_eval()])
    for epoch in range(1, cfg.epochs + 1):
        recs = stack.epoch(epoch)
        if cfg.eval_every and (epoch % cfg.eval_every == 0 or epoch == cfg.epochs):
            recs = [{**r, **e} for r, e in zip(recs, stack.full_eval(), strict=True)]
        emit(recs)
    return stack.results(nets, histories)


def train_prelu(
    net: PreluNet,
    x: torch.Tensor,
    labels: torch.Tensor,
    cfg: PreluTrainConfig,
    seed: int,
    on_epoch: Callable[[dict], None] | None = None,
) -> PreluTrainResult:
    """Train a copy of ``net`` on x (n, D), labels (n,) (float +-1 for "exponential" /
    "logistic", int64 for "cross_entropy").

    ``seed`` selects the shuffling stream ``(seed, "prelu", "shuffle")``; the weights
    start from ``net`` (see :func:`ibrobust.models.prelu.init_prelu`).
    """
    if x.ndim != 2:
        raise ValueError(f"x must be (n, D), got {tuple(x.shape)}")
    return _train_stacked(
        [net], x.unsqueeze(0), labels.unsqueeze(0), cfg, [seed], on_epoch, sweep=False
    )[0]


def train_prelu_sweep(
    nets: Sequence[PreluNet],
    x: torch.Tensor,
    labels: torch.Tensor,
    cfg: PreluTrainConfig,
    seeds: Sequence[int],
    on_epoch: Callable[[dict], None] | None = None,
) -> list[PreluTrainResult]:
    """Train S nets at once: x (S, n, D), labels (S, n), one shuffling seed per run.

    Result s equals ``train_prelu(nets[s], x[s], labels[s], cfg, seeds[s])`` (up to
    summation order). The nets must share p, normalize_input, readout, center and
    shapes. For data shared by all runs pass ``x.expand(S, n, D)`` (no copy).
    """
    if len(nets) == 0:
        raise ValueError("nets must not be empty")
    return _train_stacked(list(nets), x, labels, cfg, list(seeds), on_epoch, sweep=True)


def prelu_train_fields(opt: Mapping[str, Any], supervision: str) -> dict[str, Any]:
    """PreluTrainConfig fields of an ``optimizers`` entry of kind sgd or adam (the ``prelu``
    training path; the pReLU model kind's ``trainers`` say which entries take it; the loop's
    :data:`OPTIMIZERS` are its own update rules): the loss of the supervision
    (:func:`ibrobust.training.losses.training_loss`). PreluTrainConfig refuses any other."""
    name = training_loss(supervision, opt.get("loss", "auto"))
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


def fit_path(
    net: PreluNet,
    data: Dataset,
    supervision: str,
    optimizer: Mapping[str, Any],
    seed: int,
    on_log: OnLog | None = None,
    device: str | None = None,
) -> Fitted:
    """The ``prelu`` training path (:class:`ibrobust.training.protocol.Trainer`): the fast
    loop on the flattened inputs, on ``device`` (the config key,
    :func:`ibrobust.device.resolve_device`: the net and the data move there once, the state
    comes back on the CPU); history rows every ``log_every`` epochs and at the last one, with
    the seconds since the start."""
    dev = resolve_device(device)
    tr = data.train.to(dev)
    fields = prelu_train_fields(optimizer, supervision)
    fields.setdefault("batch_size", len(tr))  # batch_size null = the full batch
    cfg = PreluTrainConfig(**fields)
    labels = tr.fine if cfg.loss == "cross_entropy" else tr.y
    every = int(optimizer.get("log_every", 1))
    history: list[dict] = []
    t0 = time.monotonic()

    def on_epoch(rec: dict) -> None:
        if rec["epoch"] % every and rec["epoch"] != cfg.epochs:
            return
        rec = {**rec, "seconds": time.monotonic() - t0}
        history.append(rec)
        if on_log is not None:
            on_log(rec)

    net.to(dev)
    try:
        res = train_prelu(net, tr.x.flatten(1), labels, cfg, seed, on_epoch=on_epoch)
    finally:
        net.to("cpu")
    state = {k: v.cpu() for k, v in res.model.state_dict().items()}
    return Fitted(state, history, cfg.epochs, converged=False)
