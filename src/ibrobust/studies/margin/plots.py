"""Figures of Study MARGIN (Lyu & Li, ICLR 2020, Fig. 1-2 and the robustness table analogues).

Each function takes the tidy table that is also written as the figure's CSV:

* ``history``: one row per accepted epoch (:func:`ibrobust.training.margin.epoch_row`);
  ``constant``: the same seed's constant-step run (one row per logged GD step; None without
  ``training.flow``), drawn beside it;
* ``checkpoints``: name, epoch, log10_train_loss, normalized_margin, ...;
* ``robust``: checkpoint, split, norm, eps, robust_acc;
* ``points``: checkpoint, split, normalized_margin (q_i / rho^L), fab_l2, certified_l2.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from ibrobust.plotting.style import color_palette  # noqa: E402
from ibrobust.studies.margin.tables import PAPER_TABLE  # noqa: E402

NORM_TITLE = {"l2": "l2", "linf": "l_inf"}


def checkpoint_colors(names) -> dict[str, tuple]:
    names = list(dict.fromkeys(names))
    return dict(zip(names, color_palette("viridis", len(names)), strict=True))


def checkpoint_marks(checkpoints: pd.DataFrame) -> list[tuple[int, str, str]]:
    """(epoch, label, name whose colour it takes) per marked epoch: checkpoints that share an
    epoch (``final`` when training stopped where model 4 was saved) share one mark, labelled
    with their names joined by " = ", so that no label is printed over another."""
    marks: dict[int, list[str]] = {}
    for _, ck in checkpoints.iterrows():
        if ck["epoch"] >= 1:
            marks.setdefault(int(ck["epoch"]), []).append(str(ck["name"]))
    return [(epoch, " = ".join(names), names[0]) for epoch, names in marks.items()]


def _mark_checkpoints(ax, checkpoints: pd.DataFrame) -> None:
    colors = checkpoint_colors(checkpoints["name"])
    for epoch, label, name in checkpoint_marks(checkpoints):
        ax.axvline(epoch, color=colors[name], ls=":", lw=1)
        ax.text(
            epoch,
            1.0,
            label,
            rotation=90,
            va="top",
            ha="right",
            fontsize=7,
            color=colors[name],
            transform=ax.get_xaxis_transform(),
        )


CONSTANT_COLOR = "C2"  # the constant-step run in every figure


def _fit_from(h: pd.DataFrame) -> pd.DataFrame:
    """The rows from the first one at which the data is fit (positive smoothed margin and
    train accuracy 1: the theorem's regime) on."""
    fit = h[(h["smoothed_normalized_margin"] > 0) & (h["train_acc"] >= 1.0)]
    return h.iloc[0:0] if fit.empty else h[h["epoch"] >= fit["epoch"].iloc[0]]


def plot_margins(
    history: pd.DataFrame, checkpoints: pd.DataFrame, constant: pd.DataFrame | None = None
) -> plt.Figure:
    """Normalized margin q_min / rho^L and smoothed normalized margin vs epoch (log x), the
    loss-based run with its checkpoints and, when given, the constant-step run (one GD step =
    one epoch) in green; with it a third panel: the constant-step run's smoothed margin after
    separation on its own scale (where the flow theorem says it never decreases)."""
    h = history[history["epoch"] >= 1]
    c = None if constant is None else constant[constant["epoch"] >= 1]
    n = 2 if c is None else 3
    fig, axes = plt.subplots(1, n, figsize=(5 * n, 3.6))
    for ax, key, title in (
        (axes[0], "normalized_margin", "normalized margin q_min / rho^L"),
        (axes[1], "smoothed_normalized_margin", "smoothed normalized margin rho^-L log(1/L)"),
    ):
        fit = h["train_acc"] >= 1.0
        ax.plot(h["epoch"], h[key], color="0.6", lw=1, label="loss-based, all epochs")
        ax.plot(h["epoch"][fit], h[key][fit], ".", ms=3, color="C0",
                label="loss-based, data fit (acc 1)")  # fmt: skip
        if c is not None:
            ax.plot(c["epoch"], c[key], color=CONSTANT_COLOR, lw=1.2, label="constant lr (GD)")
        ax.set_xscale("log")
        ax.set_xlabel("epoch (constant lr: GD step)")
        ax.set_title(title, fontsize=10)
        ax.axhline(0, color="k", lw=0.5)
        pos = h[key][h[key] > 0]
        if key == "smoothed_normalized_margin" and len(pos):  # the theorem's regime in view
            ax.set_ylim(-0.1 * pos.max(), 1.15 * pos.max())
        _mark_checkpoints(ax, checkpoints)
    axes[0].legend(fontsize=8, loc="upper left")
    if c is not None:
        ax = axes[2]
        cf = _fit_from(c)
        ax.plot(cf["epoch"], cf["smoothed_normalized_margin"], color=CONSTANT_COLOR, lw=1.2)
        ax.set_xscale("log")
        ax.set_xlabel("GD step")
        ax.set_title("constant lr, after separation: smoothed margin", fontsize=10)
        ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3))
    fig.tight_layout()
    return fig


def plot_loss(
    history: pd.DataFrame, checkpoints: pd.DataFrame, constant: pd.DataFrame | None = None
) -> plt.Figure:
    """log10 train loss vs epoch (log x), with log10 eta on a second axis; the constant-step
    run (when given) in green, its flat log10 lr dashed."""
    h = history[history["epoch"] >= 1]
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    ax.plot(h["epoch"], h["log10_train_loss"], color="C0", label="loss-based lr")
    if constant is not None:
        c = constant[constant["epoch"] >= 1]
        ax.plot(c["epoch"], c["log10_train_loss"], color=CONSTANT_COLOR, label="constant lr (GD)")
    ax.set_xscale("log")
    ax.set_xlabel("epoch (constant lr: GD step)")
    ax.set_ylabel("log10 train loss", color="C0")
    ax.axhline(-300, color="C3", ls="--", lw=0.8)
    ax.text(h["epoch"].min(), -300, "1e-300", color="C3", fontsize=7, va="bottom")
    _mark_checkpoints(ax, checkpoints)
    ax2 = ax.twinx()
    ax2.plot(h["epoch"], h["log10_eta"], color="C1", lw=0.8, alpha=0.7)
    if constant is not None:
        ax2.plot(c["epoch"], c["log10_eta"], color=CONSTANT_COLOR, lw=0.8, ls="--", alpha=0.8)
    ax2.set_ylabel("log10 eta (loss-based: log10 alpha - log10 L)", color="C1")
    ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    return fig


def plot_robust_accuracy(robust: pd.DataFrame) -> plt.Figure:
    """Robust accuracy vs eps (FAB minimal distances) per checkpoint: rows = norm, cols = split."""
    norms = [n for n in NORM_TITLE if n in set(robust["norm"])]
    splits = [s for s in ("train", "test") if s in set(robust["split"])]
    colors = checkpoint_colors(robust["checkpoint"])
    fig, axes = plt.subplots(
        len(norms), len(splits), figsize=(4.5 * len(splits), 3.4 * len(norms)), squeeze=False
    )
    for i, norm in enumerate(norms):
        for j, split in enumerate(splits):
            ax = axes[i][j]
            sub = robust[(robust["norm"] == norm) & (robust["split"] == split)]
            for name, g in sub.groupby("checkpoint", sort=False):
                ax.plot(g["eps"], g["robust_acc"], color=colors[name], label=name)
            ax.set_title(f"{split}, {NORM_TITLE[norm]}", fontsize=10)
            ax.set_xlabel(f"eps ({NORM_TITLE[norm]})")
            ax.set_ylabel("robust accuracy")
            ax.set_ylim(-0.02, 1.02)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_distance_vs_margin(points: pd.DataFrame) -> plt.Figure:
    """Per point: minimal l2 distance (``distance_l2``: FAB, or the PGD-bisection bound where
    FAB does not apply), the PGD-bisection upper bound (cross-check sample) and the certified
    radius q / beta, against the point's normalized margin."""
    colors = checkpoint_colors(points["checkpoint"])
    splits = [s for s in ("train", "test") if s in set(points["split"])]
    fig, axes = plt.subplots(1, len(splits), figsize=(5 * len(splits), 3.8), squeeze=False)
    dist = "distance_l2" if "distance_l2" in points else "fab_l2"
    for ax, split in zip(axes[0], splits, strict=True):
        sub = points[points["split"] == split]
        for name, g in sub.groupby("checkpoint", sort=False):
            c = colors[name]
            ax.scatter(g["normalized_margin"], g[dist], s=8, color=c, label=name)
            if "pgd_l2_upper" in g:
                ax.scatter(g["normalized_margin"], g["pgd_l2_upper"], s=14, marker="^",
                           facecolors="none", edgecolors=c, alpha=0.8)  # fmt: skip
            if g["certified_l2"].notna().any():
                ax.scatter(
                    g["normalized_margin"], g["certified_l2"], s=6, marker="x", color=c, alpha=0.6
                )
        ax.set_xlabel("normalized margin of the point q_i / rho^L")
        ax.set_ylabel("l2 distance (o minimal, ^ PGD bisection, x certified)")
        ax.set_yscale("log")
        ax.set_title(split, fontsize=10)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def summary_markdown(ours: pd.DataFrame) -> str:
    """The paper's checkpoint table beside ours (``ours``: name, epoch, log10_train_loss,
    normalized_margin, and optionally train/test robust accuracies)."""
    lines = [
        "| model | paper epochs | paper train loss | paper normalized margin | our epochs | "
        "our train loss | our normalized margin |",
        "|---|---|---|---|---|---|---|",
    ]
    paper = PAPER_TABLE.set_index("name")
    for _, row in ours.iterrows():
        name = row["name"]
        p = paper.loc[name] if name in paper.index else None
        ptxt = (
            f"{int(p['epoch'])} | 10^{p['log10_train_loss']:.2f} | {p['normalized_margin']:.3g}"
            if p is not None
            else "- | - | -"
        )
        lines.append(
            f"| {name} | {ptxt} | {int(row['epoch'])} | 10^{row['log10_train_loss']:.2f} | "
            f"{row['normalized_margin']:.3g} |"
        )
    return "\n".join(lines) + "\n"
