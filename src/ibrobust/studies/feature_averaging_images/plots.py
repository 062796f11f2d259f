"""Figures of Study FA-IMAGES (Li et al., ICLR 2025, Fig. 2/3 analogues on real images).

Each function takes the tidy table the workflow also writes as the figure's CSV.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ibrobust.plotting.style import SUPERVISION_COLORS, mean_band, set_style  # noqa: E402

LABEL = {"binary": "2-class training", "multiclass": "k-class training"}


def robust_curves_by_dataset(
    df: pd.DataFrame, spread: str = "sd", style: str = "whitegrid"
) -> plt.Figure:
    """Robust accuracy of the binary task vs l2 radius, one row per dataset and binary
    readout (column ``readout``; 2-class nets repeat under each): the worst case
    over attacks (mean and ``spread`` over seeds) and each attack (mean over seeds)."""
    set_style(style)
    if "readout" not in df:
        df = df.assign(readout="sum")
    panels = list(dict.fromkeys(zip(df.dataset, df.readout, strict=True)))
    fig, axes = plt.subplots(len(panels), 2, figsize=(11, 3.9 * len(panels)), squeeze=False)
    ls = ["-", "--", ":", "-."]
    for row, (ds, ro) in zip(axes, panels, strict=True):
        d = df[(df.dataset == ds) & (df.readout == ro)]
        for sup, g in d[d.attack == "worst"].groupby("supervision", sort=False):
            eps = np.array(sorted(g.eps.unique()))
            stats = np.array([mean_band(g[g.eps == e].robust_acc, spread) for e in eps])
            color = SUPERVISION_COLORS.get(sup)
            row[0].plot(eps, stats[:, 0], marker="o", ms=3, color=color, label=LABEL.get(sup, sup))
            row[0].fill_between(eps, stats[:, 1], stats[:, 2], color=color, alpha=0.2)
        attacks = [a for a in dict.fromkeys(d.attack) if a != "worst"]
        for (sup, att), g in d[d.attack != "worst"].groupby(["supervision", "attack"], sort=False):
            mean = g.groupby("eps").robust_acc.mean()
            row[1].plot(
                mean.index,
                mean.values,
                ls=ls[attacks.index(att) % len(ls)],
                color=SUPERVISION_COLORS.get(sup),
                label=f"{LABEL.get(sup, sup)}: {att}",
            )
        for ax in row:
            ax.axhline(0.5, color="grey", lw=0.5)
            ax.set_xlabel("l2 radius eps (pixels in [0, 1])")
            ax.set_ylabel("robust test accuracy (binary task)")
            ax.set_ylim(-0.02, 1.02)
        row[0].set_title(
            f"{ds}, readout {ro}: worst case over attacks (mean, {spread} over seeds)", fontsize=9
        )
        row[1].set_title(f"{ds}, readout {ro}: each attack (mean over seeds)", fontsize=9)
        row[0].legend(fontsize=8)
        row[1].legend(fontsize=6)
    fig.tight_layout()
    return fig
