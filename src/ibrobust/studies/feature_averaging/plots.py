"""Figures of the feature-averaging study (Li et al., ICLR 2025, Figs. 1-3 analogues); the cosine
heatmaps, which any network study can list, are :mod:`ibrobust.plotting.cosines`.

Every function takes the tidy DataFrame that the workflow also writes as the figure's
CSV, so a figure can be redrawn from its CSV alone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ibrobust.plotting.style import (  # noqa: E402
    SUPERVISION_COLORS,
    label_color,
    mean_band,
    set_style,
)
from ibrobust.studies.feature_averaging.scaling import loglog_slope  # noqa: E402

COMBO = ["dataset", "model", "optimizer"]


def _labels(df: pd.DataFrame, model_labels: Mapping[str, str | None]) -> list[str]:
    """Each row's curve: its model's kind label (e.g. the robust reference), else its
    supervision."""
    return [model_labels.get(m) or s for m, s in zip(df.model, df.supervision, strict=True)]


def lambda_trajectories(df: pd.DataFrame, fa: pd.DataFrame, style: str = "whitegrid") -> plt.Figure:
    """lambda_j(t) of the first neuron of head 0 per supervision, and the mean FA index."""
    set_style(style)
    sups = list(df.supervision.unique())
    fig, axes = plt.subplots(1, len(sups) + 1, figsize=(4.5 * (len(sups) + 1), 3.8), squeeze=False)
    for ax, sup in zip(axes[0], sups, strict=False):
        g = df[(df.supervision == sup) & (df.neuron == 0)]
        for j, gj in g.groupby("feature"):
            pos = gj.feature_sign.iloc[0] > 0
            ax.plot(
                gj.step,
                gj["lambda"],
                ls="-" if pos else "--",
                marker=".",
                ms=3,
                label=f"mu_{j}{'+' if pos else '-'}",
            )
        ax.set_xscale("log")
        ax.set_xlabel("GD step")
        ax.set_ylabel("lambda_j (neuron 0, head 0)")
        ax.set_title(f"{sup}: {g.dataset.iloc[0]}", fontsize=9)
        ax.legend(fontsize=6, ncol=2)
    ax = axes[0][-1]
    for (sup, *_), g in fa.groupby(["supervision"] + COMBO, sort=False):
        ax.plot(
            g.step, g.fa_index_mean, marker="o", ms=3, color=SUPERVISION_COLORS.get(sup), label=sup
        )
    ax.set_xscale("log")
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel("GD step")
    ax.set_ylabel("FA index: 2nd / largest same-class lambda")
    ax.set_title("~1 = feature averaging, ~0 = decoupled", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def robust_curves(
    df: pd.DataFrame,
    model_labels: Mapping[str, str | None],
    d: int,
    k: int,
    spread: str = "sd",
    style: str = "whitegrid",
) -> plt.Figure:
    """Robust accuracy vs l2 radius, one row per binary readout (column ``readout``; the
    2-class and reference nets, which have one score, repeat in each row): the worst case
    over attacks of that readout (left) and every attack (right), mean and spread over
    seeds, one curve per supervision and per model kind label (``model_labels``: model ->
    label or None, e.g. the robust reference's)."""
    set_style(style)
    df = df.assign(label=_labels(df, model_labels))
    if "readout" not in df:
        df = df.assign(readout="sum")
    readouts = list(dict.fromkeys(df.readout))
    fig, grid = plt.subplots(len(readouts), 2, figsize=(11, 4.4 * len(readouts)), squeeze=False)
    for axes, ro in zip(grid, readouts, strict=True):
        _robust_row(axes, df[df.readout == ro], d, k, spread)
        axes[0].set_title(
            f"readout {ro}: worst case over attacks (mean, {spread} over seeds); d={d}, k={k}",
            fontsize=9,
        )
        axes[1].set_title(f"readout {ro}: each attack (mean over seeds)", fontsize=9)
    fig.tight_layout()
    return fig


def _robust_row(axes, df: pd.DataFrame, d: int, k: int, spread: str) -> None:
    worst = df[df.attack == "worst"]
    for lab, g in worst.groupby("label", sort=False):
        stats = np.array([mean_band(gg.robust_acc, spread) for _, gg in g.groupby("eps")])
        eps = np.array(sorted(g.eps.unique()))
        axes[0].plot(eps, stats[:, 0], marker="o", ms=3, color=label_color(lab), label=lab)
        axes[0].fill_between(eps, stats[:, 1], stats[:, 2], color=label_color(lab), alpha=0.2)
    ls = {"pgd_margin": "-", "pgd_ce": "--", "universal": ":"}
    for (lab, att), g in df[df.attack != "worst"].groupby(["label", "attack"], sort=False):
        mean = g.groupby("eps").robust_acc.mean()
        axes[1].plot(
            mean.index,
            mean.values,
            ls=ls.get(att, "-."),
            color=label_color(lab),
            label=f"{lab}: {att}",
        )
    for ax in axes:
        for x, name in ((math.sqrt(d / k), "sqrt(d/k)"), (math.sqrt(d), "sqrt(d)")):
            if x <= df.eps.max():
                ax.axvline(x, color="grey", lw=0.8, ls=":")
                ax.text(x, 1.02, name, ha="center", fontsize=7, color="grey")
        ax.axhline(0.5, color="grey", lw=0.5)
        ax.set_xlabel("l2 radius eps")
        ax.set_ylabel("robust test accuracy")
        ax.set_ylim(-0.02, 1.08)
    # legends below the panels: inside, they covered the binary curves near eps = sqrt(d/k)
    for ax, size in ((axes[0], 8), (axes[1], 7)):
        ax.legend(fontsize=size, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.14))


READOUT_STYLE = {"sum": "-", "argmax": "--", "log_odds": ":"}
MARKER = {"binary": "o", "multiclass": "s"}  # a model kind's label: "^"


def critical_radius_scaling(df: pd.DataFrame, style: str = "whitegrid") -> plt.Figure:
    """Critical radius (50% worst-case robust accuracy) vs each swept key (one panel per
    ``key``), one line per (supervision, readout) with its fitted log-log slope in the
    legend, against sqrt(d/k), sqrt(d)/2 and sqrt(d/2) of the swept datasets."""
    set_style(style)
    keys = list(dict.fromkeys(df.key))
    fig, axes = plt.subplots(1, len(keys), figsize=(6.2 * len(keys), 4.6), squeeze=False)
    for ax, key in zip(axes[0], keys, strict=True):
        sub = df[df.key == key]
        first = sub.readout.iloc[0]  # 2-class and reference nets: one score, one line
        one = sub[(sub.label == "multiclass") | (sub.readout == first)]
        for (lab, ro), g in one.groupby(["label", "readout"], sort=False):
            s = g.groupby("value").critical_radius.agg(["mean", "std"]).reset_index()
            slope = loglog_slope(s.value, s["mean"])
            ax.errorbar(
                s.value,
                s["mean"],
                yerr=s["std"].fillna(0),
                marker=MARKER.get(lab, "^"),
                ls=READOUT_STYLE.get(ro, "-.") if lab == "multiclass" else "-",
                capsize=3,
                color=label_color(lab),
                label=f"{lab}, {ro if lab == 'multiclass' else 'one score'} (slope {slope:.2f})",
            )
        th = sub.drop_duplicates("value").sort_values("value")
        for col, name, lsty in (
            ("sqrt_d_over_k", "sqrt(d/k)", (0, (4, 2))),
            ("half_sqrt_d", "sqrt(d)/2", (0, (1, 2))),
            ("sqrt_half_d", "sqrt(d/2)", (0, (6, 2, 1, 2))),
        ):
            ax.plot(th.value, th[col], color="k", lw=1, ls=lsty, label=name)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 3.0, 5.0)))
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
            axis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xticks(th.value.to_numpy(float))
        ax.set_xlabel(key)
        ax.set_ylabel("critical l2 radius (50% worst-case robust acc.)")
        fixed = "d" if key != "d" else "k"
        ax.set_title(f"critical radius vs {key} at {fixed}={int(th[fixed].iloc[0])}", fontsize=9)
        ax.legend(fontsize=6.5, ncol=2)
    fig.tight_layout()
    return fig
