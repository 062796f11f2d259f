"""Figures of Study PRELU (Min & Vidal, ICML 2024, Fig. 2-3 and Table 1 analogues).

Each function takes the tidy table the workflow also writes as the figure's CSV, so a figure
can be redrawn from its CSV alone. Run keys: dataset, model, optimizer, supervision, seed;
plus ``alpha`` (synthetic noise level) and ``p`` (the pReLU exponent).
"""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ibrobust.plotting.style import color_palette, heatmap, mean_band, set_style  # noqa: E402
from ibrobust.studies.prelu.radii import PRELU_ROBUST_RADIUS, relu_nonrobust_radius  # noqa: E402
from ibrobust.studies.prelu.tables import OFFICIAL_PRETRAINED, PAPER_TABLE1  # noqa: E402

TASK_LABEL = {"binary": "2-class", "multiclass": "10-class"}
NORM_TITLE = {"linf": "l_inf", "l2": "l2", "l1": "l1"}


def p_colors(ps) -> dict[float, tuple]:
    """One colour per exponent p (p = 1, the ReLU net, in red as in the paper)."""
    ps = sorted(set(float(p) for p in ps))
    others = color_palette("viridis", max(len(ps) - 1, 1))
    out, i = {}, 0
    for p in ps:
        if p == 1:
            out[p] = (0.84, 0.15, 0.16)
        else:
            out[p] = others[i]
            i += 1
    return out


MARKERS = ["o", "s", "^", "D", "v", "P"]
LINESTYLES = ["-", "--", "-.", ":"]


def _series_style(i: int) -> dict:
    """Marker and line style of the i-th line, so that lines on top of each other (e.g. p = 3
    and p = 4 both at 1.0) stay distinguishable."""
    return dict(
        marker=MARKERS[i % len(MARKERS)],
        ls=LINESTYLES[i % len(LINESTYLES)],
        mfc="none" if i % 2 else None,
        ms=6,
    )


def _panel_key(df: pd.DataFrame) -> list[str]:
    """Panel by model, and by optimizer / supervision when a study has several."""
    return ["p", "model"] + [c for c in ("optimizer", "supervision") if df[c].nunique() > 1]


def _panel_title(key: tuple, cols: list[str]) -> str:
    parts = [f"p = {key[0]:g} ({key[1]})"] + [str(v) for v in key[2:]]
    return ", ".join(parts)


def _reference_lines(ax, k: int, ymax: float = 1.0) -> None:
    for x, name, ls in (
        (relu_nonrobust_radius(k), f"1/sqrt(K) = {relu_nonrobust_radius(k):.3f}", "--"),
        (PRELU_ROBUST_RADIUS, f"sqrt(2)/2 = {PRELU_ROBUST_RADIUS:.3f}", ":"),
    ):
        ax.axvline(x, color="k", lw=0.9, ls=ls, label=name)


def robust_accuracy_by_alpha(
    df: pd.DataFrame, k: int, spread: str = "sd", style: str = "whitegrid"
) -> plt.Figure:
    """Worst-case robust accuracy vs l2 radius, one panel per model (p), one line per alpha
    (mean and ``spread`` over seeds), with the reference radii 1/sqrt(K) (ReLU) and
    sqrt(2)/2 (pReLU, p > 2) (paper Fig. 3)."""
    set_style(style)
    worst = df[df.attack == "worst"]
    cols = _panel_key(worst)
    panels = sorted(worst.groupby(cols, sort=False), key=lambda kv: kv[0])
    n = len(panels)
    ncol = min(n, 4)
    nrow = math.ceil(n / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.6 * ncol, 3.4 * nrow), squeeze=False)
    alphas = sorted(worst.alpha.unique())
    cmap = plt.get_cmap("viridis")
    colors = {a: cmap(i / max(len(alphas) - 1, 1)) for i, a in enumerate(alphas)}
    for ax, (key, g) in zip(axes.flat, panels, strict=False):
        for a, ga in g.groupby("alpha", sort=True):
            eps = np.array(sorted(ga.eps.unique()))
            stats = np.array([mean_band(ga[ga.eps == e].robust_acc, spread) for e in eps])
            ax.plot(
                eps, stats[:, 0], marker="o", ms=2.5, lw=1.2, color=colors[a], label=f"alpha {a:g}"
            )
            ax.fill_between(eps, stats[:, 1], stats[:, 2], color=colors[a], alpha=0.15)
        _reference_lines(ax, k)
        ax.set_title(_panel_title(key, cols), fontsize=9)
        ax.set_xlabel("l2 radius")
        ax.set_ylabel("robust test accuracy")
        ax.set_ylim(-0.02, 1.02)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 8), fontsize=8,
               bbox_to_anchor=(0.5, -0.02))  # fmt: skip
    fig.suptitle(
        f"l2 PGD on the binary margin, worst case over attacks (mean, {spread} over seeds); "
        f"K = {k}",
        fontsize=10,
    )
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


def _cos_columns(df: pd.DataFrame) -> list[str]:
    centres = sorted(
        (c for c in df.columns if c.startswith("cos_mu")), key=lambda c: int(c[len("cos_mu") :])
    )
    return centres + ["cos_avg_plus", "cos_avg_minus"]


def alignment_fractions(df: pd.DataFrame) -> pd.DataFrame:
    """Per run: active neurons, and the fractions of them best aligned with a single centre
    vs a class average (from the per-neuron alignment table)."""
    keys = ["dataset", "model", "optimizer", "supervision", "seed", "alpha", "p"]
    act = df[df.active.astype(bool)]
    out = act.groupby(keys, sort=False).agg(
        n_active=("neuron", "size"),
        frac_single=("best_kind", lambda s: float((s == "centre").mean())),
    )
    out["frac_average"] = 1.0 - out.frac_single
    return out.reset_index()


def neuron_alignment(
    df: pd.DataFrame,
    figure_alpha: float,
    signs: list[float] | None = None,
    cmap: str = "RdBu_r",
    spread: str = "sd",
    style: str = "whitegrid",
    max_neurons: int = 80,
) -> plt.Figure:
    """Top: cos(w_j, direction) of the *active* neurons (contribution >= active_rel x the
    largest; the others stay near their tiny init) of the first seed at ``figure_alpha``,
    one panel per model, rows sorted by best match; columns the centres mu_k (J+ marked +)
    and the class averages mu_+, mu_- (``signs``: the +-1 class of each centre, for the
    labels). Bottom: fraction of active neurons best aligned with a single centre, vs alpha
    (mean and ``spread`` over seeds)."""
    set_style(style)
    cols = _cos_columns(df)
    k = len(cols) - 2
    first = df[(df.seed == df.seed.min()) & np.isclose(df.alpha, figure_alpha)]
    pcols = _panel_key(first)
    panels = sorted(first.groupby(pcols, sort=False), key=lambda kv: kv[0])
    n = max(len(panels), 1)
    fig = plt.figure(figsize=(3.8 * n + 1.0, 8.4))
    grid = fig.add_gridspec(2, n, height_ratios=[1.6, 1.0], hspace=0.45)
    mark = {1.0: "+", -1.0: "-"}
    xlabels = [f"mu{j}{mark.get(float(signs[j]), '') if signs else ''}" for j in range(k)]
    xlabels += ["avg+", "avg-"]
    for i, (key, g) in enumerate(panels):
        ax = fig.add_subplot(grid[0, i])
        title = _panel_title(key, pcols)
        _alignment_panel(ax, g, cols, xlabels, cmap, max_neurons, i == len(panels) - 1, title)
        ax.set_ylabel("active neurons, by best match" if i == 0 else "")
    _single_centre_fractions(fig.add_subplot(grid[1, :]), df, figure_alpha, spread)
    fig.suptitle(
        f"Neuron alignment at the end of training (top: first seed, alpha = {figure_alpha:g})",
        fontsize=10,
    )
    return fig


def _alignment_panel(ax, g, cols, xlabels, cmap, max_neurons, cbar, title) -> None:
    """Heatmap of the cosines of one panel's active neurons (title: how many are shown)."""
    k = len(cols) - 2
    act = g[g.active.astype(bool)].sort_values(["best", "contribution"], ascending=[True, False])
    shown = act.head(max_neurons)
    if shown.empty:
        ax.text(0.5, 0.5, "no active neuron", ha="center", va="center", transform=ax.transAxes)
    else:
        heatmap(
            shown[cols].to_numpy(),
            ax=ax,
            cmap=cmap,
            vmin=-1,
            vmax=1,
            cbar=cbar,
            xticklabels=xlabels,
            yticklabels=False,
        )
        ax.axvline(k, color="k", lw=1.0)
        ax.tick_params(axis="x", labelsize=6, rotation=90)
    single = float((act.best_kind == "centre").mean()) if len(act) else float("nan")
    ax.set_title(
        f"{title}\n{len(act)}/{len(g)} active"
        + ("" if len(shown) == len(act) else f" ({len(shown)} shown)")
        + f", {single:.0%} on one centre",
        fontsize=8,
    )


def _single_centre_fractions(ax, df: pd.DataFrame, figure_alpha: float, spread: str) -> None:
    """Fraction of active neurons best aligned with one centre vs alpha, per (p, model)."""
    frac = alignment_fractions(df)
    colors = p_colors(frac.p.unique())
    for i, ((p, model), g) in enumerate(frac.groupby(["p", "model"], sort=True)):
        alphas = np.array(sorted(g.alpha.unique()))
        stats = np.array([mean_band(g[g.alpha == a].frac_single, spread) for a in alphas])
        label = f"p = {p:g} ({model})"
        ax.plot(alphas, stats[:, 0], color=colors[float(p)], label=label, **_series_style(i))
        ax.fill_between(alphas, stats[:, 1], stats[:, 2], color=colors[float(p)], alpha=0.15)
    ax.axvline(figure_alpha, color="grey", lw=0.8, ls=":")
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("noise level alpha")
    ax.set_ylabel("active neurons best aligned\nwith a single centre")
    ax.set_title(
        f"1 = every active neuron on one cluster centre (F^(p)); 0 = on a class average (F); "
        f"mean, {spread} over seeds",
        fontsize=9,
    )
    ax.legend(fontsize=8)


def ideal_distances(df: pd.DataFrame, spread: str = "sd", style: str = "whitegrid") -> plt.Figure:
    """Scale-invariant distance of the trained net to F (two averaged neurons) and to F^(p)
    (one neuron per cluster), on probe points of the centres' unit sphere, vs alpha, one
    line per model (mean and ``spread`` over seeds)."""
    set_style(style)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.9), sharey=True)
    colors = p_colors(df.p.unique())
    for ax, col, title in (
        (axes[0], "dist_F", "to F(x) = ReLU(<x, mu_+>) - ReLU(<x, mu_->)"),
        (axes[1], "dist_Fp", "to F^(p)(x) = sum_k sign_k ReLU(<x, mu_k>)^p"),
    ):
        for i, ((p, model), g) in enumerate(df.groupby(["p", "model"], sort=True)):
            alphas = np.array(sorted(g.alpha.unique()))
            stats = np.array([mean_band(g[g.alpha == a][col], spread) for a in alphas])
            label = f"p = {p:g} ({model})"
            ax.plot(alphas, stats[:, 0], color=colors[float(p)], label=label, **_series_style(i))
            ax.fill_between(alphas, stats[:, 1], stats[:, 2], color=colors[float(p)], alpha=0.15)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("noise level alpha")
        ax.set_ylim(-0.02, 1.02)
    axes[0].set_ylabel("min_c ||c f - G|| / ||G|| on the probes")
    axes[1].legend(fontsize=8)
    fig.suptitle(
        f"Distance to the ideal classifiers (0 = equal up to scale; mean, {spread} over seeds)",
        fontsize=10,
    )
    fig.tight_layout()
    return fig


def mnist_robust_accuracy(df: pd.DataFrame, style: str = "whitegrid") -> plt.Figure:
    """Worst-case robust accuracy vs radius, rows = task (2-class, 10-class), columns = norm,
    one line per model (mean over seeds); on 10-class panels the paper's Table 1 (p = 1, 4;
    crosses) and the official pretrained models (p = 1..4; open circles)."""
    set_style(style)
    worst = df[df.attack == "worst"]
    tasks = [t for t in ("binary", "multiclass") if t in set(worst.supervision)]
    norms = [n for n in ("linf", "l2", "l1") if n in set(worst.grid)] or sorted(worst.grid.unique())
    fig, axes = plt.subplots(
        len(tasks), len(norms), figsize=(4.0 * len(norms), 3.5 * len(tasks)), squeeze=False
    )
    colors = p_colors(worst.p.dropna().unique()) if worst.p.notna().any() else {}
    for r, task in enumerate(tasks):
        for c, norm in enumerate(norms):
            ax = axes[r][c]
            g = worst[(worst.supervision == task) & (worst.grid == norm)]
            for (model, opt), gm in g.groupby(["model", "optimizer"], sort=True):
                p = gm.p.iloc[0]
                mean = gm.groupby("eps").robust_acc.mean()
                label = f"p = {p:g} ({model})" if not np.isnan(p) else model
                if g.optimizer.nunique() > 1:
                    label += f", {opt}"
                ax.plot(mean.index, mean.values, marker="o", ms=3,
                        color=colors.get(float(p)) if not np.isnan(p) else None, label=label)  # fmt: skip
            if task == "multiclass":
                for (nm, eps), ref in PAPER_TABLE1.items():
                    if nm != norm:
                        continue
                    for p, v in ref.items():
                        ax.plot(eps, v, "x", ms=8, mew=2, color=colors.get(float(p), "k"))
                    for p, row in OFFICIAL_PRETRAINED.items():
                        ax.plot(eps, row[(nm, eps)], "o", ms=7, mfc="none",
                                color=colors.get(float(p), "grey"))  # fmt: skip
            ax.set_ylim(-0.02, 1.02)
            ax.set_xlabel(f"{NORM_TITLE.get(norm, norm)} radius (pixels in [0, 1])")
            ax.set_ylabel("robust test accuracy")
            ax.set_title(f"{TASK_LABEL.get(task, task)}: {NORM_TITLE.get(norm, norm)}", fontsize=9)
    handles, labels = axes[0][0].get_legend_handles_labels()
    handles += [
        plt.Line2D([], [], ls="", marker="x", color="k", mew=2, label="paper Table 1 (p = 1, 4)"),
        plt.Line2D([], [], ls="", marker="o", mfc="none", color="k", label="official pretrained"),
    ]
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 6), fontsize=8,
               bbox_to_anchor=(0.5, -0.01))  # fmt: skip
    fig.suptitle("MNIST: worst case over each norm's attacks (mean over seeds)", fontsize=10)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return fig
