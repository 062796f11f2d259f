"""Study FA's figure of the margin-vs-gradient view (rule ``fa_margin_gradient``; the per-point
numbers are :mod:`ibrobust.analysis.margin_gradient`, shared).

Takes the tidy per-point table the workflow also writes as the figure's CSV (columns
``label``, ``readout``, ``seed`` and :data:`~ibrobust.analysis.margin_gradient.POINT_COLUMNS`).
"""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ibrobust.plotting.style import label_color, set_style  # noqa: E402

MARKERS = {"sum": "o", "log_odds": "^", "argmax": "s"}


def margin_gradient_figure(
    points: pd.DataFrame, d: int, k: int, style: str = "whitegrid"
) -> plt.Figure:
    """Left: margin q vs ||grad_x q|| per point. Right: the first-order distance q/||grad||
    vs the attack's breaking radius (y = x dashed; sqrt(d/k) and sqrt(d)/2 dotted). One
    colour per training (label), one marker per readout; points correct at radius 0."""
    set_style(style)
    ok = points[points["margin"] > 0]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4))
    top = float(ok["breaking_radius"][np.isfinite(ok["breaking_radius"])].max() or 1.0)
    for (label, readout), g in ok.groupby(["label", "readout"], sort=False):
        kw = dict(
            s=6,
            alpha=0.35,
            color=label_color(label),
            marker=MARKERS.get(readout, "x"),
            label=f"{label}, {readout}" if label == "multiclass" else label,
        )
        axes[0].scatter(g["grad_norm"], g["margin"], **kw)
        br = g["breaking_radius"].where(np.isfinite(g["breaking_radius"]), top * 1.05)
        axes[1].scatter(br, g["first_order"].clip(upper=top * 2), **kw)
    axes[0].set_xscale("log")
    axes[0].set_yscale("log")
    axes[0].set_xlabel("||grad_x q||_2")
    axes[0].set_ylabel("margin q = y F(x)")
    axes[0].set_title("margin vs input-gradient norm, per point", fontsize=9)
    lim = top * 1.1
    axes[1].plot([0, lim], [0, lim], "k--", lw=0.8, label="first order = breaking")
    for r, name in ((math.sqrt(d / k), "sqrt(d/k)"), (math.sqrt(d) / 2, "sqrt(d)/2")):
        axes[1].axvline(r, color="grey", ls=":", lw=0.8)
        axes[1].text(r, lim * 0.02, name, fontsize=7, rotation=90, va="bottom")
    axes[1].set_xlabel("breaking radius (worst case over attacks, radius grid)")
    axes[1].set_ylabel("first-order distance q / ||grad_x q||")
    axes[1].set_title("points never broken on the grid drawn at the right edge", fontsize=9)
    for ax in axes:
        ax.legend(fontsize=7, markerscale=2)
    fig.suptitle(f"Margin vs input gradient per test point (d={d}, k={k})", fontsize=10)
    fig.tight_layout()
    return fig
