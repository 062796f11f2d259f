"""Minibatch training of pReLU networks (Min & Vidal, ICML 2024), one run or a sweep at once.

What it computes is the official loop (``prelu_f_dist.py`` / ``prelu_mnist.py``): every
epoch a fresh random permutation of the training set, minibatches of ``batch_size`` in
that order (a shorter last batch is kept, like ``DataLoader(shuffle=True)``), one
optimizer step per minibatch on the minibatch mean loss:

* ``loss="exp"``: mean exp(-y f(x)) with f = ``binary_score`` (synthetic study, labels
  y in {-1, +1});
* ``loss="ce"``: cross-entropy of the heads against an int64 class label (MNIST: y mod 2
  for the 2-class task, the digit for the 10-class one);
* ``loss="logistic"``: mean log(1 + exp(-y f(x))) with f = ``binary_score`` (labels in
  {-1, +1}); with two heads read as (+1, -1) it equals the 2-way cross-entropy of those
  heads against the class (y < 0), so one code path serves one- and two-head binary nets;
* ``optimizer="sgd"`` (plain SGD, synthetic: lr 0.2, batch 100) or ``"adam"`` (the formula
  of ``torch.optim.Adam`` with its defaults; MNIST: lr 1e-3, batch 1000).

How. No autograd: the backward pass is written out, so one step costs the two big
products x W^T and g^T x (4 B D h flops) plus a few O(B h) elementwise passes and, for
p > 1, two O(h D) passes (the row norms and a row rescaling of W). With s_j = ||w_j||,
z = x W^T diag(1/s), a = ReLU(z)^p, logits = a (V diag(s))^T, g = dL/dlogits (B, H):

    G_V = g^T a (H, h),   dL/dV = G_V diag(s),   q_j = sum_H (V diag s)_Hj (G_V)_Hj,
    dL/dW = (p g V * ReLU(z)^(p-1))^T x  -  diag((p-1) q / s^2) W

(q_j = sum_i (dL/da * a)_ij, formed from the (H, h) product instead of an (B, h) one; the
second term is the gradient through ||w_j||; with ``normalize_input`` x is the centred,
normalised input and g is scaled by ||x_c||). The SGD step on W is fused into the
product: W <- diag(1 + lr (p-1) q / s^2) W, then ``W.baddbmm_(..., alpha=-lr)`` in place,
so no (h, D) gradient is ever allocated. p = 1 is the plain ReLU net (no norms). A
neuron with w_j = 0 has z_j = 0, so it gets exactly zero gradient and stays at 0.

Precision. ``matmul="bf16"`` computes the two big products (x W^T and g^T x) from
bfloat16 copies of their operands, accumulating in fp32 inside the GEMM, and rounds their
results to bfloat16 too; weights, updates, norms, the p-th powers, the loss and every
other product stay fp32. On CPUs with AVX512-BF16 / AMX that is ~2.2x per step at the
paper's size. The iterates then differ from fp32 training by about bfloat16's resolution
(1e-4 to 5e-3 relative in the tests); the paper-width check in
``benchmarks/check_prelu_synthetic.py --matmul`` finds the same loss, alignment, distances
and robust accuracy as fp32. The default is fp32.

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from ibrobust.models.prelu import PreluNet, safe_inverse
from ibrobust.seeding import torch_generator
from ibrobust.training.exp_loss import exp_margin_loss_grad

LOSSES = ("exp", "ce", "logistic")
MATMULS = ("fp32", "bf16")  # operand precision of the two big products
MARGIN_LOSSES = ("exp", "logistic")  # losses of the binary score y f(x), labels +-1
OPTIMIZERS = ("sgd", "adam")


@dataclass(frozen=True)
class PreluTrainConfig:
    lr: float = 0.2  # official synthetic SGD; MNIST uses Adam with lr 1e-3
    batch_size: int = 100
    epochs: int = 401
    loss: str = "exp"  # "exp" / "logistic" (binary score, labels +-1) or "ce" (heads, int64)
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


@dataclass
class _Spec:
    """What all runs of a sweep share (checked equal across the nets)."""

    p: float
    normalize: bool
    readout: torch.Tensor  # (H,)
    center: torch.Tensor | None  # (D,) or None when all zeros


def _prepare(x: torch.Tensor, spec: _Spec) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Centred (and, with normalisation, unit-norm) inputs and their norms: (S, B, D), (S, B, 1)."""
    xc = x if spec.center is None else x - spec.center
    if not spec.normalize or spec.p == 1:
        return xc, None
    t = torch.linalg.vector_norm(xc, dim=-1, keepdim=True)  # (S, B, 1)
    return xc * safe_inverse(t), t


def _forward(xt, t, w, v, b, p, low=None):
    """Logits (S, B, H) and the pieces the backward pass reuses.

    ``low``: bfloat16 copies (xt, w); then x W^T takes them as operands (fp32
    accumulation), its result is rounded to bfloat16 and widened again, and everything
    after it is fp32."""
    if low is None:
        u = torch.bmm(xt, w.transpose(1, 2))  # (S, B, h)
    else:
        u = torch.bmm(low[0], low[1].transpose(1, 2)).float()
    if p == 1:
        a = torch.relu(u)
        s = inv_s = rp1 = None
        ve = v
    else:
        s = torch.linalg.vector_norm(w, dim=-1)  # (S, h)
        inv_s = safe_inverse(s)
        r = torch.relu_(u.mul_(inv_s.unsqueeze(1)))  # (S, B, h) ReLU(<x, w_j/||w_j||>), in place
        rp1 = r if p == 2 else (r * r if p == 3 else r.pow(p - 1))  # ReLU(z)^(p-1)
        a = rp1 * r  # ReLU(z)^p
        ve = v * s.unsqueeze(1)  # (S, H, h)
    logits = torch.bmm(a, ve.transpose(1, 2))  # (S, B, H)
    if t is not None:
        logits = logits * t
    if b is not None:
        logits = logits + b.unsqueeze(1)
    return logits, (a, s, inv_s, rp1, v, ve)


def _loss_grad(logits, target, readout, loss):
    """(loss (S,), correct (S,), dL/dlogits (S, B, H)) for the minibatch mean loss."""
    if loss in MARGIN_LOSSES:
        m = target * (logits @ readout)  # (S, B) margins y f(x)
        if loss == "exp":
            val, gm = exp_margin_loss_grad(m)  # (S,), (S, B)
        else:
            val = torch.nn.functional.softplus(-m).mean(-1)  # (S,)
            gm = -torch.sigmoid(-m) / m.shape[-1]  # (S, B) d mean softplus(-m) / dm
        g = (gm * target).unsqueeze(-1) * readout  # (S, B, H)
        return val, (m > 0).sum(-1), g
    logp = torch.log_softmax(logits, dim=-1)  # (S, B, H)
    val = -logp.gather(-1, target.unsqueeze(-1)).squeeze(-1).mean(-1)
    g = torch.exp(logp)
    g.scatter_add_(-1, target.unsqueeze(-1), -torch.ones_like(g[..., :1]))
    g = g / target.shape[-1]
    return val, (logits.argmax(-1) == target).sum(-1), g


def _grads(g, t, cache, p):
    """Backward pass: (dL/dV (S,H,h), gz (S,B,h) with dL/dW = gz^T x - c W, c (S,h) | None)."""
    a, s, inv_s, rp1, v, ve = cache
    gt = g if t is None else g * t  # (S, B, H)
    gv = torch.bmm(gt.transpose(1, 2), a)  # (S, H, h) dL/d(V diag s)
    if p == 1:
        return gv, torch.bmm(gt, ve).mul_(a > 0), None  # ReLU'(0) = 0, as autograd
    # q_j = sum_i (dL/da * a)_ij = sum_H (V diag s)_Hj gv_Hj: an (S, H, h) product, not (S, B, h)
    q = (gv * ve).sum(1)  # (S, h)
    # dL/da diag(p / s) = g (V diag(s) diag(p / s)) = p g V: the column scaling is free
    gz = torch.bmm(gt, v * p).mul_(rp1)  # (S, B, h) = dL/da * p ReLU(z)^(p-1) / s
    return gv * s.unsqueeze(1), gz, (p - 1) * q * inv_s.square()


def _low_bmm(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """a @ b with bfloat16 operands and fp32 accumulation, rounded into ``out`` (bfloat16)."""
    return torch.bmm(a.to(torch.bfloat16), b.to(torch.bfloat16), out=out)


class _Adam:
    """The update of torch.optim.Adam (defaults: no weight decay, no amsgrad)."""

    def __init__(self, tensors: list[torch.Tensor], lr: float, betas, eps: float):
        self.lr, (self.b1, self.b2), self.eps, self.t = lr, betas, eps, 0
        self.m = [torch.zeros_like(x) for x in tensors]
        self.v = [torch.zeros_like(x) for x in tensors]

    def step(self, tensors: list[torch.Tensor], grads: list[torch.Tensor]) -> None:
        self.t += 1
        c1, c2 = 1 - self.b1**self.t, 1 - self.b2**self.t
        for x, gr, m, v in zip(tensors, grads, self.m, self.v, strict=True):
            m.lerp_(gr, 1 - self.b1)
            v.mul_(self.b2).addcmul_(gr, gr, value=1 - self.b2)
            denom = (v.sqrt() / math.sqrt(c2)).add_(self.eps)
            x.addcdiv_(m, denom, value=-self.lr / c1)


def _evaluate(x, labels, w, v, b, spec, cfg):
    """Full-set (loss (S,), accuracy (S,)) at the current weights."""
    n = x.shape[1]
    tot = torch.zeros(x.shape[0], dtype=torch.float64)
    cor = torch.zeros(x.shape[0], dtype=torch.float64)
    for lo in range(0, n, cfg.eval_chunk):
        xb, yb = x[:, lo : lo + cfg.eval_chunk], labels[:, lo : lo + cfg.eval_chunk]
        xt, t = _prepare(xb, spec)
        logits, _ = _forward(xt, t, w, v, b, spec.p)
        val, c, _ = _loss_grad(logits, yb, spec.readout, cfg.loss)
        tot += val.double() * yb.shape[1]
        cor += c.double()
    return tot / n, cor / n


def _spec_of(nets: Sequence[PreluNet]) -> _Spec:
    ref = nets[0]
    for i, net in enumerate(nets[1:], 1):
        for name, same in (
            ("p", net.p == ref.p),
            ("normalize_input", net.normalize_input == ref.normalize_input),
            ("readout", torch.equal(net.readout, ref.readout)),
            ("center", torch.equal(net.center, ref.center)),
            ("weight shape", net.weight.shape == ref.weight.shape),
            ("out_weight shape", net.out_weight.shape == ref.out_weight.shape),
            ("out_bias", (net.out_bias is None) == (ref.out_bias is None)),
        ):
            if not same:
                raise ValueError(
                    f"all nets of a sweep must share {name}; net {i} differs from net 0"
                )
    center = None if not bool(ref.center.any()) else ref.center.detach()
    return _Spec(ref.p, ref.normalize_input, ref.readout.detach(), center)


def _check_labels(labels: torch.Tensor, loss: str, heads: int) -> None:
    if loss in MARGIN_LOSSES:
        if not labels.is_floating_point() or not bool(((labels == 1) | (labels == -1)).all()):
            raise ValueError(
                f"loss {loss!r} needs float labels in {{-1, +1}}, got dtype {labels.dtype}"
            )
    else:
        if labels.dtype != torch.int64:
            raise ValueError(f"loss 'ce' needs int64 class labels, got dtype {labels.dtype}")
        if bool((labels < 0).any()) or bool((labels >= heads).any()):
            raise ValueError(f"loss 'ce' needs labels in [0, {heads}) (one per head)")


def _train_stacked(
    nets: Sequence[PreluNet],
    x: torch.Tensor,
    labels: torch.Tensor,
    cfg: PreluTrainConfig,
    seeds: Sequence[int],
    on_epoch: Callable[[dict], None] | None,
    sweep: bool,
) -> list[PreluTrainResult]:
    spec = _spec_of(nets)
    n_runs = len(nets)
    if x.ndim != 3 or x.shape[0] != n_runs or x.shape[2] != nets[0].weight.shape[1]:
        raise ValueError(
            f"x must be (S={n_runs}, n, D={nets[0].weight.shape[1]}), got {tuple(x.shape)}"
        )
    if labels.shape != x.shape[:2]:
        raise ValueError(f"labels must be (S, n)={tuple(x.shape[:2])}, got {tuple(labels.shape)}")
    if len(seeds) != n_runs:
        raise ValueError(f"need one seed per run: {n_runs} nets, {len(seeds)} seeds")
    _check_labels(labels, cfg.loss, nets[0].heads)
    dt = x.dtype
    labels = labels.to(dt) if cfg.loss in MARGIN_LOSSES else labels
    readout = spec.readout.to(dt)
    spec.readout = readout
    if spec.center is not None:
        spec.center = spec.center.to(dt)
    w = torch.stack([net.weight.detach().to(dt) for net in nets]).contiguous()  # (S, h, D)
    v = torch.stack([net.out_weight.detach().to(dt) for net in nets]).contiguous()  # (S, H, h)
    has_b = nets[0].out_bias is not None
    b = torch.stack([net.out_bias.detach().to(dt) for net in nets]) if has_b else None  # (S, H)
    gens = [torch_generator(int(sd), "prelu", "shuffle") for sd in seeds]
    n, bs, p, lr = x.shape[1], cfg.batch_size, spec.p, cfg.lr
    # rows are gathered with one index_select on a flat (S n, D) view (advanced indexing
    # x[runs, idx] was ~20% of a step at D = 200); expanded (shared) data is not copied
    run_offsets = (torch.arange(n_runs) * n).unsqueeze(1)  # (S, 1)
    x_shared, y_shared = x.stride(0) == 0, labels.stride(0) == 0
    x_rows = x[0] if x_shared else x.reshape(n_runs * n, x.shape[2])  # (n | S n, D)
    y_rows = labels[0] if y_shared else labels.reshape(-1)  # (n | S n,)
    x_off, y_off = (0 if x_shared else run_offsets), (0 if y_shared else run_offsets)
    tensors = [w, v] + ([b] if has_b else [])
    low = cfg.matmul == "bf16"
    if low and dt != torch.float32:
        raise ValueError(f"matmul='bf16' trains fp32 weights; got data of dtype {dt}")
    # bfloat16 copies of W and of its gradient product, allocated once: a fresh (S, h, D)
    # buffer per step costs more in page faults than the conversion itself
    w_lp = torch.empty_like(w, dtype=torch.bfloat16) if low else None
    gw_lp = torch.empty_like(w, dtype=torch.bfloat16) if low else None
    adam = _Adam(tensors, lr, cfg.betas, cfg.adam_eps) if cfg.optimizer == "adam" else None
    histories: list[list[dict]] = [[] for _ in range(n_runs)]
    steps = 0

    def emit(recs: list[dict]) -> None:
        for s, rec in enumerate(recs):
            if sweep:
                rec = {"run": s, **rec}
            histories[s].append(rec)
            if on_epoch is not None:
                on_epoch(rec)

    def full_eval(epoch: int) -> list[dict]:
        lo, ac = _evaluate(x, labels, w, v, b, spec, cfg)
        return [{"full_loss": float(a), "full_acc": float(c)} for a, c in zip(lo, ac, strict=True)]

    if cfg.eval_every:
        emit([{"epoch": 0, **r} for r in full_eval(0)])
    for epoch in range(1, cfg.epochs + 1):
        perm = torch.stack([torch.randperm(n, generator=g) for g in gens])  # (S, n)
        loss_sum = torch.zeros(n_runs, dtype=torch.float64)
        correct = torch.zeros(n_runs, dtype=torch.float64)
        for lo in range(0, n, bs):
            idx = perm[:, lo : lo + bs]  # (S, B)
            xb = x_rows.index_select(0, (idx + x_off).reshape(-1)).view(n_runs, -1, x.shape[2])
            yb = y_rows.index_select(0, (idx + y_off).reshape(-1)).view(n_runs, -1)  # (S, B)
            xt, t = _prepare(xb, spec)
            if low:  # the step's bfloat16 operands, converted once
                w_lp.copy_(w)
                xt_lp = xt.to(torch.bfloat16)
            logits, cache = _forward(xt, t, w, v, b, p, (xt_lp, w_lp) if low else None)
            val, cor, g = _loss_grad(logits, yb, readout, cfg.loss)
            loss_sum.add_(val, alpha=idx.shape[1])  # float64 accumulators
            correct.add_(cor)
            gv, gz, c = _grads(g, t, cache, p)
            gb = g.sum(1) if has_b else None  # (S, H)
            if adam is None:
                v.sub_(gv, alpha=lr)
                if has_b:
                    b.sub_(gb, alpha=lr)
                if c is not None:
                    w.mul_((1 + lr * c).unsqueeze(-1))  # the ||w_j|| term, along w_j
                if low:  # the product in bfloat16, the update in fp32
                    w.sub_(_low_bmm(gz.transpose(1, 2), xt_lp, gw_lp), alpha=lr)
                else:
                    w.baddbmm_(gz.transpose(1, 2), xt, alpha=-lr)  # (S, h, D), fused update
            else:
                if low:
                    gw = _low_bmm(gz.transpose(1, 2), xt_lp, gw_lp).float()
                else:
                    gw = torch.bmm(gz.transpose(1, 2), xt)  # (S, h, D)
                if c is not None:
                    gw.sub_(c.unsqueeze(-1) * w)
                adam.step(tensors, [gw, gv] + ([gb] if has_b else []))
            steps += 1
        bad = ~torch.isfinite(loss_sum)
        if bool(bad.any()):
            run = int(bad.nonzero()[0])
            raise FloatingPointError(
                f"training diverged in run {run} (seed {seeds[run]}) at epoch {epoch}: "
                f"non-finite loss; lower lr={lr}"
            )
        recs = [
            {"epoch": epoch, "loss": float(ls / n), "acc": float(cr / n)}
            for ls, cr in zip(loss_sum, correct, strict=True)
        ]
        if cfg.eval_every and (epoch % cfg.eval_every == 0 or epoch == cfg.epochs):
            recs = [{**r, **e} for r, e in zip(recs, full_eval(epoch), strict=True)]
        emit(recs)

    results = []
    for s, net in enumerate(nets):
        out = PreluNet(
            w[s].clone(),
            v[s].clone(),
            net.readout.detach().to(dt),
            net.p,
            out_bias=None if b is None else b[s].clone(),
            center=net.center.detach().to(dt),
            normalize_input=net.normalize_input,
        )
        results.append(PreluTrainResult(model=out, history=histories[s], steps=steps))
    return results


def train_prelu(
    net: PreluNet,
    x: torch.Tensor,
    labels: torch.Tensor,
    cfg: PreluTrainConfig,
    seed: int,
    on_epoch: Callable[[dict], None] | None = None,
) -> PreluTrainResult:
    """Train a copy of ``net`` on x (n, D), labels (n,) (float +-1 for "exp" / "logistic",
    int64 for "ce").

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
