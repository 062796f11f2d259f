"""Study PRELU's per-run analysis job (rule ``prelu_analyze``) of the synthetic half: a
trained pReLU net on its cluster data -> the alignment table of every neuron and the run's
summary (alignment fractions, distances to the ideal classifiers on the probes and on the
test points). The math is shared: :mod:`ibrobust.analysis.prelu`."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from ibrobust.analysis.prelu import (
    alignment_summary,
    ideal_distances,
    neuron_alignment,
    span_sphere_points,
)
from ibrobust.data.dataset import Dataset
from ibrobust.seeding import torch_generator


@torch.no_grad()
def run_analysis(
    net: torch.nn.Module,
    data: Dataset,
    seed: int,
    probes: int = 2000,
    active_rel: float = 1e-2,
) -> tuple[pd.DataFrame, dict[str, float]]:
    """Study PRELU's per-run analysis of a trained pReLU net ``net`` on cluster data: the
    per-neuron alignment table and the run's summary (alignment fractions, distances to F
    and F^(p) on ``probes`` points of the centres' unit sphere and on the test points).

    Table columns: ``neuron``, ``sign`` (+-1, the neuron's vote), ``contribution``,
    ``active``, ``best`` (index into mu_0..mu_{K-1}, mu_+, mu_-), ``best_kind`` (centre or
    average), ``best_cos``, ``cos_mu<k>`` for every centre, ``cos_avg_plus``, ``cos_avg_minus``.
    Summary: ``n_neurons``, ``n_active``, ``frac_single``, ``frac_average``,
    ``mean_best_cos``, ``dist_F`` / ``dist_Fp`` on the probes, ``dist_F_test`` /
    ``dist_Fp_test`` on the test points, ``p``, ``k``.
    """
    means, sign = data.means, data.sign
    if means is None:
        raise ValueError("the PRELU synthetic analysis needs cluster data (cluster means)")
    if not hasattr(net, "p") or not hasattr(net, "out_weight"):
        raise ValueError(f"the PRELU analysis reads a pReLU net, got {type(net).__name__}")
    means, sign = means.float(), sign.float()
    al = neuron_alignment(net.weight, net.out_weight, means, sign, active_rel)
    k = means.shape[0]
    cos = torch.cat([al.cos_centres, al.cos_averages], 1)  # (h, K + 2)
    table = pd.DataFrame(
        {
            "neuron": np.arange(cos.shape[0]),
            "sign": net.neuron_signs().numpy(),
            "contribution": al.contribution.numpy(),
            "active": al.active.numpy(),
            "best": al.best.numpy(),
            "best_kind": np.where(al.best.numpy() < k, "centre", "average"),
            "best_cos": cos.max(1).values.numpy(),
        }
    )
    for j in range(k):
        table[f"cos_mu{j}"] = al.cos_centres[:, j].numpy()
    table["cos_avg_plus"] = al.cos_averages[:, 0].numpy()
    table["cos_avg_minus"] = al.cos_averages[:, 1].numpy()
    summary: dict[str, float] = {"p": float(net.p), "k": k, "n_neurons": int(cos.shape[0])}
    summary.update(alignment_summary(al))
    pts = span_sphere_points(means, probes, torch_generator(seed, "prelu", "probes"))
    summary.update(ideal_distances(net, pts, means, sign, net.p))
    test = ideal_distances(net, data.test.x.float(), means, sign, net.p)
    summary.update({f"{key}_test": v for key, v in test.items()})
    return table, summary
