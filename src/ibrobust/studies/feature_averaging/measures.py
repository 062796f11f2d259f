"""What the claims of Study FA measure (``claims.yaml`` beside this module declares them,
read by :mod:`ibrobust.claims.declared`): the files read and their column mapping
(:data:`SOURCES`, the one place to adapt), the rows a claim selects, and per claim one value
per seed (:data:`MEASURES`, the names the file calls). Our numbers come from
``results/<study>/figures/summary.csv`` (one row per run, readout and seed; fa_index /
residual_max only with two-layer nets) and ``critical_radius_scaling.csv``.
"""

from __future__ import annotations

import math
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
    not_above,
    pooled_slope,
    trend,
)
from ibrobust.claims.measurement import one_per_run
from ibrobust.kinds import MODELS, OPTIMIZERS, trainer

# ---- column mapping (summary.csv) ----
SETTING = "setting"  # binary | multiclass | the reference's label
BINARY, MULTICLASS = "binary", "multiclass"
# the paper's hand-built robust net: its rows carry its kind's label (ibrobust.kinds.MODELS)
REFERENCE = MODELS.capability("robust_reference", "label")
GRAM_PATH = "gram_gd"  # the training path that keeps W(t) in W(0) + span{x_i} (kinds.TRAINERS)
READOUT = "readout"  # optional: the binary readout of the row (absent: LEGACY_READOUT)
LEGACY_READOUT = "sum"  # what the attack jobs used before readouts were a study list
ATTACKS = ("pgd_margin", "pgd_ce", "universal")


def radius_col(attack: str) -> str:
    return f"critical_radius.{attack}"


WORST = radius_col("worst")
SOURCES: dict[str, Source] = {
    "summary": Source(
        path="figures/summary.csv",
        keys={"dataset": None, SETTING: (BINARY, MULTICLASS, REFERENCE)},
        numeric=(
            Column("seed", lo=0),
            Column("clean_acc", lo=0, hi=1),
            Column(WORST, lo=0, nan_ok=True),  # NaN: never fell to 50 % on the grid
            *(Column(radius_col(a), lo=0, nan_ok=True, required=False) for a in ATTACKS),
            Column("fa_index", lo=0, hi=1, nan_ok=True, required=False),
            Column("other_class_ratio", lo=0, nan_ok=True, required=False),
            Column("other_class_slope", nan_ok=True, required=False),
            Column("residual_max", lo=0, nan_ok=True, required=False),
            Column("cosine_same_class_mean", lo=-1, hi=1, nan_ok=True),
            Column("n_points", lo=1, nan_ok=True, required=False),
        ),
        checks=(not_above(WORST, [radius_col(a) for a in ATTACKS], nan_is_inf=True),),
        built_by="the study's target (and the default target)",
    ),
    "scaling": Source(
        path="figures/critical_radius_scaling.csv",
        keys={"key": None, "label": (BINARY, MULTICLASS, REFERENCE), READOUT: None},
        numeric=(
            Column("seed", lo=0),
            Column("d", lo=1),
            Column("k", lo=2),
            Column("critical_radius", lo=0, nan_ok=True),
        ),
        built_by="the study's target when the study has a scaling sweep",
    ),
    "margin_gradient": Source(
        path="figures/margin_gradient_summary.csv",
        keys={"label": (BINARY, MULTICLASS, REFERENCE), "readout": None},
        numeric=(
            Column("seed", lo=0),
            Column("margin.median", lo=0),
            Column("grad_norm.median", lo=0),
            Column("first_order.median", lo=0),
            Column("breaking_radius.median", lo=0),
        ),
        built_by="rule fa_margin_gradient (rules/margin_gradient.smk)",
    ),
}


# ---- selections --------------------------------------------------------------------------
def readouts_of(ctx: StudyContext) -> list[str]:
    """The binary readouts the study evaluates (its ``readouts``; the legacy sum without)."""
    return list(ctx.config.get("readouts") or [LEGACY_READOUT])


def rows(df: pd.DataFrame, dataset: str, setting: str, readout: str | None = None) -> pd.DataFrame:
    """Rows of one dataset and setting (and readout: binary nets and the reference net have
    two heads or one, on which every readout is the same score, so any row serves)."""
    sel = df[(df["dataset"] == dataset) & (df[SETTING] == setting)]
    if READOUT in df and setting == MULTICLASS and readout is not None:
        sel = sel[sel[READOUT] == readout]
    elif READOUT in df:
        sel = sel.drop_duplicates("seed")
    elif readout is not None and readout != LEGACY_READOUT and setting == MULTICLASS:
        raise NotRun(f"the summary has no {READOUT!r} column: only {LEGACY_READOUT!r} was run")
    if sel.empty:
        what = f"{setting}" + (f", readout {readout}" if readout else "")
        raise NotRun(f"no {what} rows for {dataset} in the summary")
    if sel["seed"].duplicated().any():
        raise ValueError(f"{dataset} {setting}: several rows per seed {sorted(sel.seed)}")
    return sel.set_index("seed").sort_index()


def grid_max(ctx: StudyContext) -> float:
    return float(max(ctx.config["radii"]))


def radii(sel: pd.DataFrame, col: str, ctx: StudyContext) -> tuple[pd.Series, bool]:
    """A critical-radius column with NaN (never fell to 50 %) replaced by the top of the
    radius grid, and whether any was (the values are then lower bounds)."""
    v = sel[col]
    return v.fillna(grid_max(ctx)), bool(v.isna().any())


def d_and_k(ctx: StudyContext, dataset: str) -> tuple[int, int]:
    ds = ctx.datasets[dataset]
    return int(ds["d"]), int(ds["k"])


# ---- measurements --------------------------------------------------------------------------
def points_of(*sels: pd.DataFrame) -> int | None:
    """Test points each seed's robustness is measured on: the attack jobs' measured count
    (the summary's ``n_points``, the fewest over the rows), not the config's attack_points
    (a dataset with fewer test points attacks fewer); None for a summary without it."""
    counts = [s["n_points"] for s in sels if "n_points" in s]
    if len(counts) < len(sels) or any(c.isna().any() for c in counts):
        return None
    return int(min(c.min() for c in counts))


def binary_over_theory(dataset: str):
    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        d, k = d_and_k(ctx, dataset)
        sel = rows(src["summary"], dataset, BINARY)
        r, cens = radii(sel, WORST, ctx)
        return Measurement(tuple(r / math.sqrt(d / k)), lower_bound=cens, points=points_of(sel))

    return compute


def kclass_over_binary(dataset: str, readout: str):
    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        bsel = rows(src["summary"], dataset, BINARY)
        msel = rows(src["summary"], dataset, MULTICLASS, readout)
        b, cb = radii(bsel, WORST, ctx)
        m, cm = radii(msel, WORST, ctx)
        seeds = b.index.intersection(m.index)
        if seeds.empty:
            raise NotRun(f"no seed with both a binary and a k-class run on {dataset}")
        note = "2-class radius off the grid (ratio overstated)" if cb else ""
        return Measurement(
            tuple(m[seeds] / b[seeds]),
            lower_bound=cm and not cb,
            note=note,
            points=points_of(bsel, msel),
        )

    return compute


def reference_over_sqrt_d(dataset: str):
    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        d, _ = d_and_k(ctx, dataset)
        sel = rows(src["summary"], dataset, REFERENCE)
        r, cens = radii(sel, WORST, ctx)
        return Measurement(tuple(r / math.sqrt(d)), lower_bound=cens, points=points_of(sel))

    return compute


def universal_over_theory(dataset: str):
    """Per seed: the 2-class net's critical radius under the universal direction alone over
    sqrt(d/k)."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        d, k = d_and_k(ctx, dataset)
        sel = rows(src["summary"], dataset, BINARY)
        if radius_col("universal") not in sel:
            raise NotRun("the universal-direction attack was not run")
        r, cens = radii(sel, radius_col("universal"), ctx)
        return Measurement(tuple(r / math.sqrt(d / k)), lower_bound=cens, points=points_of(sel))

    return compute


def clean_accuracy(dataset: str):
    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        sel = rows(src["summary"], dataset, BINARY)
        return Measurement(tuple(sel["clean_acc"]), points=points_of(sel))

    return compute


def span_residual(dataset: str):
    """The lambda decomposition's largest residual, on runs that train the weights
    themselves: a run whose trainer keeps W(t) = W(0) + A(t) X (the GD kind's ``method:
    gram``) is in the span by construction, so the claim is not applicable to it."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        d, k = d_and_k(ctx, dataset)
        n = int(ctx.datasets[dataset].get("n_train", 0))
        if n + k >= d:
            raise NotApplicable(
                f"the features and the training noises (k + n = {k + n} vectors in d = {d} "
                "dimensions) span the whole input space, so every weight vector is in their "
                "span: a study with n + k < d tests the lemma"
            )
        gram = [o for o in ctx.config["optimizers"] if _gram(ctx, o)]
        if gram:
            raise NotApplicable(
                f"optimizer {gram[0]!r} trains in the span of the inputs by construction "
                "(method: gram keeps W(t) = W(0) + A(t) X), so the residual is 0 up to "
                "rounding whatever GD does; a study whose GD uses method: direct tests the "
                "lemma"
            )
        return column_of(dataset, (BINARY, MULTICLASS), "residual_max")(src, ctx)

    return compute


def _gram(ctx: StudyContext, optimizer: str) -> bool:
    """Whether a net of the study trains with ``optimizer`` on the Gram-space GD path with
    ``method: gram`` (:func:`ibrobust.kinds.trainer`; sign descent or another norm trains by
    autograd whatever its ``method`` says)."""
    opt = ctx.optimizers.get(optimizer, {})
    return any(
        trainer(ctx.models[m], opt) == GRAM_PATH and OPTIMIZERS.setting(opt, "method") == "gram"
        for m in ctx.config["models"]
        if m in ctx.models
    )


def column_of(dataset: str, settings: tuple[str, ...], col: str, scale: float = 1.0):
    """``col`` x ``scale`` of every run of the ``settings`` (one value per run)."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        vals: list[float] = []
        if col not in src["summary"]:
            raise NotRun(f"the summary has no {col!r} (no two-layer net: no lambda decomposition)")
        if src["summary"][col].isna().all():
            raise NotRun(f"column {col!r} is empty (no lambda decomposition of these runs)")
        for setting in settings:
            v = rows(src["summary"], dataset, setting)[col]
            vals += one_per_run(v, col, f"{setting} on {dataset}", scale=scale)[0]
        return Measurement(tuple(vals), unit="seeds" if len(settings) == 1 else "runs")

    return compute


def other_class_trend(dataset: str):
    """Per 2-class seed: the slope of the per-checkpoint other-class ratio (max |other-class
    lambda| / mean same-class lambda, mean over neurons) on log10 GD step over the run's
    checkpoints (``other_class_slope``): a trend along training, as an o(1) needs."""
    base = column_of(dataset, (BINARY,), "other_class_slope")

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        m = base(src, ctx)
        labels = tuple(f"seed {int(s)}" for s in rows(src["summary"], dataset, BINARY).index)
        return trend(replace(m, labels=labels), "log10 GD step (the run's checkpoints)")

    return compute


def first_order_ratio(dataset: str):
    """Per seed: the robust reference's median first-order distance q / ||grad_x q|| over
    the 2-class net's, i.e. the 2-class net's input-gradient norm per unit margin relative to
    the robust net's (medians over the test points both classify correctly)."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        df = src["margin_gradient"]
        if "dataset" in df:
            df = df[df["dataset"] == dataset]
        fo = {}
        for label in (BINARY, REFERENCE):
            sel = df[df["label"] == label].set_index("seed")["first_order.median"]
            if sel.empty:
                raise NotRun(f"no {label} rows in the margin-gradient summary")
            if sel.index.duplicated().any():
                raise ValueError(f"several {label} rows per seed")
            fo[label] = sel
        seeds = fo[BINARY].index.intersection(fo[REFERENCE].index)
        if seeds.empty:
            raise NotRun("no seed with both a 2-class and a reference net")
        return Measurement(tuple(fo[REFERENCE][seeds] / fo[BINARY][seeds]))

    return compute


def scaling_slope(setting: str, key: str = "k"):
    """The least-squares slope of log(critical radius) on log(``key``) over the sweep, common
    to the seeds (an intercept per seed; :func:`ibrobust.claims.measurement.pooled_slope`). Values
    never falling to 50 % on the grid are left out; 2-class nets have one score, so any
    readout's rows serve."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        df = src["scaling"]
        df = df[(df["key"] == key) & (df["label"] == setting) & df["critical_radius"].notna()]
        df = df.drop_duplicates(["seed", "dataset"])
        if df.empty:
            raise NotRun(f"no {setting} critical radius in the {key} sweep")
        m = pooled_slope(
            np.log(df[key]), np.log(df["critical_radius"]), df["seed"].astype(int).to_numpy(),
            f"({key}, seed) pairs",
        )  # fmt: skip
        return Measurement(
            m.values, unit=m.unit, interval=m.interval, jackknife=m.jackknife,
            note=f"{len(m.values)} seeds' slopes {', '.join(f'{v:.3f}' for v in m.values)}",
        )  # fmt: skip

    return compute


def reference_rows(df: pd.DataFrame) -> pd.Series:
    """The robust reference's rows (shared by every trained net of the study): a cell's
    ``keep``."""
    return df[SETTING if SETTING in df else "label"] == REFERENCE


MEASURES = {
    "binary_over_theory": binary_over_theory,
    "universal_over_theory": universal_over_theory,
    "reference_over_sqrt_d": reference_over_sqrt_d,
    "clean_accuracy": clean_accuracy,
    "column_of": column_of,
    "other_class_trend": other_class_trend,
    "span_residual": span_residual,
    "kclass_over_binary": kclass_over_binary,
    "first_order_ratio": first_order_ratio,
    "scaling_slope": scaling_slope,
    "reference_rows": reference_rows,
}
