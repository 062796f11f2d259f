"""Cosine heatmaps of a model's neurons (or head rows) against the class features (rule
``cosine_figure``, any network study that lists ``cosine_heatmaps``; the numbers are
:func:`ibrobust.analysis.cosines.neuron_cosines`). Li et al. (ICLR 2025), Fig. 1 on
clusters, Fig. 2/3 on images.

Takes the tidy table the workflow also writes as the figure's CSV, so the figure can be
redrawn from its CSV alone.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ibrobust.plotting.style import heatmap, set_style  # noqa: E402

PANEL = ["dataset", "model", "optimizer", "supervision"]  # one heatmap per run combination


def cosine_heatmaps(df: pd.DataFrame, cmap: str = "RdBu_r", style: str = "whitegrid") -> plt.Figure:
    """Neurons x features cos(w_r, mu_j), one panel per (dataset/model/optimizer, supervision)."""
    set_style(style)
    panels = list(df.groupby(PANEL, sort=False))
    ncol = len(panels)
    fig, axes = plt.subplots(1, ncol, figsize=(4.2 * ncol, 5.0), squeeze=False)
    for ax, (key, g) in zip(axes[0], panels, strict=True):
        mat = g.pivot_table(
            index=["head", "neuron"], columns="feature", values="cosine"
        ).sort_index()
        heatmap(
            mat.to_numpy(),
            ax=ax,
            cmap=cmap,
            vmin=-1,
            vmax=1,
            cbar=ax is axes[0][-1],
            xticklabels=[
                f"{j}{'+' if s > 0 else '-'}"
                for j, s in g.groupby("feature")["feature_sign"].first().items()
            ],
            yticklabels=False,
        )
        same = g[g.head_sign == g.feature_sign].cosine.mean()
        ax.set_title(f"{key[-1]} supervision\n{key[0]}: same-class mean cos {same:.2f}", fontsize=9)
        source = g["features"].iloc[0] if "features" in g else "cluster means"
        ax.set_xlabel(
            "feature mu_j (J+ marked +)"
            if source == "cluster means"
            else "class j: centred mean embedding (J+ marked +)"
        )
        ax.set_ylabel(
            "head (logit) rows" if source != "cluster means" else "neurons, grouped by head"
        )
        heads = mat.index.get_level_values(0)
        for b in np.nonzero(np.diff(heads))[0]:
            ax.axhline(b + 1, color="k", lw=0.5)
    images = "features" in df and (df["features"] != "cluster means").any()
    fig.suptitle(
        ("cos(head row h, class feature j)" if images else "cos(w_r, mu_j)")
        + ": binary training averages a class's features; k-class training decouples them",
        fontsize=10,
    )
    fig.tight_layout()
    return fig
