"""The balls of PGD's threat models (l2, l_inf, l1) over flat (b, D) rows: the projection
onto the ball, a uniform draw in it and the steepest-ascent step of its norm
(:mod:`ibrobust.attacks.pgd` describes how PGD uses them)."""

from __future__ import annotations

import torch


def project_l1(delta: torch.Tensor, eps: torch.Tensor) -> torch.Tensor:
    """Euclidean projection of each row of ``delta`` (b, D) onto the l1 ball of radius eps (b, 1).

    Duchi, Shalev-Shwartz, Singer, Chandra (ICML 2008), Fig. 1: sort |v| decreasingly (u),
    rho = max{j : u_j > (sum_{i<=j} u_i - eps) / j}, theta = (sum_{i<=rho} u_i - eps) / rho,
    w = sign(v) max(|v| - theta, 0). Rows already inside the ball are returned unchanged.
    """
    a = delta.abs()
    u = a.sort(dim=1, descending=True).values  # (b, D)
    css = u.cumsum(dim=1)
    j = torch.arange(1, a.shape[1] + 1, device=a.device, dtype=a.dtype)
    cond = u - (css - eps) / j > 0  # true on a prefix of j
    rho = (cond * j).amax(dim=1, keepdim=True).clamp_min(1)  # (b, 1); eps = 0 -> 1
    theta = ((css.gather(1, rho.long() - 1) - eps) / rho).clamp_min(0)  # (b, 1)
    proj = delta.sign() * (a - theta).clamp_min(0)
    inside = a.sum(dim=1, keepdim=True) <= eps
    return torch.where(inside, delta, proj)


def project_ball(delta: torch.Tensor, eps: torch.Tensor | float, norm: str) -> torch.Tensor:
    """Onto the ball of radius ``eps``: (b, 1) per row, or one float for every row."""
    if norm == "linf":
        if isinstance(eps, float):  # one radius: a single scalar clamp
            return delta.clamp(-eps, eps)
        return torch.maximum(torch.minimum(delta, eps), -eps)
    if norm == "l1":
        return project_l1(delta, eps)
    nrm = delta.norm(dim=1, keepdim=True).clamp_min(1e-12)
    e = torch.tensor(eps, dtype=delta.dtype) if isinstance(eps, float) else eps  # exact division
    return delta * torch.clamp(e / nrm, max=1.0)


def random_in_ball(
    shape: tuple[int, int],
    eps: torch.Tensor | float,
    norm: str,
    gen: torch.Generator,
    like: torch.Tensor | None = None,
) -> torch.Tensor:
    """(b, D) uniform in the ball of radius eps ((b, 1) or one float), drawn from ``gen`` on
    its device, returned with the dtype and on the device of ``like`` (default: of eps)."""
    b, d = shape
    ref = eps if like is None else like
    dt, dev = ref.dtype, ref.device
    if norm == "linf":
        return (2 * torch.rand(shape, generator=gen, dtype=dt).to(dev) - 1) * eps
    if norm == "l1":
        # normalised exponentials are uniform on the simplex of D+1 coordinates; the first D
        # are uniform in {u >= 0, sum u <= 1}; random signs make it the l1 ball
        e = torch.empty(b, d + 1, dtype=dt).exponential_(generator=gen)
        u = e[:, :d] / e.sum(dim=1, keepdim=True)
        s = 2 * torch.randint(0, 2, shape, generator=gen).to(dt) - 1
        return (u * s).to(dev) * eps
    # uniform in the l2 ball: direction uniform on the sphere, radius eps * U^(1/D)
    g = torch.randn(shape, generator=gen, dtype=dt)
    g = g / g.norm(dim=1, keepdim=True).clamp_min(1e-12)
    r = torch.rand(b, 1, generator=gen, dtype=dt) ** (1.0 / d)
    return (g * r).to(dev) * eps


def steepest_step(grad: torch.Tensor, norm: str, l1_k: int) -> torch.Tensor:
    """(b, D) unit-norm steepest-ascent direction of the norm for the gradient."""
    if norm == "linf":
        return grad.sign()
    if norm == "l1":
        idx = grad.abs().topk(l1_k, dim=1).indices  # (b, k)
        step = torch.zeros_like(grad).scatter_(1, idx, grad.gather(1, idx).sign())
        return step / l1_k
    return grad / grad.norm(dim=1, keepdim=True).clamp_min(1e-12)
