"""Lambda decomposition of the feature-averaging paper's Lemma, and cosine matrices.

GD keeps every first-layer neuron in  w(t) = w(0) + sum_j lambda_j(t) mu_j + sum_i s_i(t) xi_i.
We recover (lambda, s) by least squares on the columns [mu_1..mu_k, xi_1..xi_n] and
report the residual ||delta_w - B c|| / ||delta_w|| (tiny: GD never leaves that span).

Identifiability: when k + n <= d the columns are (generically) independent and the
coefficients are unique. When k + n > d (the CPU default d = n = 1000) the columns
are dependent; GD's iterates are then decomposed on the training inputs x_i = mu_{j_i}
+ xi_i themselves (n <= d columns), w(t) - w(0) = sum_i alpha_i x_i, which gives
lambda_j = sum_{i in cluster j} alpha_i and s_i = alpha_i - the form GD produces. The
residual is then trivially 0 when n = d; the report says which basis was used.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class Decomposition:
    lam: torch.Tensor  # (N, k) feature coefficients per neuron
    s: torch.Tensor  # (N, n) noise coefficients per neuron
    residual: torch.Tensor  # (N,) relative residual ||dw - B c|| / ||dw||
    basis: str  # "features+noise" or "inputs"


def lambda_decomposition(
    delta_w: torch.Tensor,
    means: torch.Tensor,
    noise: torch.Tensor,
    fine: torch.Tensor,
    basis: str = "auto",
) -> Decomposition:
    """Decompose neuron displacements ``delta_w`` (N, d) = w(t) - w(0).

    ``means`` (k, d), ``noise`` (n, d) are the training noises xi_i of the points whose
    cluster index is ``fine`` (n,). ``basis``: "features+noise", "inputs" or "auto"
    (the former when k + n <= d). Solved in float64.
    """
    k, d = means.shape
    n = noise.shape[0]
    if basis == "auto":
        basis = "features+noise" if k + n <= d else "inputs"
    dw = delta_w.to(torch.float64)
    if basis == "features+noise":
        if k + n > d:
            raise ValueError(f"basis 'features+noise' needs k + n <= d, got k={k}, n={n}, d={d}")
        cols = torch.cat([means, noise]).to(torch.float64)  # (k + n, d)
        coef = torch.linalg.lstsq(cols.T, dw.T).solution.T  # (N, k + n)
        lam, s = coef[:, :k], coef[:, k:]
    elif basis == "inputs":
        if n > d:
            raise ValueError(f"basis 'inputs' needs n <= d, got n={n}, d={d}")
        cols = (means[fine] + noise).to(torch.float64)  # (n, d) the training inputs
        alpha = torch.linalg.lstsq(cols.T, dw.T).solution.T  # (N, n)
        onehot = torch.nn.functional.one_hot(fine, k).to(torch.float64)  # (n, k)
        lam, s = alpha @ onehot, alpha
    else:
        raise ValueError(f"basis must be 'auto', 'features+noise' or 'inputs', got {basis!r}")
    recon = lam @ means.to(torch.float64) + s @ noise.to(torch.float64)  # (N, d)
    residual = (dw - recon).norm(dim=1) / dw.norm(dim=1).clamp_min(1e-300)
    return Decomposition(lam.float(), s.float(), residual.float(), basis)


def feature_averaging_index(lam: torch.Tensor, same_class: torch.Tensor) -> torch.Tensor:
    """(N,) second-largest / largest lambda over each neuron's same-class features.

    ``same_class`` (N, k) bool marks, per neuron, the features of the class the neuron
    votes for. ~1: the neuron averages its class's features; ~0: decoupled onto one.
    Non-positive largest coefficients give NaN (the neuron has learned no feature).
    """
    masked = torch.where(same_class, lam, torch.full_like(lam, -float("inf")))
    top2 = torch.topk(masked, 2, dim=1).values  # (N, 2)
    ratio = top2[:, 1].clamp(min=0) / top2[:, 0]
    return torch.where(top2[:, 0] > 0, ratio, torch.full_like(ratio, float("nan")))


def other_class_ratio(lam: torch.Tensor, same_class: torch.Tensor) -> torch.Tensor:
    """(N,) max |lambda| over each neuron's other-class features / the mean lambda over its
    own class's features (the theorem's o(1) against Omega(1)). A neuron whose same-class
    mean is not positive (it learned no feature) gives NaN."""
    own = torch.where(same_class, lam, torch.zeros_like(lam)).sum(1) / same_class.sum(1)
    other = torch.where(~same_class, lam.abs(), torch.zeros_like(lam)).amax(1)
    return torch.where(own > 0, other / own, torch.full_like(own, float("nan")))


def decoupling_ratio(lam: torch.Tensor, own: torch.Tensor) -> torch.Tensor:
    """(N,) max_{j != i} |lambda_j| / lambda_i per neuron, i = ``own`` (N,) its own feature
    (a k-class net's head i is trained on cluster i): the cross coefficients against the
    own one (the decoupling theorem's o(1) against Omega(1)). A neuron whose own lambda is
    not positive (it learned no feature) gives NaN."""
    rows = torch.arange(lam.shape[0])
    mine = lam[rows, own]
    cross = lam.abs().clone()
    cross[rows, own] = 0.0
    return torch.where(mine > 0, cross.amax(1) / mine, torch.full_like(mine, float("nan")))


def decompose_checkpoints(
    state: dict, data, supervision: str = "binary"
) -> tuple[list[dict], list[dict]]:
    """(rows, trajectory) of a saved two-layer net's checkpoints after step 0: one row per
    (step, neuron, feature) with its lambda and residual, and per step the mean feature
    averaging index, the mean other-class ratio, the largest residual and, for a k-class
    net (``supervision`` "multiclass": head i is cluster i's), the mean decoupling ratio
    (:func:`decoupling_ratio`; NaN for a 2-class net). ``data``: its cluster Dataset (means
    and training noise); ValueError when it has none, the model has no checkpoint after 0,
    or a k-class net has not one head per cluster."""
    if data.means is None or "train_noise" not in data.extras:
        raise ValueError("the decomposition needs cluster data (means and training noise)")
    h, m, d = state["weight"].shape
    readout = state["readout"]
    heads = torch.arange(h).repeat_interleave(m)  # (N,) head of each neuron
    same_class = readout[heads][:, None] == data.sign[None, :]  # (N, k)
    w0 = state["init_weight"].reshape(h * m, d)
    noise = data.extras["train_noise"].float()
    if supervision not in ("binary", "multiclass"):
        raise ValueError(f"supervision must be 'binary' or 'multiclass', got {supervision!r}")
    kclass = supervision == "multiclass"
    if kclass and h != data.k:
        raise ValueError(f"a k-class net needs one head per cluster, got {h} heads, k={data.k}")
    rows, trajectory = [], []
    for c, step in enumerate(state["ckpt_steps"].tolist()):
        if step == 0:
            continue
        wt = state["ckpt_weight"][c].reshape(h * m, d)
        dec = lambda_decomposition(wt - w0, data.means.float(), noise, data.train.fine)
        fa = feature_averaging_index(dec.lam, same_class)
        other = other_class_ratio(dec.lam, same_class)
        decoupling = decoupling_ratio(dec.lam, heads) if kclass else torch.tensor(float("nan"))
        rows += [
            {"step": step, "neuron": r, "head": int(heads[r]), "head_sign": float(readout[heads[r]]),
             "feature": j, "feature_sign": float(data.sign[j]), "lambda": float(dec.lam[r, j]),
             "residual": float(dec.residual[r]), "basis": dec.basis}
            for r in range(h * m)
            for j in range(data.k)
        ]  # fmt: skip
        trajectory.append(
            {"step": step, "fa_index_mean": float(fa.nanmean()),
             "other_class_ratio_mean": float(other.nanmean()),
             "decoupling_ratio_mean": float(decoupling.nanmean()),
             "residual_max": float(dec.residual.max())}
        )  # fmt: skip
    if not trajectory:
        raise ValueError("no checkpoint after step 0 to decompose")
    return rows, trajectory
