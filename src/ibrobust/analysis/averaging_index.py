"""The feature-averaging index of a neuron, on arrays (no torch: the lambda-trajectory figure
job recomputes it from a table, and figure jobs do not import torch)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike


def feature_averaging_index(lam: ArrayLike, same_class: ArrayLike) -> np.ndarray:
    """(N,) second-largest / largest lambda over each neuron's same-class features.

    ``lam`` (N, k): each neuron's feature coefficients (computed in their dtype);
    ``same_class`` (N, k) bool marks, per neuron, the features of the class the neuron votes
    for (at least two per row). ~1: the neuron averages its class's features; ~0: decoupled
    onto one. A negative second coefficient counts as 0; a non-positive largest one gives
    NaN (the neuron has learned no feature).
    """
    lam = np.asarray(lam)
    masked = np.where(np.asarray(same_class, dtype=bool), lam, -np.inf).astype(lam.dtype)
    top2 = -np.sort(-masked, axis=1)[:, :2]  # (N, 2): largest, second largest
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.clip(top2[:, 1], 0, None) / top2[:, 0]
    return np.where(top2[:, 0] > 0, ratio, np.nan).astype(lam.dtype)
