"""The tensor kernels of :mod:`ibrobust.training.prelu`: forward, loss, written-out
backward, the Adam update and the full-set evaluation, batched over S runs.

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
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ibrobust.models.prelu import PreluNet, safe_inverse
from ibrobust.training.exp_loss import exp_margin_loss_grad
from ibrobust.training.losses import BINARY_LOSSES

MARGIN_LOSSES = BINARY_LOSSES  # losses of the binary score y f(x), labels +-1


@dataclass
class Spec:
    """What all runs of a sweep share (checked equal across the nets)."""

    p: float
    normalize: bool
    readout: torch.Tensor  # (H,)
    center: torch.Tensor | None  # (D,) or None when all zeros


def prepare(x: torch.Tensor, spec: Spec) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Centred (and, with normalisation, unit-norm) inputs and their norms: (S, B, D), (S, B, 1)."""
    xc = x if spec.center is None else x - spec.center
    if not spec.normalize or spec.p == 1:
        return xc, None
    t = torch.linalg.vector_norm(xc, dim=-1, keepdim=True)  # (S, B, 1)
    return xc * safe_inverse(t), t


def forward(xt, t, w, v, b, p, low=None):
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


def loss_grad(logits, target, readout, loss):
    """(loss (S,), correct (S,), dL/dlogits (S, B, H)) for the minibatch mean loss."""
    if loss in MARGIN_LOSSES:
        m = target * (logits @ readout)  # (S, B) margins y f(x)
        if loss == "exponential":
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


def grads(g, t, cache, p):
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


def low_bmm(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """a @ b with bfloat16 operands and fp32 accumulation, rounded into ``out`` (bfloat16)."""
    return torch.bmm(a.to(torch.bfloat16), b.to(torch.bfloat16), out=out)


class Adam:
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


def evaluate(x, labels, w, v, b, spec, cfg):
    """Full-set (loss (S,), accuracy (S,)) at the current weights."""
    n = x.shape[1]
    tot = torch.zeros(x.shape[0], dtype=torch.float64, device=x.device)
    cor = torch.zeros(x.shape[0], dtype=torch.float64, device=x.device)
    for lo in range(0, n, cfg.eval_chunk):
        xb, yb = x[:, lo : lo + cfg.eval_chunk], labels[:, lo : lo + cfg.eval_chunk]
        xt, t = prepare(xb, spec)
        logits, _ = forward(xt, t, w, v, b, spec.p)
        val, c, _ = loss_grad(logits, yb, spec.readout, cfg.loss)
        tot += val.double() * yb.shape[1]
        cor += c.double()
    return tot / n, cor / n


def spec_of(nets: Sequence[PreluNet]) -> Spec:
    """What the nets of a sweep share (ValueError naming the first that differs)."""
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
    return Spec(ref.p, ref.normalize_input, ref.readout.detach(), center)


def check_labels(labels: torch.Tensor, loss: str, heads: int) -> None:
    if loss in MARGIN_LOSSES:
        if not labels.is_floating_point() or not bool(((labels == 1) | (labels == -1)).all()):
            raise ValueError(
                f"loss {loss!r} needs float labels in {{-1, +1}}, got dtype {labels.dtype}"
            )
    else:
        if labels.dtype != torch.int64:
            raise ValueError(
                f"loss 'cross_entropy' needs int64 class labels, got dtype {labels.dtype}"
            )
        if bool((labels < 0).any()) or bool((labels >= heads).any()):
            raise ValueError(f"loss 'cross_entropy' needs labels in [0, {heads}) (one per head)")
