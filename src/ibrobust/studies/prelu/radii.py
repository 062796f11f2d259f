"""The reference radii of Study PRELU (Min & Vidal, ICML 2024), without torch: figure,
table and ledger jobs import them from here."""

from __future__ import annotations

import math

PRELU_ROBUST_RADIUS: float = math.sqrt(2) / 2
"""l2 radius below which F^(p) (p > 2) is robust: poster, theorem "Robust against O(1)-attack":
for every delta in (0, sqrt 2), P(min_{||d|| <= 1} F^(p)(x + (sqrt 2 - delta)/2 d) y > 0)
>= 1 - 2(K+1) exp(-C D delta^2 / (2 alpha^2 K^2)), i.e. robust up to sqrt(2)/2 ~ 0.707."""


def relu_nonrobust_radius(k: int) -> float:
    """1/sqrt(K): the l2 radius beyond which the ReLU classifier F is not robust.

    Poster, theorem "Non-robust against O(1/sqrt K)-attack": there is a direction d_0 on
    the unit sphere with P(F(x + (1 + rho)/sqrt(K) d_0) y > 0) <= 2 exp(-C D rho^2 /
    (alpha^2 K)) for every rho > 0. K = 10 gives 0.316.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    return 1.0 / math.sqrt(k)
