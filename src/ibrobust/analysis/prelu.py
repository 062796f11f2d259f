"""The pReLU analysis of Study PRELU (Min & Vidal, ICML 2024): ideal classifiers, the distance
of a trained net to them, neuron alignment.

Setting: K orthonormal cluster centres mu_k (K1 positive, K2 negative); the class
averages of the poster are the *sums* mu_+ = sum_{k in +} mu_k, mu_- = sum_{k in -} mu_k.

Ideal classifiers (poster, "Conjectures"):
    F(x)     = ReLU(<x, mu_+>) - ReLU(<x, mu_->)                     (two averaged neurons)
    F^(p)(x) = sum_{k in +} ReLU(<x, mu_k>)^p - sum_{k in -} ReLU(<x, mu_k>)^p
The conjecture is f_1 ~ F and f_p ~ F^(p) (p > 2) *up to a scaling factor*.

Distance (``scaled_distance``): the relative l2 error after the best non-negative
rescaling, on a set of probe points x_1..x_N,

    dist(f, G) = min_{c >= 0} ||c f - G|| / ||G||,   f = (f(x_i))_i, G = (G(x_i))_i,

= sqrt(1 - cos^2(f, G)) (the sine of the angle between the two value vectors, hence
symmetric in f and G) when cos(f, G) >= 0, and 1 otherwise. Why this one: invariant to the
(unknown, growing) scale of f; in [0, 1] and normalised by the fixed reference G, so
comparable across runs, p and alpha; c is the same least-squares fit the official code
uses (c = E[f G] / E[f^2], there on data samples, here on the probes); and it is the l2
counterpart of the official statistic, which replaces the norm by a sup over the unit
sphere found by normalised gradient ascent (``prelu_f_dist.py``, ``estimate_l_inf_dist``,
2000 steps per probe batch) -- an attack-style estimate, noisier and far costlier. c is
constrained to c >= 0 because a flipped classifier is not "F up to scale".

Probe points matter: F and F^(p) agree at every centre (both are +-1 at mu_k), so on test
points, which sit within alpha of a centre, the two are nearly indistinguishable. The
default probes (``span_sphere_points``) are uniform on the unit sphere of span{mu_k},
where F and F^(p) differ by O(1) (e.g. at (mu_1 + mu_2)/sqrt 2 with both positive,
F = sqrt 2 and F^(3) = 1/sqrt 2); both ideal classifiers only see the projection onto
that span. Report the distance on test points too if a data-distribution number is wanted.

Alignment (``neuron_alignment``): per neuron, the cosine of w_j with each centre and
with mu_+/||mu_+||, mu_-/||mu_-||; its contribution |v_j| ||w_j|| (heads: ||V[:, j]||
||w_j||; the official figure's neuron contribution); a neuron is *active* when its
contribution is at least ``active_rel`` times the largest one; its best match is the
direction of largest cosine. ``alignment_summary`` gives the fractions of active neurons
whose best match is a single centre vs a class average.

The workflow's per-run analysis (rule ``prelu_analyze``: the alignment table of every
neuron and a summary with the fractions and both distances) is the study's
(:func:`ibrobust.studies.prelu.experiment.run_analysis`); the theorems' reference radii are
:mod:`ibrobust.studies.prelu.radii`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


def _check_centres(means: torch.Tensor, sign: torch.Tensor) -> None:
    if means.ndim != 2 or sign.shape != means.shape[:1]:
        raise ValueError(
            f"expected means (K, D) and sign (K,), got {tuple(means.shape)}, {tuple(sign.shape)}"
        )
    if not bool(((sign == 1) | (sign == -1)).all()) or not bool(
        (sign > 0).any() and (sign < 0).any()
    ):
        raise ValueError(f"sign must be +-1 with both classes present, got {sign.tolist()}")


def class_sums(means: torch.Tensor, sign: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(mu_+, mu_-) (D,) each: the sums of the positive and of the negative centres."""
    _check_centres(means, sign)
    return means[sign > 0].sum(0), means[sign < 0].sum(0)


def ideal_relu(x: torch.Tensor, means: torch.Tensor, sign: torch.Tensor) -> torch.Tensor:
    """F(x) = ReLU(<x, mu_+>) - ReLU(<x, mu_->), (n, D) -> (n,)."""
    mp, mm = class_sums(means, sign)
    return torch.relu(x @ mp.to(x.dtype)) - torch.relu(x @ mm.to(x.dtype))


def ideal_prelu(x: torch.Tensor, means: torch.Tensor, sign: torch.Tensor, p: float) -> torch.Tensor:
    """F^(p)(x) = sum_k sign_k ReLU(<x, mu_k>)^p, (n, D) -> (n,)."""
    _check_centres(means, sign)
    return torch.relu(x @ means.T.to(x.dtype)).pow(p) @ sign.to(x.dtype)


def scaled_distance(f: torch.Tensor, target: torch.Tensor) -> float:
    """min_{c >= 0} ||c f - target|| / ||target|| for values f, target (N,) on probe points."""
    if f.shape != target.shape or f.ndim != 1:
        raise ValueError(
            f"f and target must be equal-length vectors, got {tuple(f.shape)}, {tuple(target.shape)}"
        )
    f, target = f.double(), target.double()
    tn = float(target.norm())
    if tn == 0:
        raise ValueError("target is zero on every probe point: the distance is undefined")
    fn2 = float(f @ f)
    c = max(float(f @ target) / fn2, 0.0) if fn2 > 0 else 0.0
    return float((c * f - target).norm()) / tn


def span_sphere_points(means: torch.Tensor, n: int, gen: torch.Generator) -> torch.Tensor:
    """(n, D) points uniform on the unit sphere of span{mu_k} (the default distance probes)."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    q, _ = torch.linalg.qr(means.T.double())  # (D, K) orthonormal basis of the span
    g = torch.randn(n, q.shape[1], generator=gen, dtype=torch.float64)
    g = g / g.norm(dim=1, keepdim=True)
    return (g @ q.T).to(means.dtype)


@torch.no_grad()
def ideal_distances(
    model: torch.nn.Module, x: torch.Tensor, means: torch.Tensor, sign: torch.Tensor, p: float
) -> dict[str, float]:
    """{"dist_F": dist(f, F), "dist_Fp": dist(f, F^(p))} of ``model.binary_score`` on x."""
    f = model.binary_score(x)
    return {
        "dist_F": scaled_distance(f, ideal_relu(x, means, sign)),
        "dist_Fp": scaled_distance(f, ideal_prelu(x, means, sign, p)),
    }


@dataclass
class Alignment:
    cos_centres: torch.Tensor  # (h, K) cos(w_j, mu_k)
    cos_averages: torch.Tensor  # (h, 2) cos(w_j, mu_+), cos(w_j, mu_-)
    contribution: torch.Tensor  # (h,) ||V[:, j]|| ||w_j||
    active: torch.Tensor  # (h,) bool, contribution >= active_rel * max
    best: torch.Tensor  # (h,) argmax over [mu_1..mu_K, mu_+, mu_-] (K means the + average)


@torch.no_grad()
def neuron_alignment(
    weight: torch.Tensor,
    out_weight: torch.Tensor,
    means: torch.Tensor,
    sign: torch.Tensor,
    active_rel: float = 1e-2,
) -> Alignment:
    """Per-neuron cosines with the centres and the class averages (weight (h, D), V (H, h))."""
    if weight.ndim != 2 or out_weight.ndim != 2 or out_weight.shape[1] != weight.shape[0]:
        raise ValueError(
            f"expected weight (h, D) and out_weight (H, h), got {tuple(weight.shape)}, {tuple(out_weight.shape)}"
        )
    if not 0 <= active_rel <= 1:
        raise ValueError(f"active_rel must be in [0, 1], got {active_rel}")
    mp, mm = class_sums(means, sign)
    dirs = torch.cat([means, mp[None], mm[None]]).double()  # (K + 2, D)
    dirs = dirs / dirs.norm(dim=1, keepdim=True)
    w = weight.double()
    wn = w.norm(dim=1)  # (h,)
    cos = (w @ dirs.T) / wn.clamp_min(torch.finfo(torch.float64).tiny).unsqueeze(1)  # (h, K + 2)
    contrib = out_weight.double().norm(dim=0) * wn  # (h,)
    top = float(contrib.max()) if contrib.numel() else 0.0
    active = (contrib >= active_rel * top) & (contrib > 0)
    k = means.shape[0]
    return Alignment(cos[:, :k], cos[:, k:], contrib, active, cos.argmax(1))


def alignment_summary(al: Alignment) -> dict[str, float]:
    """Counts and fractions over active neurons: best match a single centre vs a class average."""
    k = al.cos_centres.shape[1]
    best = al.best[al.active]
    n = int(best.numel())
    single = int((best < k).sum())
    best_cos = torch.cat([al.cos_centres, al.cos_averages], 1)[al.active].max(1).values
    return {
        "n_active": n,
        "frac_single": single / n if n else float("nan"),
        "frac_average": (n - single) / n if n else float("nan"),
        "mean_best_cos": float(best_cos.mean()) if n else float("nan"),
    }
