"""Study MARGIN's measures: the output tables its claims read (``SOURCES``: the summary,
the per-point distances and, with ``training.flow``, the two schedules' losses) and the
functions that compute each claim's measurement from them (per run, with the interval over
runs, or a bootstrap or Wilson interval where a study has one run). The claims themselves,
their citations, rules and derivations: ``claims.yaml`` beside this module (:data:`MEASURES`
names the measures it calls, :data:`CONTEXT` the functions of the configuration it reads).

Sources: ``results/<study>/figures/summary.csv``
(:func:`ibrobust.studies.margin.tables.summary_table`, one row per run, schedule and
checkpoint; run-level numbers repeated on each row: ``sep_*`` = after the data is fit,
``cert_*`` = the certificate check, ``min_log10_loss``), ``points.csv`` (every run's per-point
minimal distances, the smallest over the attacks, and certificates) and ``schedules.csv``.
Run-level numbers get a t interval over runs (seeds); with one run, the robust-accuracy
claims fall back to a bootstrap over the test points of the per-point paired difference, and
the certificate claim is a Wilson interval over the (point, checkpoint) pairs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np
import pandas as pd

from ibrobust.claims.core import (
    Column,
    Measurement,
    NotApplicable,
    NotRun,
    Source,
    StudyContext,
    pooled_slope,
)
from ibrobust.claims.declared import fixed
from ibrobust.claims.intervals import Interval, wilson
from ibrobust.claims.measurement import one_per_run

SOURCES: dict[str, Source] = {
    "summary": Source(
        path="figures/summary.csv",
        keys={"run": None, "name": None},
        numeric=(
            Column("kkt_residual", lo=0, nan_ok=True, required=False),
            Column("homogeneity", lo=1, nan_ok=True, required=False),
            Column("loss_rate_slope", nan_ok=True, required=False),
            Column("loss_rate_theory", nan_ok=True, required=False),
            Column("norm_rate_slope", nan_ok=True, required=False),
            Column("norm_rate_theory", nan_ok=True, required=False),
            Column("epoch", lo=0),
            Column("log10_train_loss"),
            Column("normalized_margin"),
            Column("smoothed_normalized_margin"),
            Column("sep_frac_decreasing", lo=0, hi=1, nan_ok=True),  # NaN: never fit
            Column("cert_frac_holding", lo=0, hi=1, nan_ok=True),  # NaN: no certificate
            Column("train_robust_l2", lo=0, hi=1, nan_ok=True),
            Column("test_robust_l2", lo=0, hi=1, nan_ok=True),
            Column("min_log10_loss"),
            Column("all_finite", lo=0, hi=1),
        ),
        built_by="`snakemake margin --config data_root=DIR` (not in the default target)",
    ),
    "points": Source(
        path="figures/points.csv",
        keys={"run": None, "checkpoint": None, "split": ("train", "test")},
        numeric=(
            Column("index", lo=0),
            Column("margin"),
            Column("distance_l2", lo=0, nan_ok=True),  # NaN: no attack reached this point
            Column("certified_l2", lo=0, nan_ok=True),  # NaN: no certificate for the net
        ),
        built_by="`snakemake margin --config data_root=DIR` (not in the default target)",
    ),
    "schedules": Source(
        path="figures/schedules.csv",
        keys={"run": None},
        numeric=(
            Column("epochs", lo=1),
            Column("log10_loss_constant", nan_ok=True),
            Column("log10_loss_loss_based", nan_ok=True),
        ),
        built_by="`snakemake margin_small --config data_root=DIR` with training.flow set",
        empty_ok=True,  # written with its header alone by a study without training.flow
    ),
}
SCHEDULE = "schedule"  # loss_based | constant (absent in older outputs: every run loss_based)
LOSS_BASED, CONSTANT = "loss_based", "constant"


def _runs_of(summary: pd.DataFrame, schedule: str) -> pd.DataFrame:
    """The rows of the runs trained with ``schedule`` (older outputs: all loss_based)."""
    if SCHEDULE not in summary:
        return summary if schedule == LOSS_BASED else summary.iloc[0:0]
    return summary[summary[SCHEDULE] == schedule]


def _per_run(df: pd.DataFrame, col: str) -> tuple[tuple[float, ...], tuple[str, ...]]:
    v = df.groupby("run", sort=False)[col].first()
    return one_per_run(v, col, "selected", drop_missing=True)


def _needs_runs(df: pd.DataFrame, what: str) -> None:
    n = df["run"].nunique()
    if n < 2:
        raise NotApplicable(
            f"the study trains {n} {what} run: a trend or a rate judged on one run has no "
            "interval over runs (judged in a study with several seeds, e.g. margin_small)"
        )


def run_column(col: str, schedule: str, needs_runs: bool = True):
    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        df = _runs_of(src["summary"], schedule)
        if df.empty:
            raise NotApplicable(
                f"the study trains no {schedule.replace('_', '-')} run (training.flow unset)"
                if schedule == CONSTANT
                else "the study has no loss-based run"
            )
        if needs_runs:
            _needs_runs(df, schedule.replace("_", "-"))
        vals, labels = _per_run(df, col)
        return Measurement(vals, unit="runs", labels=labels)

    return compute


def rate_ratio(col: str):
    """Per constant-step run: the measured log-log slope over the theory's at the same
    window (1 = the theorem's rate)."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        df = _runs_of(src["summary"], CONSTANT)
        if df.empty:
            raise NotApplicable("the study trains no constant-step run (training.flow unset)")
        _needs_runs(df, "constant-step")
        meas, _ = _per_run(df, f"{col}_slope")
        theory, labels = _per_run(df, f"{col}_theory")
        return Measurement(
            tuple(m / t for m, t in zip(meas, theory, strict=True)), unit="runs", labels=labels,
            note="theory " + ", ".join(f"{t:.3f}" for t in theory),
        )  # fmt: skip

    return compute


def loss_reached(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
    """Lowest log10 L per loss-based run; a run with a non-finite logged value counts as
    log10 L = 0 (not reached), said in the note."""
    df = _runs_of(src["summary"], LOSS_BASED)
    low = df.groupby("run", sort=False)["min_log10_loss"].first()
    finite = df.groupby("run", sort=False)["all_finite"].min() >= 1
    vals = tuple(float(v) if ok else 0.0 for v, ok in zip(low, finite, strict=True))
    note = "" if finite.all() else "a run logged a non-finite value (counted as 0)"
    return Measurement(vals, unit="runs", labels=tuple(map(str, low.index)), note=note)


def margin_trend(col: str, schedule: str = LOSS_BASED, window: tuple[float, ...] | None = None):
    """The least-squares slope of log10 ``col`` on log10(-log10 L) over each run's
    checkpoints, common to the runs (an intercept per run); with ``window``, only the
    checkpoints within one decade of those loss thresholds (log10 L)."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        df = _runs_of(src["summary"], schedule)
        _needs_runs(df, schedule.replace("_", "-"))
        if col not in df or df[col].isna().all():
            raise NotRun(f"the summary has no {col!r}")
        df = df[df[col] > 0]
        if window is not None:
            near = np.array([min(abs(v - t) for t in window) for v in df["log10_train_loss"]])
            df = df[near < 1.0]
        x = np.log10(-df["log10_train_loss"].to_numpy())
        y = np.log10(df[col].to_numpy())
        return pooled_slope(x, y, df["run"].to_numpy(), "(checkpoint, run) pairs",
                            group_name="run")  # fmt: skip

    return compute


def robust_area(split: str):
    """The trend of robustness over training: per run and checkpoint the area under its l2
    robust-accuracy curve over [0, r] (r the grid's top), i.e. the mean over points of
    min(R, r) / r, and its least-squares slope on log10(-log10 L) over the checkpoints,
    common to the runs (an intercept per run; t interval over runs). Not applicable with one
    run, like every trend over training here: an interval over one run's points is blind to
    the run-to-run variance."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        grid = ctx.config.get("robustness", {}).get("radii", {}).get("l2") or [1.0]
        r = float(max(grid))
        summary = _runs_of(src["summary"], LOSS_BASED)
        _needs_runs(summary, "loss-based")
        pts = src["points"][src["points"]["split"] == split]
        xs, ys, groups, per_run = [], [], [], {}
        for run, g in summary.groupby("run", sort=False):
            p = pts[pts["run"] == run]
            dist = {
                name: p[p["checkpoint"] == name].set_index("index")["distance_l2"].fillna(0.0)
                for name in g["name"]
            }
            common = None
            for v in dist.values():
                common = v.index if common is None else common.intersection(v.index)
            if common is None or len(common) == 0 or len(g) < 2:
                continue
            x = np.log10(-g["log10_train_loss"].to_numpy(float))
            capped = np.stack([dist[n][common].clip(upper=r).to_numpy() / r for n in g["name"]])
            per_run[run] = (x, capped)  # (checkpoints,), (checkpoints, points)
            xs += list(x)
            ys += list(capped.mean(axis=1))
            groups += [str(run)] * len(x)
        if not per_run:
            raise NotRun(f"no run with two checkpoints whose {split} points were attacked")
        if len(per_run) < 2:
            raise NotRun(
                f"only {len(per_run)} run has two checkpoints with attacked {split} points"
            )
        m = pooled_slope(xs, ys, groups, "(checkpoint, run) pairs", group_name="run")
        return replace(m, points=attacked_points(src["points"], split))

    return compute


def attacked_points(points: pd.DataFrame, split: str) -> int:
    """The points of ``split`` each checkpoint was attacked on, read from the outputs (the
    fewest over runs and checkpoints): ``attack_points`` of the config, or fewer where the
    split holds fewer (the train split of a 20-image rung)."""
    per_ck = points[points["split"] == split].groupby(["run", "checkpoint"]).size()
    return int(per_ck.min()) if len(per_ck) else 0


def certificate(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
    """Share of the correctly classified (point, checkpoint) pairs, pooled over runs and
    splits, whose minimal l2 distance (smallest over the attacks) is at least the
    certificate q / beta; Wilson interval over the pairs."""
    pts = src["points"]
    b = pts[(pts["margin"] > 0) & pts["certified_l2"].notna() & pts["distance_l2"].notna()]
    if b.empty:
        raise NotRun("no correctly classified point with a certificate")
    ok = b["distance_l2"] >= b["certified_l2"] * (1 - 1e-9)
    unit = "(point, checkpoint) pairs"

    def iv(level: float) -> Interval:
        return replace(
            wilson(int(ok.sum()), len(b), level), unit=unit, method=f"Wilson over {unit}"
        )

    per_run = tuple(float(g.mean()) for _, g in ok.groupby(b["run"], sort=False))
    return Measurement(per_run, unit="runs", interval=iv, note=f"{int(ok.sum())} of {len(b)} pairs")


def constant_stalls(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
    """Per seed: log10 L of the loss-based run at the constant-step run's last epoch minus the
    constant-step run's (an upper bound on the loss-based run's loss where it stopped
    earlier, below its stop_log10_loss)."""
    df = src["schedules"].dropna(subset=["log10_loss_constant", "log10_loss_loss_based"])
    if df.empty:
        raise NotRun("no seed with both schedules")
    d = df["log10_loss_loss_based"] - df["log10_loss_constant"]
    return Measurement(tuple(float(v) for v in d), unit="runs",
                       labels=tuple(map(str, df["run"])))  # fmt: skip


PAPER_EPOCHS = {-10.0: 38, -15.0: 75, -20.0: 107, -120.0: 935}  # the table's models 1-4


def epochs_ratio(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
    """Per loss-based run: the geometric mean over the paper's thresholds it has of (epochs to
    the threshold) / the paper's (a ratio of 2 and one of 1/2 do not cancel to 1)."""
    df = _runs_of(src["summary"], LOSS_BASED)
    vals, labels = [], []
    for run, g in df.groupby("run", sort=False):
        ratios = [
            float(row.epoch) / PAPER_EPOCHS[t]
            for t in PAPER_EPOCHS
            for row in g.itertuples()
            if abs(float(row.log10_train_loss) - t) < 1.0
        ]
        if ratios:
            vals.append(float(np.exp(np.mean(np.log(ratios)))))
            labels.append(str(run))
    if not vals:
        raise NotRun("no checkpoint at the paper's loss thresholds")
    return Measurement(tuple(vals), unit="runs", labels=tuple(labels))


# ---- what the claim file reads from the configuration (CONTEXT) ---------------------------
def stops_before(ctx: StudyContext, limit: float) -> str | None:
    """``not_applicable``: the study is configured to stop above log10 L = ``limit``."""
    stop = ctx.config.get("training", {}).get("stop_log10_loss")
    if stop is not None and stop > limit:
        return (
            f"the study stops at log10 L = {stop:g} (training.stop_log10_loss) by "
            f"configuration, before {limit:g}"
        )
    return None


def no_flow(ctx: StudyContext) -> str | None:
    """``not_applicable``: the study trains no constant-step run."""
    if ctx.config.get("training", {}).get("flow") is None:
        return "the study trains no constant-step run (training.flow unset)"
    return None


def one_seed(ctx: StudyContext) -> str | None:
    """``not_applicable``: a trend along training needs several runs, and the study is
    configured to train one (its seeds): the same reason its measures give on one run's
    outputs (:func:`_needs_runs`), known before any output exists."""
    seeds = ctx.config.get("seeds") or []
    if len(seeds) < 2:
        return (
            f"the study trains {len(seeds)} loss-based run: a trend or a rate judged on one "
            "run has no interval over runs (judged in a study with several seeds, e.g. "
            "margin_small)"
        )
    return None


def off_paper_scale(ctx: StudyContext) -> str | None:
    """``not_applicable``: the table's epoch counts hold for its 600 SGD steps per epoch
    (60,000 images, batch 100); an epoch of another size is another unit of time."""
    ds = ctx.datasets.get(ctx.config["datasets"][0], {})
    n, batch = ds.get("n_train"), ctx.config.get("training", {}).get("batch_size")
    if n != 60000 or batch != 100:
        return (
            f"epoch counts depend on the SGD steps per epoch: the paper's 600 (60,000 images, "
            f"batch 100) against this study's {n} images, batch {batch}; judged with the "
            "paper-scale overlay configs/margin_paper.yaml"
        )
    return None


MEASURES = {
    "loss_reached": fixed(loss_reached),
    "margin_trend": margin_trend,
    "epochs_ratio": fixed(epochs_ratio),
    "run_column": run_column,
    "rate_ratio": rate_ratio,
    "constant_stalls": fixed(constant_stalls),
    "robust_area": robust_area,
    "certificate": fixed(certificate),
}
CONTEXT = {
    "stops_before": stops_before,
    "no_flow": no_flow,
    "off_paper_scale": off_paper_scale,
    "one_seed": one_seed,
}
