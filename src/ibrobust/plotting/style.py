"""The three things the figures took from seaborn, in matplotlib + numpy alone, and the
colours and bands the studies' figures share.

``import seaborn`` costs more CPU than matplotlib and pandas together (it imports
scipy.stats), and every figure job paid it for a style, a palette and a heatmap. These are
the subsets the figures use, drawn as seaborn 0.13.2 draws them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib
import matplotlib.colors
import matplotlib.style
import numpy as np
import pandas as pd

STYLES = ("white", "whitegrid", "darkgrid", "ticks")
# one colour per supervision; a model named by its kind's label instead (capability ``label``
# of ibrobust.kinds.MODELS, e.g. the robust reference) gets LABELLED
SUPERVISION_COLORS = {"binary": "tab:red", "multiclass": "tab:blue"}
LABELLED = "tab:green"


def label_color(label: str) -> str:
    """The colour of a curve labelled by a supervision or by a model kind's label."""
    return SUPERVISION_COLORS.get(label, LABELLED)


def mean_band(values: pd.Series, how: str) -> tuple[float, float, float]:
    """(mean, low, high) of the band drawn around a mean over seeds: ``how`` ``minmax`` is
    the range, anything else (a study's ``plots.spread``: ``sd``) one sample standard
    deviation either side (0 for a single value)."""
    m = values.mean()
    if how == "minmax":
        return m, values.min(), values.max()
    s = values.std(ddof=1) if len(values) > 1 else 0.0
    return m, m - s, m + s


def set_style(style: str) -> None:
    """Apply matplotlib's bundled copy of seaborn's style sheet ``seaborn-v0_8-<style>``
    (global rcParams, as ``seaborn.set_style`` did). The sheet turns legend frames off,
    seaborn 0.13 leaves them on: they stay on, so legends over lines stay readable."""
    if style not in STYLES:
        raise ValueError(f"style {style!r}: expected one of {', '.join(STYLES)}")
    matplotlib.style.use([f"seaborn-v0_8-{style}", {"legend.frameon": True}])


def color_palette(name: str, n: int) -> list[tuple[float, float, float]]:
    """``n`` RGB colours of the matplotlib colormap ``name`` as ``seaborn.color_palette``
    gives them: a qualitative map (a short list of ``.colors``, e.g. tab10) in order,
    cycling past its end; a continuous one (e.g. viridis, 256 entries) sampled at n evenly
    spaced points strictly inside [0, 1], its extremes left out."""
    cmap = matplotlib.colormaps[name]
    colors = getattr(cmap, "colors", None)
    if colors is not None and cmap.N < 256:
        rgb = [matplotlib.colors.to_rgb(c) for c in colors]
        return [rgb[i % len(rgb)] for i in range(n)]
    return [tuple(float(v) for v in c[:3]) for c in cmap(np.linspace(0, 1, n + 2)[1:-1])]


def _luminance(rgba: np.ndarray) -> np.ndarray:
    """Relative luminance (WCAG) of RGBA rows, as seaborn picks an annotation's colour."""
    rgb = rgba[:, :3]
    rgb = np.where(rgb <= 0.03928, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    return rgb @ np.array([0.2126, 0.7152, 0.0722])


def _limits(values: np.ndarray, vmin, vmax, center):
    """Colour limits: given ones kept; with ``center``, missing ones symmetric about it."""
    if center is None:
        return vmin, vmax
    if vmin is not None and vmax is not None:
        if not np.isclose(vmax - center, center - vmin):
            raise ValueError(f"center={center} is not midway between vmin={vmin}, vmax={vmax}")
        return vmin, vmax
    finite = values[np.isfinite(values)]
    lo = vmin if vmin is not None else (finite.min() if finite.size else center)
    hi = vmax if vmax is not None else (finite.max() if finite.size else center)
    half = max(hi - center, center - lo)
    return center - half, center + half


def _ticks(axis, n: int, labels: Sequence[str] | bool | None) -> None:
    """Ticks at cell centres labelled ``labels`` (None/True: 0..n-1; False: none)."""
    if labels is False:
        axis.set_ticks([])
        return
    labels = range(n) if labels is None or labels is True else labels
    axis.set_ticks(np.arange(n) + 0.5, [str(s) for s in labels])


def heatmap(
    data,
    ax,
    *,
    cmap,
    vmin: float | None = None,
    vmax: float | None = None,
    center: float | None = None,
    annot: bool = False,
    fmt: str = ".2g",
    xticklabels: Sequence[str] | bool | None = None,
    yticklabels: Sequence[str] | bool | None = None,
    cbar: bool = True,
    cbar_kws: Mapping | None = None,
    suffix=None,
):
    """Matrix ``data`` as cells [j, j+1] x [i, i+1] on ``ax``, row 0 on top (seaborn's
    layout, so callers draw lines at cell edges in data units); NaN cells are left blank.
    ``annot`` writes each value with ``fmt`` in its cell, dark on light cells and white on
    dark ones; ``cbar`` adds a colorbar (``cbar_kws`` go to ``Figure.colorbar``, e.g.
    label); ``suffix``, a matrix of strings like ``data``, is appended to each annotation
    (e.g. a footnote mark). Returns the QuadMesh."""
    values = np.asarray(data, dtype=float)
    if values.ndim != 2:
        raise ValueError(f"heatmap data must be 2-D, got shape {values.shape}")
    vmin, vmax = _limits(values, vmin, vmax, center)
    mesh = ax.pcolormesh(np.ma.masked_invalid(values), cmap=cmap, vmin=vmin, vmax=vmax)
    rows, cols = values.shape
    ax.set(xlim=(0, cols), ylim=(rows, 0))
    for spine in ax.spines.values():
        spine.set_visible(False)
    _ticks(ax.xaxis, cols, xticklabels)
    _ticks(ax.yaxis, rows, yticklabels)
    ax.grid(False)
    if cbar:
        colorbar = ax.figure.colorbar(mesh, ax=ax, **(cbar_kws or {}))
        colorbar.outline.set_linewidth(0)
    if annot:
        light = _luminance(mesh.to_rgba(values).reshape(-1, 4)).reshape(values.shape) > 0.408
        for (i, j), v in np.ndenumerate(values):
            if np.isfinite(v):
                color = ".15" if light[i, j] else "w"
                text = format(v, fmt) + (str(suffix[i][j]) if suffix is not None else "")
                ax.text(j + 0.5, i + 0.5, text, color=color, ha="center", va="center")
    return mesh
