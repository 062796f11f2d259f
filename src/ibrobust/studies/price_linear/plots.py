"""Figures of Study PRICE-LIN (Tsilivis et al., NeurIPS 2024, Fig. 1 bottom, 2, 5, 6 analogues).

Every function takes the tidy DataFrame that the workflow also writes as the figure's
CSV, so a figure can be redrawn from its CSV alone. Gaps are accuracy differences
train - test, drawn in percentage points.
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ibrobust.plotting.style import color_palette, heatmap, set_style  # noqa: E402

GAP_NAMES = {"robust_gap": "robust gap", "clean_gap": "clean gap"}


def _fraction_title(f: float) -> str:
    return "ERM (eps = 0)" if f == 0 else f"robust ERM, eps = {f:g} gamma*"


def _spread(g: pd.core.groupby.DataFrameGroupBy, col: str, spread: str):
    mean = g[col].mean()
    if spread == "minmax":
        return mean, g[col].min(), g[col].max()
    sd = g[col].std().fillna(0.0)
    return mean, mean - sd, mean + sd


def _header(fig: plt.Figure, ax: plt.Axes, title: str, ncol: int) -> None:
    """Suptitle on top, the legend of ``ax`` below it, panels below both (no overlap)."""
    handles, labels = ax.get_legend_handles_labels()
    height = fig.get_size_inches()[1]
    rows = -(-len(labels) // max(ncol, 1))
    top = 1 - (0.45 + 0.25 * rows) / height
    fig.tight_layout(rect=(0, 0, 1, top))
    fig.suptitle(title, fontsize=10, y=1 - 0.05 / height, va="top")
    fig.legend(
        handles,
        labels,
        loc="upper center",
        ncol=ncol,
        frameon=False,
        fontsize=8,
        bbox_to_anchor=(0.5, 1 - 0.35 / height),
    )


def gap_vs_n(
    df: pd.DataFrame,
    dataset_labels: Mapping[str, str],
    optimizer_labels: Mapping[str, str],
    *,
    gap: str = "robust_gap",
    spread: str = "sd",
    style: str = "whitegrid",
) -> plt.Figure:
    """Generalisation gap vs n: rows = regimes, columns = ERM then robust ERM per eps.

    ``df``: one row per problem with dataset, optimizer, n, draw, eps_fraction and ``gap``
    (accuracy train - test at the training eps). Lines are means over draws with a band of
    one sd (``spread="sd"``) or min..max (``"minmax"``). With a ``converged`` column, open
    markers flag the settings where some draw did not reach the loss threshold.
    """
    set_style(style)
    datasets = [d for d in dataset_labels if d in set(df.dataset)]
    fractions = sorted(df.eps_fraction.unique())
    optimizers = [o for o in optimizer_labels if o in set(df.optimizer)]
    colors = dict(zip(optimizers, color_palette("tab10", len(optimizers)), strict=True))
    fig, axes = plt.subplots(
        len(datasets),
        len(fractions),
        figsize=(2.9 * len(fractions), 2.5 * len(datasets)),
        squeeze=False,
        sharex=True,
        sharey=True,
    )
    for i, ds in enumerate(datasets):
        for j, f in enumerate(fractions):
            ax = axes[i][j]
            sub = df[(df.dataset == ds) & (df.eps_fraction == f)]
            for opt in optimizers:
                _gap_line(ax, sub, opt, gap, spread, colors[opt], optimizer_labels[opt])
            ax.set_xscale("log", base=2)
            if i == 0:
                ax.set_title(_fraction_title(f), fontsize=9)
            if j == 0:
                regime, _, kinds = dataset_labels[ds].partition(": ")
                ax.set_ylabel(f"{regime}\n{kinds}\n{GAP_NAMES.get(gap, gap)} (points)", fontsize=8)
            if i == len(datasets) - 1:
                ax.set_xlabel("n (training points)")
    _header(
        fig,
        axes[0][0],
        f"{GAP_NAMES.get(gap, gap)} (train - test accuracy at the training eps) vs n; "
        f"mean over draws, band: {spread}; open marker: some draw stopped at max_iters "
        "above the loss threshold",
        ncol=len(optimizers),
    )
    return fig


def _gap_line(ax, sub: pd.DataFrame, opt: str, gap: str, spread: str, color, label: str) -> None:
    """Mean ``gap`` vs n of one optimizer with its band; open markers where some draw did
    not converge."""
    g = sub[sub.optimizer == opt].groupby("n")
    if not len(g):
        return
    mean, lo, hi = _spread(g, gap, spread)
    ns = mean.index.to_numpy()
    ax.plot(ns, 100 * mean, marker="o", ms=3, color=color, label=label)
    ax.fill_between(ns, 100 * lo, 100 * hi, color=color, alpha=0.15, lw=0)
    if "converged" in sub:
        open_ = (g["converged"].mean() < 1).to_numpy()  # some draw hit max_iters
        ax.plot(
            ns[open_], 100 * mean.to_numpy()[open_], ls="none", marker="o", ms=5, mfc="white",
            mec=color,
        )  # fmt: skip


def gap_difference_heatmap(
    table: pd.DataFrame,
    dataset_labels: Mapping[str, str],
    *,
    first: str,
    second: str,
    labels: Mapping[str, str] | None = None,
    gap: str = "robust_gap",
    cmap: str = "RdBu_r",
    style: str = "white",
) -> plt.Figure:
    """Regime x eps heatmap of mean over n of gap_first - gap_second (percentage points);
    ``labels`` maps optimizer names to display names.

    ``table``: columns dataset, eps_fraction, difference (as from
    :func:`ibrobust.studies.price_linear.tables.gap_difference`). Positive (red) = the second
    algorithm generalises better. A cell whose mean includes runs stopped at their iteration
    cap (``unconverged_pairs`` > 0) is marked ``*k`` (k such pairs), said under the title.
    """
    set_style(style)
    datasets = [d for d in dataset_labels if d in set(table.dataset)]
    mat = table.pivot(index="dataset", columns="eps_fraction", values="difference").loc[datasets]
    vals = 100 * mat.to_numpy()
    vmax = float(np.nanmax(np.abs(vals))) if np.isfinite(vals).any() else 1.0
    capped = _capped(table, datasets, mat.columns)
    fig, ax = plt.subplots(figsize=(1.1 * mat.shape[1] + 3.5, 0.6 * mat.shape[0] + 1.8))
    heatmap(
        vals,
        ax=ax,
        cmap=cmap,
        vmin=-max(vmax, 1e-9),
        vmax=max(vmax, 1e-9),
        center=0.0,
        annot=True,
        fmt="+.1f",
        xticklabels=[f"{f:g}" for f in mat.columns],
        yticklabels=[dataset_labels[d] for d in datasets],
        cbar_kws={"label": "points"},
        suffix=[[f" *{c}" if c > 0 else "" for c in row] for row in capped],
    )
    ax.set_xlabel("eps / gamma* (0 = ERM)")
    ax.set_ylabel("")
    a, b = (labels or {}).get(first, first), (labels or {}).get(second, second)
    name = GAP_NAMES.get(gap, gap)
    note = (
        "\n*k: k (n, draw) pairs include a run stopped at its iteration cap" if capped.any() else ""
    )
    ax.set_title(
        f"mean over n of {name}({a}) - {name}({b})\n> 0: {b} generalises better{note}",
        fontsize=10,
    )
    fig.tight_layout()
    return fig


def _capped(table: pd.DataFrame, datasets: list[str], fractions) -> np.ndarray:
    """Per heatmap cell, its (n, draw) pairs with a run stopped at the cap (0 without the
    table's ``unconverged_pairs``)."""
    if "unconverged_pairs" not in table:
        return np.zeros((len(datasets), len(fractions)), dtype=int)
    mat = table.pivot(index="dataset", columns="eps_fraction", values="unconverged_pairs")
    return mat.loc[datasets, list(fractions)].fillna(0).to_numpy(dtype=int)


def cosine_vs_fraction(
    df: pd.DataFrame,
    dataset_labels: Mapping[str, str],
    optimizer_labels: Mapping[str, str],
    *,
    spread: str = "sd",
    style: str = "whitegrid",
) -> plt.Figure:
    """cos(w_a, w_b) between algorithms' solutions vs eps / gamma*, one panel per regime.

    ``df``: rows dataset, n, draw, eps_fraction, optimizer_a, optimizer_b, cosine. Means
    over n and draws; fractions on evenly spaced positions (0.9 and 0.99 stay apart).
    """
    set_style(style)
    datasets = [d for d in dataset_labels if d in set(df.dataset)]
    fractions = sorted(df.eps_fraction.unique())
    pos = {f: i for i, f in enumerate(fractions)}
    pairs = list(dict.fromkeys(zip(df.optimizer_a, df.optimizer_b, strict=True)))
    colors = dict(zip(pairs, color_palette("tab10", len(pairs)), strict=True))
    fig, axes = plt.subplots(
        1, len(datasets), figsize=(3.6 * len(datasets), 3.4), squeeze=False, sharey=True
    )
    for ax, ds in zip(axes[0], datasets, strict=True):
        sub = df[df.dataset == ds]
        for a, b in pairs:
            g = sub[(sub.optimizer_a == a) & (sub.optimizer_b == b)].groupby("eps_fraction")
            mean, lo, hi = _spread(g, "cosine", spread)
            x = [pos[f] for f in mean.index]
            label = f"{optimizer_labels.get(a, a)} vs {optimizer_labels.get(b, b)}"
            ax.plot(x, mean, marker="o", ms=3, color=colors[(a, b)], label=label)
            ax.fill_between(x, lo, hi, color=colors[(a, b)], alpha=0.12, lw=0)
        ax.set_xticks(range(len(fractions)), [f"{f:g}" for f in fractions])
        ax.set_xlabel("eps / gamma*")
        ax.set_title(dataset_labels[ds], fontsize=9)
        ax.set_ylim(min(0.0, float(df.cosine.min())) - 0.02, 1.02)
    axes[0][0].set_ylabel("cosine between solutions")
    _header(
        fig,
        axes[0][0],
        f"Cosine between the algorithms' solutions vs eps / gamma* "
        f"(mean over n and draws, band: {spread})",
        ncol=min(len(pairs), 3),
    )
    return fig
