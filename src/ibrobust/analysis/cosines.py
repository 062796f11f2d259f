"""Cosine matrices between a model's neurons and the class features, for any model.

"Neurons" are the vectors that read a representation (``model.neurons()``, (N, F)) and
"features" are one vector per fine class in that same representation:

* synthetic cluster data read by neurons that act on the input itself (two-layer / pReLU
  nets): the exact cluster means mu_j (Li et al. Fig. 1; Min & Vidal's centres);
* otherwise the class means of the penultimate embedding ``model.embed(x)`` over the
  training points, centred by their mean over classes (Li et al. Fig. 2/3 on real
  images), read by the rows of the last layer.

2-class training averages the features of a class into its neurons (same-class cosines
all ~1/sqrt(k/2)); k-class training decouples them (one large cosine per neuron).
"""

from __future__ import annotations

import pandas as pd
import torch
from torch import nn

from ibrobust.data.dataset import Dataset


def cosine_matrix(weights: torch.Tensor, features: torch.Tensor) -> torch.Tensor:
    """(N, k) cos(w_r, mu_j) for neurons ``weights`` (N, d) and ``features`` (k, d)."""
    w = weights / weights.norm(dim=1, keepdim=True).clamp_min(1e-12)
    f = features / features.norm(dim=1, keepdim=True).clamp_min(1e-12)
    return w @ f.T


@torch.no_grad()
def class_mean_embeddings(
    model: nn.Module, x: torch.Tensor, fine: torch.Tensor, k: int, batch: int = 1024
) -> torch.Tensor:
    """(k, F) mean of ``model.embed(x)`` over the points of each class."""
    sums, counts = None, torch.zeros(k)
    for lo in range(0, x.shape[0], batch):
        e = model.embed(x[lo : lo + batch]).reshape(min(batch, x.shape[0] - lo), -1)  # (b, F)
        f = fine[lo : lo + batch]
        if sums is None:
            sums = torch.zeros(k, e.shape[1], dtype=e.dtype)
        sums.index_add_(0, f, e)
        counts += torch.bincount(f, minlength=k).to(counts.dtype)
    if sums is None or (counts == 0).any():
        raise ValueError(f"every class needs training points; counts per class {counts.tolist()}")
    return sums / counts[:, None]


def class_features(model: nn.Module, data: Dataset) -> tuple[torch.Tensor, str]:
    """(k, F) features and their source: ``"cluster means"`` or ``"class-mean embedding"``.

    Class-mean embeddings are centred by their mean over classes (as in neural-collapse
    analyses): a ReLU embedding is non-negative, so raw class means share a large common
    component that every head row sees alike (the head's bias absorbs it)."""
    if getattr(model, "neurons_read_input", False) and data.means is not None:
        return data.means.float(), "cluster means"
    means = class_mean_embeddings(model, data.train.x, data.train.fine, data.k)
    return means - means.mean(0, keepdim=True), "class-mean embedding"


def neuron_cosines(model: nn.Module, data: Dataset) -> tuple[pd.DataFrame, dict]:
    """Tidy cosine table (neuron, head, head_sign, feature, feature_sign, cosine) and a summary.

    Summary: the source of the features, the mean cosine of neurons with the features of
    their own head's class sign, the mean per-neuron maximum, and the fraction of neurons
    whose best match is a single feature rather than the average of their class's features.
    """
    with torch.no_grad():
        feats, source = class_features(model, data)
        neurons = model.neurons().detach().float()  # (N, F)
        heads = model.neuron_heads()  # (N,)
        # a neuron's class sign: its head's readout sign, or the model's own answer when
        # every neuron feeds every head (pReLU nets: the sign of its binary-score vote)
        signs = getattr(model, "neuron_signs", None)
        head_sign = signs() if signs is not None else model.readout[heads]  # (N,)
        cos = cosine_matrix(neurons, feats)  # (N, k)
        same = head_sign[:, None] == data.sign[None, :]  # (N, k)
        # class-average directions: sum of the features of each sign
        avg = torch.stack([feats[data.sign == s].sum(0) for s in (1.0, -1.0)])  # (2, F)
        cos_avg = cosine_matrix(neurons, avg)  # (N, 2)
        own_avg = torch.where(head_sign > 0, cos_avg[:, 0], cos_avg[:, 1])  # (N,)
        best_single = torch.where(same, cos, torch.full_like(cos, -2.0)).max(1).values  # (N,)
    rows = [
        {
            "features": source,
            "neuron": r,
            "head": int(heads[r]),
            "head_sign": float(head_sign[r]),
            "feature": j,
            "feature_sign": float(data.sign[j]),
            "cosine": float(cos[r, j]),
        }
        for r in range(cos.shape[0])
        for j in range(cos.shape[1])
    ]
    summary = {
        "features": source,
        "cosine_same_class_mean": float(cos[same].mean()),
        "cosine_max_per_neuron_mean": float(cos.max(1).values.mean()),
        "cosine_own_class_average_mean": float(own_avg.mean()),
        "single_feature_fraction": float((best_single > own_avg).float().mean()),
    }
    return pd.DataFrame(rows), summary
