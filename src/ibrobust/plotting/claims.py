"""The claims ledger at a glance: one row per claim that ran, its interval against its rule.

Each row has its own x axis (claims measure different things): the weak region shaded
light, the strong region dark, our mean as a dot and its interval as a bar, coloured by the
verdict. A row whose values and thresholds are all positive and span more than two
decades is drawn on a log axis. Reads only the ledger table (``ibrobust.ledger.table``:
columns ``ci_lo``/``ci_hi`` and the rule's ``strong_lo``... ``weak_hi``).
"""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from ibrobust.plotting.colors import VERDICT_COLORS  # noqa: E402

JUDGED = ("holds", "holds weaker", "inconclusive", "does not hold")  # drawn: they have a number
STRONG, WEAK = "#b7e4c7", "#eef7f0"
ROW_HEIGHT = 0.42  # inches per claim


def _finite(values) -> list[float]:
    return [float(v) for v in values if v is not None and math.isfinite(float(v))]


def row_limits(row: pd.Series) -> tuple[float, float, bool]:
    """x limits of one row (the interval, the mean and the finite thresholds, padded) and
    whether it is drawn on a log axis."""
    pts = _finite([row.ci_lo, row.ci_hi, row.ours_mean, row.strong_lo, row.strong_hi,
                   row.weak_lo, row.weak_hi])  # fmt: skip
    lo, hi = min(pts), max(pts)
    log = lo > 0 and hi / lo > 100
    if log:
        return lo / 3, hi * 3, True
    pad = 0.12 * (hi - lo) if hi > lo else max(abs(hi), 1.0) * 0.1
    return lo - pad, hi + pad, False


def claims_figure(ledger: pd.DataFrame, title: str = "Claims ledger") -> plt.Figure:
    """The figure of every claim that was judged (not-run and not-applicable claims are left
    out; the title counts them). A fragile verdict (it changes when one unit is left out)
    gets a hollow marker."""
    ran = ledger[ledger["verdict"].isin(JUDGED)].reset_index(drop=True)
    n = max(len(ran), 1)
    fig, axes = plt.subplots(n, 1, figsize=(9.5, 0.9 + ROW_HEIGHT * n), squeeze=False)
    for ax, (_, row) in zip(axes[:, 0], ran.iterrows(), strict=False):
        _draw_row(ax, row)
    if ran.empty:
        axes[0, 0].set_axis_off()
    skipped = len(ledger) - len(ran)
    fig.suptitle(f"{title}: {len(ran)} claims judged"
                 + (f", {skipped} not run or not applicable" if skipped else ""),
                 fontsize=10, y=1 - 0.25 / (0.9 + ROW_HEIGHT * n))  # fmt: skip
    handles = [plt.Line2D([], [], color=VERDICT_COLORS[v], marker="o", lw=2, label=v)
               for v in JUDGED]  # fmt: skip
    handles.append(plt.Line2D([], [], color="black", marker="o", mfc="white", lw=0,
                              label="fragile"))  # fmt: skip
    handles += [plt.Rectangle((0, 0), 1, 1, color=STRONG, label="strong region"),
                plt.Rectangle((0, 0), 1, 1, color=WEAK, ec="#cccccc", label="weak region")]  # fmt: skip
    fig.legend(handles=handles, loc="lower center", ncol=7, fontsize=7, frameon=False)
    fig.subplots_adjust(left=0.42, right=0.97, top=1 - 0.55 / (0.9 + ROW_HEIGHT * n),
                        bottom=0.45 / (0.9 + ROW_HEIGHT * n), hspace=0.9)  # fmt: skip
    return fig


def _draw_row(ax: plt.Axes, row: pd.Series) -> None:
    x0, x1, log = row_limits(row)
    if log:
        ax.set_xscale("log")
    for (a, b), color in (
        ((row.weak_lo, row.weak_hi), WEAK),
        ((row.strong_lo, row.strong_hi), STRONG),
    ):
        ax.axvspan(max(a, x0), min(b, x1), color=color, lw=0)
    color = VERDICT_COLORS.get(row.verdict, "black")
    lo, hi = row.ci_lo, row.ci_hi
    if _finite([lo]):
        ax.plot([lo, min(hi, x1)], [0, 0], color=color, lw=2.2, solid_capstyle="butt")
        if hi == math.inf:  # censored: no upper end
            ax.annotate("", (x1, 0), (max(lo, x0), 0),
                        arrowprops=dict(arrowstyle="->", color=color, lw=1.5))  # fmt: skip
    fragile = str(row.get("fragile", "")).strip().lower() == "true"
    ax.plot([row.ours_mean], [0], "o", color=color, ms=4.5, mfc="white" if fragile else color)
    ax.set_xlim(x0, x1)
    ax.set_ylim(-1, 1)
    ax.set_yticks([])
    ax.tick_params(axis="x", labelsize=6, pad=1, length=2)
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    setting = str(row.setting)
    setting = setting if len(setting) <= 48 else setting[:46] + "..."
    ax.text(-0.01, 0.5, f"{row.id}\n{setting}", transform=ax.transAxes, ha="right",
            va="center", fontsize=6.5, color=color)  # fmt: skip
    verdict = f"{row.verdict}{', fragile' if fragile else ''}"
    ax.text(1.0, 0.95, f"{verdict} ({_units(row)})", transform=ax.transAxes, ha="right",
            va="bottom", fontsize=5.5, color=color)  # fmt: skip


def _units(row: pd.Series) -> str:
    text = f"n={int(row.n)} {row.unit}"
    if int(row.get("points") or 0) and "points" not in str(row.unit):
        text += f" x {int(row.points)} pts"
    return text


def save_claims_figure(
    ledger: pd.DataFrame, png: str, pdf: str, title: str = "Claims ledger"
) -> None:
    from ibrobust.io import save_figure

    fig = claims_figure(ledger, title)
    save_figure(fig, png, pdf)
    plt.close(fig)
