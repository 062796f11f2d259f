"""Study PRICE-LIN across jobs (:mod:`ibrobust.studies.price_linear.experiment`): cosines between
the algorithms' solutions, paired gap differences, means over draws and the summary table.

Gaps are accuracy differences train - test (>= 0 when the model overfits).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ibrobust.studies.price_linear.algorithms import METRICS


def cosine(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """(...,) cosine of the angle between solutions a, b (..., d), in float64; 0 if either
    is zero."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    den = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
    dot = (a * b).sum(-1)
    return np.divide(dot, den, out=np.zeros_like(dot), where=den > 0)


def solution_cosines(solutions: Mapping[str, Mapping[str, np.ndarray]]) -> pd.DataFrame:
    """cos(w_a, w_b) for every pair of algorithms on the same problems.

    ``solutions`` maps an optimizer name to ``{"w": (B, d), "draw": (B,), "eps_fraction":
    (B,)}``; all must list the same problems in the same order. Rows: draw,
    eps_fraction, optimizer_a, optimizer_b, cosine (pairs in the mapping's order).
    """
    names = list(solutions)
    if len(names) < 2:
        raise ValueError(f"need at least two algorithms to compare, got {names}")
    ref = solutions[names[0]]
    for name in names[1:]:
        for key in ("draw", "eps_fraction"):
            if not np.array_equal(np.asarray(solutions[name][key]), np.asarray(ref[key])):
                raise ValueError(f"{name!r} and {names[0]!r} do not list the same problems ({key})")
    frames = []
    for a, b in combinations(names, 2):
        cos = cosine(solutions[a]["w"], solutions[b]["w"])
        frames.append(
            pd.DataFrame(
                {
                    "draw": np.asarray(ref["draw"]),
                    "eps_fraction": np.asarray(ref["eps_fraction"]),
                    "optimizer_a": a,
                    "optimizer_b": b,
                    "cosine": cos,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def gap_difference(
    df: pd.DataFrame, first: str, second: str, gap: str = "robust_gap"
) -> pd.DataFrame:
    """Mean over n of (gap_first(n) - gap_second(n)) per (dataset, eps_fraction).

    ``df`` is the tidy metrics table (columns dataset, optimizer, n, draw, eps_fraction and
    ``gap``). Differences are paired by draw (same training set), averaged over draws at
    each n, then over n (the paper's Fig. 2 right). Columns: dataset, eps_fraction,
    difference, sd_over_n, n_values, and with a ``converged`` column in ``df``
    ``unconverged_pairs``: the (n, draw) pairs of the cell where either run stopped at its
    iteration cap before the stopping loss (they are in the mean: the figure marks them).
    """
    for name in (first, second):
        if name not in set(df.optimizer):
            raise ValueError(
                f"optimizer {name!r} is not in the table ({sorted(set(df.optimizer))})"
            )
    wide = df.pivot_table(
        index=["dataset", "eps_fraction", "n", "draw"], columns="optimizer", values=gap
    )
    per_n = (wide[first] - wide[second]).groupby(level=["dataset", "eps_fraction", "n"]).mean()
    out = per_n.groupby(level=["dataset", "eps_fraction"]).agg(["mean", "std", "count"])
    out.columns = ["difference", "sd_over_n", "n_values"]
    if "converged" in df:
        conv = df.pivot_table(
            index=["dataset", "eps_fraction", "n", "draw"], columns="optimizer",
            values="converged", aggfunc="min",
        )  # fmt: skip
        open_ = ~(conv[first].astype(bool) & conv[second].astype(bool))
        out["unconverged_pairs"] = open_.groupby(level=["dataset", "eps_fraction"]).sum()
    return out.reset_index()


def gap_difference_table(df: pd.DataFrame, first: str, second: str, gap: str) -> pd.DataFrame:
    """:func:`gap_difference` of ``<gap>_gap`` (``gap``: robust or clean) as the figure's CSV:
    the columns gap, first and second after dataset and eps_fraction."""
    table = gap_difference(df, first, second, gap=f"{gap}_gap")
    table.insert(2, "gap", f"{gap}_gap")
    table.insert(3, "first", first)
    table.insert(4, "second", second)
    return table


def run_solutions(z: Mapping[str, np.ndarray]) -> dict[str, dict[str, np.ndarray]]:
    """One (regime, n) job's weights.npz arrays as optimizer -> {w, draw, eps_fraction}."""
    return {
        str(o): {"w": z["w"][i], "draw": z["draw"], "eps_fraction": z["eps_fraction"]}
        for i, o in enumerate(z["optimizer"])
    }


def run_cosines(weights: Sequence[Mapping[str, np.ndarray]], runs: Sequence[dict]) -> pd.DataFrame:
    """:func:`solution_cosines` of every (regime, n) job (its weights.npz arrays, in ``runs``
    order), each tagged with its run's dataset and n."""
    frames = []
    for z, run in zip(weights, runs, strict=True):
        cos = solution_cosines(run_solutions(z))
        cos.insert(0, "dataset", run["dataset"])
        cos.insert(1, "n", run["n"])
        frames.append(cos)
    return pd.concat(frames, ignore_index=True)


def mean_over_draws(df: pd.DataFrame, metrics: Sequence[str] = METRICS) -> pd.DataFrame:
    """Mean and sd over draws per (dataset, optimizer, eps_fraction, n); flat column names."""
    keys = ["dataset", "optimizer", "eps_fraction", "n"]
    num = df[keys].join(df[list(metrics)].astype(float))
    agg = num.groupby(keys, sort=True)[list(metrics)].agg(["mean", "std"])
    agg.columns = [f"{m}_{s}" for m, s in agg.columns]
    return agg.reset_index()


def _points(mean: pd.Series, sd: pd.Series | None = None) -> pd.Series:
    """Accuracy differences as percentage points, 'mean +- sd' strings."""
    if sd is None:
        return (100 * mean).map(lambda v: f"{v:+.1f}")
    return pd.Series(
        [f"{100 * m:+.1f} +- {100 * s:.1f}" for m, s in zip(mean, sd.fillna(0.0), strict=True)],
        index=mean.index,
    )


def summary_markdown(
    df: pd.DataFrame,
    cosines: pd.DataFrame,
    *,
    first: str,
    second: str,
    dataset_labels: Mapping[str, str],
    optimizer_labels: Mapping[str, str],
) -> str:
    """The study's numbers as markdown: robust gaps at the smallest n and averaged over n,
    the GD - CD style differences, clean test accuracy, cosines between solutions, and the
    stopping record. ``df``: the tidy metrics table; ``cosines``: :func:`solution_cosines`
    rows with dataset and n columns."""
    lab = _Labels(df, dataset_labels, optimizer_labels)
    n_min = int(df.n.min())
    out = ["# Study PRICE-LIN summary", ""]
    out += [
        f"Gaps are train - test accuracy in percentage points (mean +- sd over draws). "
        f"eps / gamma* = 0 is plain ERM. {len(set(df.draw))} draws, n in "
        f"{sorted(int(n) for n in set(df.n))}.",
        "",
        f"## Robust generalization gap at the smallest n = {n_min}",
        "",
        lab.by_regime(df[df.n == n_min], "robust_gap", sd=True).to_markdown(index=False),
        "",
        "## Robust generalization gap, mean over n (and draws)",
        "",
        lab.by_regime(df, "robust_gap", sd=False).to_markdown(index=False),
        "",
    ]
    out += _difference_sections(df, lab, first, second)
    out += _clean_section(df, lab, n_min)
    out += _cosine_section(cosines, lab)
    out += _stopping_section(df, lab)
    return "\n".join(out)


class _Labels:
    """The optimizers and datasets of the table, in the labels' order, and their labels."""

    def __init__(
        self,
        df: pd.DataFrame,
        dataset_labels: Mapping[str, str],
        optimizer_labels: Mapping[str, str],
    ) -> None:
        self.opts = [o for o in optimizer_labels if o in set(df.optimizer)]
        self.dsets = [d for d in dataset_labels if d in set(df.dataset)]
        self.rename = {o: optimizer_labels[o] for o in self.opts}
        self.datasets, self.optimizers = dataset_labels, optimizer_labels

    def by_regime(self, sub: pd.DataFrame, value: str, sd: bool) -> pd.DataFrame:
        g = sub.groupby(["dataset", "eps_fraction", "optimizer"])[value]
        cells = _points(g.mean(), g.std() if sd else None).unstack("optimizer")[self.opts]
        cells = cells.rename(columns=self.rename).reset_index()
        cells["dataset"] = cells.dataset.map(self.datasets)
        order = [self.datasets[d] for d in self.dsets]
        cells = cells.set_index("dataset").loc[order].reset_index()
        return cells.rename(columns={"dataset": "regime", "eps_fraction": "eps / gamma*"})


def _difference_sections(df: pd.DataFrame, lab: _Labels, first: str, second: str) -> list[str]:
    out = []
    names = lab.optimizers
    for gap in ("robust_gap", "clean_gap"):
        t = gap_difference(df, first, second, gap).pivot(
            index="dataset", columns="eps_fraction", values="difference"
        )
        t = (100 * t.loc[lab.dsets]).round(1)
        t.index = [lab.datasets[d] for d in lab.dsets]
        out += [
            f"## Mean over n of {gap}({names[first]}) - "
            f"{gap}({names[second]}) (points; > 0: "
            f"{names[second]} generalises better)",
            "",
            t.rename_axis("regime (rows), eps / gamma* (columns)").to_markdown(),
            "",
        ]
    return out


def _clean_section(df: pd.DataFrame, lab: _Labels, n_min: int) -> list[str]:
    clean = df[df.n == n_min].groupby(["dataset", "eps_fraction", "optimizer"]).test_clean_acc
    ct = (100 * clean.mean()).round(1).unstack("optimizer")[lab.opts].rename(columns=lab.rename)
    ct = ct.reset_index()
    ct["dataset"] = ct.dataset.map(lab.datasets)
    return [
        f"## Clean test accuracy (%) at n = {n_min}",
        "",
        ct.rename(columns={"dataset": "regime", "eps_fraction": "eps / gamma*"}).to_markdown(
            index=False
        ),
        "",
    ]


def _cosine_section(cosines: pd.DataFrame, lab: _Labels) -> list[str]:
    if not len(cosines):
        return []
    names = lab.optimizers
    cos = cosines.assign(
        pair=[
            f"{names.get(a, a)} vs {names.get(b, b)}"
            for a, b in zip(cosines.optimizer_a, cosines.optimizer_b, strict=True)
        ]
    )
    ctab = cos.groupby(["dataset", "pair", "eps_fraction"], sort=False).cosine.mean()
    ctab = ctab.unstack("eps_fraction").round(3).reset_index()
    ctab["dataset"] = ctab.dataset.map(lab.datasets)
    return [
        "## Cosine between the algorithms' solutions (mean over n and draws)",
        "",
        "As eps -> gamma* every robust separator is a max-margin one (Lemma C.4): the "
        "columns near 1 should approach 1.",
        "",
        ctab.rename(columns={"dataset": "regime"}).to_markdown(index=False),
        "",
    ]


def _stopping_section(df: pd.DataFrame, lab: _Labels) -> list[str]:
    stop = df.groupby(["optimizer", "eps_fraction"]).agg(
        converged=("converged", "mean"), iters=("iters", "mean"), diverged=("diverged", "mean")
    )
    stop = stop.reset_index()
    stop["optimizer"] = stop.optimizer.map(lab.optimizers)
    return [
        "## Stopping record (all regimes and n): fraction below the loss threshold, "
        "mean iterations, fraction diverged",
        "",
        stop.round(3).to_markdown(index=False),
        "",
    ]


__all__ = ["cosine", "gap_difference", "mean_over_draws", "solution_cosines", "summary_markdown"]
