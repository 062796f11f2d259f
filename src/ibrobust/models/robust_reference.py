"""The hand-built robust network of the feature-averaging paper (one neuron per cluster).

    F(x) = sum_{j in J+} ReLU(<u_j, x> - b) - sum_{j in J-} ReLU(<u_j, x> - b),
    u_j = mu_j / ||mu_j||,  b = beta * ||mu||  (beta = 1/2 by default).

The bias filters the noise (<u_l, xi> ~ N(0, sigma^2) is far below b), so on a clean
point of cluster j only neuron j is active: F = a_j - b with a_j = <u_j, x>. Because the
u_j are orthonormal the minimal l2 perturbation that flips the sign has a closed form:
the attacker lowers a_j by delta_0 and raises the s cheapest opposite neurons
(largest c_l = <u_l, x>) past b by delta_l; minimising ||delta||_2 subject to the sign
flip is a water-filling problem (:func:`analytic_radius`). For beta = 1/2 the cheapest
option is simply to switch neuron j off (radius a_j - b ~ ||mu||/2 = sqrt(d)/2).
"""

from __future__ import annotations

import torch

from ibrobust.models.two_layer import TwoLayerFixed, from_state, to_state

# the reference is a TwoLayerFixed: it is saved and loaded in the two-layer file format
__all__ = [
    "TwoLayerFixed",
    "analytic_radius",
    "construct",
    "exact_radius",
    "from_state",
    "robust_reference_net",
    "to_state",
]


def construct(spec: dict, data) -> TwoLayerFixed:
    """The ``robust_reference`` kind (constructed, not trained): the net of a models entry
    on ``data``'s cluster means and signs (ValueError without them)."""
    if data.means is None:
        raise ValueError("the robust reference needs synthetic cluster data (cluster means)")
    return robust_reference_net(data.means, data.sign, beta=spec["beta"])


def exact_radius(net: TwoLayerFixed, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The kind's exact radii (capability ``exact_radii``): :func:`analytic_radius`."""
    return analytic_radius(net, x, y)


def robust_reference_net(
    means: torch.Tensor, sign: torch.Tensor, beta: float = 0.5
) -> TwoLayerFixed:
    """A :class:`TwoLayerFixed` with k heads of one neuron each (readout = cluster sign)."""
    if not 0 < beta < 1:
        raise ValueError(f"beta must be in (0, 1), got {beta}")
    norms = means.norm(dim=1, keepdim=True)  # (k, 1)
    weight = (means / norms)[:, None, :]  # (k, 1, d)
    bias = -beta * norms  # (k, 1)
    return TwoLayerFixed(weight, bias, sign.to(torch.float32))


def _waterfill_cost(total: torch.Tensor, lower: torch.Tensor) -> torch.Tensor:
    """min ||delta||_2 s.t. sum(delta) >= total, delta_i >= lower_i (last dim), batched.

    Optimum: delta_i = max(lower_i, tau) with tau solving sum max(lower_i, tau) = total.
    """
    lo, _ = torch.sort(lower, dim=-1, descending=True)  # (..., s)
    s = lo.shape[-1]
    best = torch.full(total.shape, float("inf"), dtype=lower.dtype, device=lower.device)
    # Try "the first q entries sit at their lower bound, the rest share tau equally".
    for q in range(s + 1):
        rest = s - q
        fixed = lo[..., :q].sum(-1)
        if rest == 0:
            ok = fixed >= total
            cost = lo[..., :q].pow(2).sum(-1).sqrt()
        else:
            tau = (total - fixed) / rest
            upper_ok = tau >= (lo[..., q] if q < s else -float("inf"))
            lower_ok = tau <= lo[..., q - 1] if q > 0 else torch.ones_like(tau, dtype=torch.bool)
            ok = upper_ok & lower_ok
            cost = (lo[..., :q].pow(2).sum(-1) + rest * tau.clamp(min=0).pow(2)).sqrt()
        best = torch.where(ok, torch.minimum(best, cost), best)
    return best


def analytic_radius(net: TwoLayerFixed, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """(n,) exact minimal l2 distance to a sign flip of ``y * F`` for the reference net.

    Exact for points on which only their own cluster's neuron is active (every clean
    point, w.h.p., for beta = 1/2): with A = a_j - b and opposite gaps g_l = b - c_l > 0,
    switching neuron j off costs A; also raising the s opposite neurons with the smallest
    gaps costs min ||delta|| s.t. delta_0 + sum_l delta_l >= A + sum_l g_l, delta_0 >= 0,
    delta_l >= g_l (water-filling). The radius is the minimum over s = 0..k/2. Points
    already misclassified get 0; any other activation pattern gets NaN.
    """
    u = net.weight[:, 0, :].detach()  # (k, d) orthonormal directions
    b = -net.bias[:, 0].detach()  # (k,) thresholds
    sign = net.readout.detach()  # (k,)
    a = x @ u.T  # (n, k) coordinates along the u_j
    act = torch.relu(a - b)  # (n, k)
    margin = y * (act @ sign)  # (n,)
    own = sign[None, :] == y[:, None]  # (n, k)
    n_active = (act > 0).sum(1)
    generic = (n_active == 1) & ((act > 0) & own).any(1)
    big_a = (act * own).sum(1)  # (n,) A = a_j - b of the one active own neuron
    gaps = torch.where(own, torch.full_like(a, float("inf")), b - a)  # (n, k)
    gaps, _ = torch.sort(gaps, dim=1)  # cheapest opposite neurons first
    best = big_a.clone()
    for s in range(1, int((~own).sum(1).min()) + 1):
        g = gaps[:, :s]  # (n, s)
        lower = torch.cat([g.new_zeros(len(x), 1), g], dim=1)
        best = torch.minimum(best, _waterfill_cost(big_a + g.sum(1), lower))
    radius = torch.where(generic, best, torch.full_like(best, float("nan")))
    return torch.where(margin <= 0, torch.zeros_like(radius), radius)
