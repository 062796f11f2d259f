"""Figures of Study PRICE-NN (Tsilivis et al., NeurIPS 2024, Fig. 3, 7, 8 analogues).

Every function takes the tidy DataFrame that is also written as the figure's CSV
(:func:`ibrobust.studies.price_nn.rows.history_rows` / ``final_rows``,
:func:`ibrobust.studies.price_nn.tables.paired_differences`), so a figure can be redrawn from its CSV alone. Accuracies are
drawn in percent.
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

ALGORITHM_LABELS = {"gd": "GD", "sd": "sign descent"}
ALGORITHM_COLORS = {"gd": "tab:blue", "sd": "tab:red"}
CURVE_PANELS = {
    "train_acc": "train acc.",
    "test_acc": "test acc.",
    "robust_train_acc": "robust train acc.",
    "robust_test_acc": "robust test acc.",
}


def accuracy_curves(history: pd.DataFrame, title: str) -> plt.Figure:
    """Rows = training eps (ERM, robust ERM), columns = clean / robust train / test accuracy
    vs epoch (robust: the training PGD at the training eps); one line per algorithm, the
    mean over seeds with the min-max band. A study without runs of this architecture (a
    scale ladder's CNN-only rung) gets one panel that says so."""
    eps_values = sorted(history["eps"].unique())
    if not eps_values:
        fig, ax = plt.subplots(figsize=(4, 1.5))
        ax.axis("off")
        ax.text(0.5, 0.5, "no runs of this architecture in this study", ha="center", va="center")
        ax.set_title(title, fontsize=10)
        return fig
    panels = list(CURVE_PANELS)
    fig, axes = plt.subplots(
        len(eps_values), len(panels), figsize=(3.0 * len(panels), 2.6 * len(eps_values)),
        squeeze=False, sharex=True,
    )  # fmt: skip
    for i, eps in enumerate(eps_values):
        sub = history[history["eps"] == eps]
        for j, col in enumerate(panels):
            ax = axes[i, j]
            for alg, g in sub.groupby("algorithm"):
                by = g.groupby("epoch")[col]
                mean, lo, hi = (100 * by.mean(), 100 * by.min(), 100 * by.max())
                color = ALGORITHM_COLORS.get(alg)
                ax.plot(mean.index, mean.values, color=color, label=ALGORITHM_LABELS.get(alg, alg))
                ax.fill_between(mean.index, lo.values, hi.values, color=color, alpha=0.2, lw=0)
            what = "ERM (eps = 0)" if eps == 0 else f"robust ERM, eps = {eps:g}"
            ax.set_title(f"{what}\n{CURVE_PANELS[col]}", fontsize=8)
            ax.grid(alpha=0.3)
            if i == len(eps_values) - 1:
                ax.set_xlabel("epoch")
            if j == 0:
                ax.set_ylabel("accuracy (%)")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.tight_layout(rect=(0, 0, 1, 0.9))
    fig.suptitle(title, fontsize=10, y=0.99, va="top")
    fig.legend(handles, labels, loc="upper center", ncol=len(labels), frameon=False,
               fontsize=8, bbox_to_anchor=(0.5, 0.95))  # fmt: skip
    return fig


def fc_table(final: pd.DataFrame, metrics: Mapping[str, str]) -> pd.DataFrame:
    """Final accuracy (%) per algorithm and training eps: mean +- std over seeds of each
    metric (columns ``<label> mean`` / ``<label> std``)."""
    rows = []
    for (alg, eps), g in final.groupby(["algorithm", "eps"]):
        row = {"algorithm": ALGORITHM_LABELS.get(alg, alg), "eps": eps, "seeds": len(g)}
        for col, label in metrics.items():
            row[f"{label} mean"] = 100 * g[col].mean()
            row[f"{label} std"] = 100 * g[col].std(ddof=1) if len(g) > 1 else 0.0
        rows.append(row)
    return pd.DataFrame(rows).sort_values(["eps", "algorithm"]).reset_index(drop=True)


def difference_heatmap(diff: pd.DataFrame, title: str, label: str) -> plt.Figure:
    """(n, eps) heatmap of a per-cell mean difference (points), red = first algorithm ahead,
    each cell annotated with the mean and the number of seeds agreeing in sign; a cell whose
    ``fitted`` is False (some run did not fit its training set) is left grey and says so,
    its difference not being a comparison (an empty frame: a figure saying so, e.g. a
    study without a cnn half)."""
    if diff.empty:
        fig, ax = plt.subplots(figsize=(4, 2))
        ax.text(0.5, 0.5, "no runs (the study has no such half)", ha="center", va="center")
        ax.set_axis_off()
        ax.set_title(title, fontsize=9)
        return fig
    ns = sorted(diff["n"].unique())
    eps_values = sorted(diff["eps"].unique())
    grid = np.full((len(ns), len(eps_values)), np.nan)
    notes = [["" for _ in eps_values] for _ in ns]
    for _, r in diff.iterrows():
        i, j = ns.index(r["n"]), eps_values.index(r["eps"])
        if not r.get("fitted", True):
            notes[i][j] = f"{r['mean']:+.1f}\nnot fitted"
            continue
        grid[i, j] = r["mean"]
        seeds = [float(v) for v in str(r["per_seed"]).split()]
        agree = sum(np.sign(v) == np.sign(r["mean"]) for v in seeds)
        notes[i][j] = f"{r['mean']:+.1f}\n{agree} of {len(seeds)} seeds"
    lim = max(1.0, float(np.nanmax(np.abs(grid)))) if np.isfinite(grid).any() else 1.0
    fig, ax = plt.subplots(figsize=(1.3 * len(eps_values) + 2.2, 0.9 * len(ns) + 1.6))
    cmap = plt.get_cmap("RdBu_r").with_extremes(bad="0.85")  # grey: cells not compared
    masked = np.ma.masked_invalid(grid)
    im = ax.imshow(masked, cmap=cmap, vmin=-lim, vmax=lim, origin="lower", aspect="auto")
    for i in range(len(ns)):
        for j in range(len(eps_values)):
            ax.text(j, i, notes[i][j], ha="center", va="center", fontsize=8)
    ax.set_xticks(range(len(eps_values)), [f"{e:g}" for e in eps_values])
    ax.set_yticks(range(len(ns)), [str(n) for n in ns])
    ax.set_xlabel("training eps (l_inf)")
    ax.set_ylabel("n (training images)")
    fig.colorbar(im, ax=ax, label=label)
    ax.set_title(f"{title}\ncell: mean over seeds, and how many seeds share its sign", fontsize=9)
    fig.tight_layout()
    return fig
