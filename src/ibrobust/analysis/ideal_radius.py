"""The l2 robustness radius of Min & Vidal's ideal pReLU classifier F^(p), per point, and its
robust accuracy on their Gaussian mixture (Study PRELU, claims ``prelu.p<p>_robust_below``).
numpy only (the ledger job imports it without torch). Pure functions.

Setting: K orthonormal centres mu_k (coordinates z_k = <x, mu_k> / ||mu_k||), signs s_k = +-1,
F^(p)(x) = sum_k s_k ReLU(<x, mu_k>)^p. F^(p) depends on x only through z, so an l2
perturbation's part orthogonal to span{mu_k} is wasted and the radius of a point (x, y) is

    r(z) = min { ||d|| : d in R^K, y F^(p)(z + d) <= 0 },

the distance from z to the set where the label flips. With A = the clusters of the point's
own class and B = the others, flipping means sum_A ReLU(u_k)^p <= sum_B ReLU(u_k)^p.

How it is computed (``prelu_radius``): split the perturbation at the boundary level t,
r^2 = min_t a(t) + b(t), with a(t) the squared distance of z_A to {sum_A ReLU(u)^p <= t} and
b(t) that of z_B to {sum_B ReLU(u)^p >= t}.

- a(t) is a projection onto a convex set (ReLU^p is convex for p >= 1): its solution is
  unique, u_k + mu p u_k^(p-1) = z_k on the own coordinates with z_k > 0 (the others stay),
  one multiplier mu >= 0 per t. The path over t is walked by the largest own coordinate's
  target u in [0, z_max] (u = z_max: t = the point's own level, mu = 0; u = 0: t = 0).
- b(t) raises one other-class coordinate l to s with s^p = t - R_l (R_l: what the other
  B coordinates already contribute), at cost (s - z_l)^2 (0 when no raise is needed). That
  is a feasible perturbation for every l, so the minimum over l and t is an **upper bound**
  ``hi`` on r. It is **exact** when every other-class coordinate is <= 0: then raising
  coordinate k to level w = v^p costs (w^(1/p) + |z_k|)^2, concave in w for p >= 2, and a
  concave sum over the simplex sum w_k = t is least at a vertex: one coordinate.
- For the general point, z' = z with its positive other-class coordinates set to 0 has the
  exact radius r(z') (as above), and the distance to a set is 1-Lipschitz, so
  r(z) >= r(z') - ||ReLU(z_B)||: the **lower bound** ``lo``. On Min & Vidal's data the other
  coordinates are noise of std alpha / sqrt(D), so hi - lo is of that order.

The path minimum is found on a grid of ``grid`` steps of u and refined by golden-section
search in the best cell; each own coordinate's root by bisection (the root is unique).
"""

from __future__ import annotations

import math

import numpy as np

_GOLD = (math.sqrt(5) - 1) / 2
CHUNK = 256  # points per vectorised block (memory: CHUNK x grid x K floats per array)


def _check(z: np.ndarray, sign: np.ndarray, y: np.ndarray, p: float) -> None:
    if z.ndim != 2 or sign.shape != (z.shape[1],) or y.shape != (z.shape[0],):
        raise ValueError(
            f"expected z (n, K), sign (K,), y (n,), got {z.shape}, {sign.shape}, {y.shape}"
        )
    if not (np.isin(sign, (-1, 1)).all() and (sign > 0).any() and (sign < 0).any()):
        raise ValueError(f"sign must be +-1 with both classes present, got {sign.tolist()}")
    if not np.isin(y, (-1, 1)).all():
        raise ValueError("y must be +-1")
    if not (math.isfinite(p) and p >= 2):
        raise ValueError(f"p must be >= 2 (the single-raise argument needs it), got {p}")


def _own_roots(a: np.ndarray, mu: np.ndarray, p: float, iters: int = 60) -> np.ndarray:
    """u in [0, a] with u + mu p u^(p-1) = a, elementwise (a >= 0, mu >= 0 or inf)."""
    lo, hi = np.zeros_like(a), a.copy()
    for _ in range(iters):
        mid = (lo + hi) / 2
        over = mid + mu * p * mid ** (p - 1) > a
        hi, lo = np.where(over, mid, hi), np.where(over, lo, mid)
    return np.where(np.isinf(mu), 0.0, (lo + hi) / 2)


def _path_cost(u: np.ndarray, a: np.ndarray, zmax: np.ndarray, zb: np.ndarray, p: float):
    """Squared norm of the perturbation at path point u (..., one per point): own part a(t) and
    the best single raise of an other-class coordinate. a (n, K) own positive coordinates (0
    elsewhere), zb (n, K) other-class coordinates (-inf on own ones)."""
    shape = u.shape  # (n,) or (n, G)
    ex = (slice(None),) + (None,) * (len(shape) - 1) + (slice(None),)
    with np.errstate(divide="ignore", invalid="ignore"):
        mu = np.where(u > 0, (zmax.reshape(zmax.shape + (1,) * (len(shape) - 1)) - u)
                      / (p * u ** (p - 1)), np.inf)  # fmt: skip
    uk = _own_roots(np.broadcast_to(a[ex], shape + a.shape[1:]).copy(), mu[..., None], p)
    own = ((a[ex] - uk) ** 2).sum(-1)
    t = (uk**p).sum(-1)
    other = np.where(np.isfinite(zb), np.maximum(zb, 0.0) ** p, 0.0)  # (n, K)
    rest = other.sum(-1, keepdims=True) - other  # R_l
    need = t[..., None] - rest[ex]
    s = np.maximum(need, 0.0) ** (1 / p)
    raise_cost = np.where(s > np.maximum(zb, 0.0)[ex], (s - zb[ex]) ** 2, 0.0)
    raise_cost = np.where(np.isfinite(zb)[ex], raise_cost, np.inf)
    return own + raise_cost.min(-1)


def _upper(z: np.ndarray, own: np.ndarray, p: float, grid: int, refine: int) -> np.ndarray:
    a = np.where(own, np.maximum(z, 0.0), 0.0)
    zb = np.where(own, -np.inf, z)
    zmax = a.max(1)
    frac = np.linspace(0.0, 1.0, grid + 1)
    u = zmax[:, None] * frac[None, :]
    cost = _path_cost(u, a, zmax, zb, p)
    j = cost.argmin(1)
    lo = zmax * frac[np.maximum(j - 1, 0)]
    hi = zmax * frac[np.minimum(j + 1, grid)]
    best = cost[np.arange(len(j)), j]
    x1, x2 = hi - _GOLD * (hi - lo), lo + _GOLD * (hi - lo)
    f1, f2 = _path_cost(x1, a, zmax, zb, p), _path_cost(x2, a, zmax, zb, p)
    for _ in range(refine):
        left = f1 < f2
        hi, lo = np.where(left, x2, hi), np.where(left, lo, x1)
        x2n, x1n = (
            np.where(left, x1, lo + _GOLD * (hi - lo)),
            np.where(left, hi - _GOLD * (hi - lo), x2),
        )
        x1, x2 = x1n, x2n
        f_new = _path_cost(np.where(left, x1, x2), a, zmax, zb, p)
        f1, f2 = np.where(left, f_new, f2), np.where(left, f1, f_new)
    best = np.minimum(best, np.minimum(f1, f2))
    return np.sqrt(np.maximum(best, 0.0))


def prelu_radius(
    z: np.ndarray, sign: np.ndarray, y: np.ndarray, p: float, grid: int = 200, refine: int = 50
) -> tuple[np.ndarray, np.ndarray]:
    """Per point, the l2 radius of F^(p) (p >= 2) as a bracket (lo, hi) with lo <= r <= hi:
    z (n, K) coordinates on the orthonormal centres, sign (K,) the centres' labels, y (n,)
    the points' labels. lo == hi (to the search's precision) where every other-class
    coordinate is <= 0; a misclassified point (y F^(p)(z) <= 0) has radius 0."""
    z, sign, y = np.asarray(z, float), np.asarray(sign), np.asarray(y)
    _check(z, sign, y, p)
    own = (sign[None, :] * y[:, None]) > 0
    level = lambda m: (np.where(m, np.maximum(z, 0.0), 0.0) ** p).sum(1)  # noqa: E731
    wrong = level(own) <= level(~own)
    excess = np.where(own, 0.0, np.maximum(z, 0.0))
    clamped = np.where(own, z, np.minimum(z, 0.0))
    hi, exact = np.empty(len(z)), np.empty(len(z))
    with np.errstate(invalid="ignore"):  # inf * 0 in the roots at u = 0 (t = 0)
        for i in range(0, len(z), CHUNK):
            c = slice(i, i + CHUNK)
            hi[c] = _upper(z[c], own[c], p, grid, refine)
            exact[c] = _upper(clamped[c], own[c], p, grid, refine)
    lo = np.maximum(exact - np.sqrt((excess**2).sum(1)), 0.0)
    lo, hi = np.where(wrong, 0.0, lo), np.where(wrong, 0.0, np.maximum(hi, lo))
    return lo, hi


def mixture_coordinates(
    k: int, positive: tuple[int, ...], noise_std: float, mean_norm: float, n: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n draws of Min & Vidal's mixture in the centres' coordinates: cluster j uniform over
    the K centres, z = mean_norm e_j + N(0, noise_std^2 I_K) (isotropic noise projected on K
    orthonormal directions), y = +1 for j in ``positive``. Returns (z, sign, y)."""
    if not positive or not set(positive) <= set(range(k)) or len(set(positive)) == k:
        raise ValueError(
            f"positive must be a proper non-empty subset of 0..{k - 1}, got {positive}"
        )
    rng = np.random.default_rng(seed)
    sign = -np.ones(k)
    sign[list(positive)] = 1.0
    fine = rng.integers(k, size=n)
    z = noise_std * rng.standard_normal((n, k))
    z[np.arange(n), fine] += mean_norm
    return z, sign, sign[fine]


def robust_accuracy(lo: np.ndarray, hi: np.ndarray, radius: float) -> tuple[float, float]:
    """The fraction of points robust at l2 ``radius`` (radius > r_point is an error) as a
    bracket: (share with lo > radius, share with hi > radius)."""
    return float((lo > radius).mean()), float((hi > radius).mean())
