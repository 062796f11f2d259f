"""Margins of a homogeneous classifier and the cross-entropy loss in log space (Lyu & Li, 2020).

For logits f (n, k) and labels y (n,), the logit differences are d_nj = f_ny - f_nj and

* q_n = min_{j != y_n} d_nj, the margin of example n; q_min = min_n q_n;
* rho = ||theta||_2 over every parameter of the net;
* normalized margin gamma = q_min / rho^L for an L-homogeneous net (= q_min(theta / rho));
* cross-entropy CE_n = log(1 + sum_{j != y} exp(-d_nj)) = softplus(z_n) with
  z_n = logsumexp_{j != y}(-d_nj); the training loss is the mean L = (1/N) sum_n CE_n.

Everything is kept in log space so that nothing underflows however small the loss gets
(the paper reaches L = 10^-881.5, far below float64's 1e-308): :func:`log_ce` gives
log CE_n from z_n without ever forming CE_n, and log L = logsumexp_n(log CE_n) - log N.

Smoothed normalized margin. For the logistic loss l(q) = log(1 + e^-q), l^-1(u) =
-log(e^u - 1); Lyu & Li's smoothed margin is gamma~ = l^-1(L_sum) / rho^L with L_sum =
sum_n CE_n (the theorem's L is a sum), i.e. gamma~ = -log(expm1(L_sum)) / rho^L, which is
the seeds' rho^-L log(1 / L_sum) up to O(L_sum). Since CE_n >= log(1 + e^{-q_n}),
L_sum >= l(q_min), so gamma~ <= gamma always (a property the tests check); and under
gradient flow gamma~ is non-decreasing once the data is fit (L_sum < log 2).
"""

from __future__ import annotations

import copy
import math
from dataclasses import asdict, dataclass

import torch
from torch import nn

LOG10 = math.log(10.0)
_SOFTPLUS_SWITCH = -30.0  # below it log(softplus(z)) = z - e^z / 2 + O(e^2z), error < 1e-26


def logit_differences(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """(n, k) logits, (n,) int labels -> (n, k) d_nj = f_ny - f_nj in float64 (d_ny = +inf)."""
    f = logits.to(torch.float64)
    d = f.gather(1, y[:, None]) - f  # (n, k)
    return d.scatter(1, y[:, None], float("inf"))


def margins(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """(n,) q_n = f_y - max_{j != y} f_j in float64."""
    return logit_differences(logits, y).amin(dim=1)


def log_softplus(z: torch.Tensor) -> torch.Tensor:
    """log(log(1 + e^z)) elementwise, finite for every finite z (and differentiable)."""
    low = z < _SOFTPLUS_SWITCH
    z_hi = torch.where(low, torch.zeros_like(z), z)  # keep the unused branch's gradient finite
    z_lo = torch.where(low, z, torch.full_like(z, _SOFTPLUS_SWITCH))
    hi = torch.log(nn.functional.softplus(z_hi))
    lo = z_lo - 0.5 * torch.exp(z_lo)
    return torch.where(low, lo, hi)


def log_ce(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """(n,) log CE_n, the log of each example's cross-entropy, in float64 (never underflows)."""
    z = torch.logsumexp(-logit_differences(logits, y), dim=1)  # (n,) log sum_{j != y} e^-d
    return log_softplus(z)


def log_mean_loss(log_terms: torch.Tensor) -> torch.Tensor:
    """log((1/n) sum_n e^{log_terms_n}): the log of the mean loss (a scalar)."""
    return torch.logsumexp(log_terms, dim=0) - math.log(log_terms.numel())


def log_expm1_exp(log_u: float) -> float:
    """log(e^u - 1) for u = e^{log_u} > 0, without overflow or underflow of u."""
    if log_u < -20.0:
        return log_u + 0.5 * math.exp(log_u)  # log(u + u^2/2 + ...) = log u + u/2 + O(u^2)
    u = math.exp(log_u)
    if u > 700.0:
        return u  # log(e^u - 1) = u - e^-u
    return math.log(math.expm1(u))


def param_norm(net: nn.Module) -> float:
    """rho = ||theta||_2 over all parameters (float64 accumulation)."""
    return math.sqrt(sum(float(p.detach().double().pow(2).sum()) for p in net.parameters()))


@dataclass(frozen=True)
class MarginStats:
    """What the paper tracks per epoch, for one net on one training set."""

    log10_loss: float  # log10 of the mean cross-entropy L
    q_min: float  # min_n (f_y - max_{j != y} f_j)
    rho: float  # ||theta||_2
    normalized_margin: float  # q_min / rho^L (negative while the data is not fit)
    log10_normalized_margin: float | None  # log10 of it when q_min > 0
    smoothed_normalized_margin: float  # -log(expm1(L_sum)) / rho^L
    accuracy: float  # training accuracy (argmax == y)

    def as_dict(self) -> dict:
        return asdict(self)


def stats_from_logits(
    logits: torch.Tensor, y: torch.Tensor, rho: float, degree: int
) -> MarginStats:
    """:class:`MarginStats` from the (n, k) logits of the whole training set."""
    if degree < 1:
        raise ValueError(f"homogeneity degree must be >= 1, got {degree!r}")
    lce = log_ce(logits, y)  # (n,)
    log_sum = float(torch.logsumexp(lce, dim=0))
    log_mean = log_sum - math.log(lce.numel())
    q = margins(logits, y)
    q_min = float(q.min())
    log_rho_l = degree * math.log(rho)
    norm_margin = q_min * math.exp(-log_rho_l)
    log10_norm = (math.log(q_min) - log_rho_l) / LOG10 if q_min > 0 else None
    smoothed = -log_expm1_exp(log_sum) * math.exp(-log_rho_l)
    return MarginStats(
        log10_loss=log_mean / LOG10,
        q_min=q_min,
        rho=rho,
        normalized_margin=norm_margin,
        log10_normalized_margin=log10_norm,
        smoothed_normalized_margin=smoothed,
        accuracy=float((q > 0).double().mean()),
    )


def kkt_residual(net: nn.Module, x: torch.Tensor, y: torch.Tensor, batch_size: int = 1000) -> float:
    """1 - cos(theta, -grad_theta L) on the whole of (x (n, *s), y (n,)): 0 exactly when the
    parameters point along the loss's descent direction.

    Why this is a KKT residual of the max-margin problem min (1/2) ||theta||^2 s.t.
    d_nj(theta) >= 1 (every logit difference d_nj = f_{y_n} - f_j, j != y_n): the loss's
    gradient is -grad L = sum_{n, j} lambda_nj grad d_nj with lambda_nj >= 0 (softmax weights /
    n), so theta parallel to -grad L is the stationarity condition theta = sum c lambda_nj
    grad d_nj with multipliers c lambda_nj, c > 0 (Lyu & Li 2020, Sec. 4: the limit direction
    satisfies it; complementary slackness is not measured here). Computed in float64 on a float64 copy
    of the net, from grad log L = grad L / L (the same direction; nothing underflows however
    small L is), in batches of ``batch_size``: log L = logsumexp_n(log CE_n) - log n, so
    grad log L = sum_n w_n grad log CE_n with w = softmax(log CE) (no grad through w).
    Returned as ||theta^ - g^||^2 / 2 with unit vectors theta^, g^, which equals 1 - cos
    but keeps its digits when cos is within 1e-16 of 1."""
    net64 = copy.deepcopy(net).double().eval()
    params = [p for p in net64.parameters() if p.requires_grad]
    x64 = x.to(torch.float64)
    batches = [slice(i, i + batch_size) for i in range(0, len(x64), batch_size)]
    with torch.no_grad():  # (n,) log CE_n, then the weights of grad log L
        lce = torch.cat([log_ce(net64(x64[b]), y[b]) for b in batches])
        w = torch.softmax(lce, dim=0)  # (n,)
    grads = [torch.zeros_like(p) for p in params]
    for b in batches:
        part = (w[b] * log_ce(net64(x64[b]), y[b])).sum()  # its grad: this batch's share
        for g, d in zip(grads, torch.autograd.grad(part, params), strict=True):
            g += d
    theta = torch.cat([p.detach().reshape(-1) for p in params])
    descent = -torch.cat([g.reshape(-1) for g in grads])  # -grad log L
    tn, dn = theta.norm(), descent.norm()
    if not (tn > 0 and dn > 0):
        return math.nan  # zero parameters or a zero gradient: no direction to compare
    return float(0.5 * (theta / tn - descent / dn).pow(2).sum())


@torch.no_grad()
def eval_logits(net: nn.Module, x: torch.Tensor, batch_size: int = 1000) -> torch.Tensor:
    """(n, k) logits of ``net`` on ``x`` in batches, inputs cast to the net's dtype."""
    dtype = next(net.parameters()).dtype
    return torch.cat([net(x[i : i + batch_size].to(dtype)) for i in range(0, len(x), batch_size)])


def homogeneity_degree(net: nn.Module) -> int | None:
    """L with f(c theta) = c^L f(theta) for the nets known to be homogeneous, else None.

    A net declares it with the attribute ``homogeneity_degree``; the two-layer nets of Study
    FA (:class:`ibrobust.models.two_layer.TwoLayerFixed`, fixed second layer) are 1-homogeneous
    in their trained first layer (w, b) because relu(c (w.x + b)) = c relu(w.x + b)."""
    degree = getattr(net, "homogeneity_degree", None)
    if degree is not None:
        return int(degree)
    from ibrobust.models.two_layer import TwoLayerFixed

    if isinstance(net, TwoLayerFixed):
        return 1
    return None


def require_homogeneous(net: nn.Module, key: str = "model") -> int:
    """The degree L of ``net``, or a ValueError naming ``key`` when it is not homogeneous."""
    degree = homogeneity_degree(net)
    if degree is None:
        raise ValueError(
            f"{key}: the margin metrics (q_min / rho^L) need a homogeneous net, but "
            f"{type(net).__name__} declares no homogeneity_degree (a bias after the first "
            f"layer, or a non-homogeneous activation, breaks f(c theta) = c^L f(theta))"
        )
    return degree


@torch.no_grad()
def homogeneity_error(net: nn.Module, x: torch.Tensor, degree: int, c: float) -> float:
    """max |f(c theta; x) - c^L f(theta; x)| / max |c^L f(theta; x)| (params restored after)."""
    params = [p.detach().clone() for p in net.parameters()]
    try:
        ref = net(x) * c**degree
        for p in net.parameters():
            p.mul_(c)
        out = net(x)
    finally:
        for p, saved in zip(net.parameters(), params, strict=True):
            p.copy_(saved)
    return float((out - ref).abs().max() / ref.abs().max().clamp_min(1e-300))
