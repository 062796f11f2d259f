"""What the claims of Study FA measure (:mod:`ibrobust.studies.feature_averaging.claims`
declares them): the files read and their column mapping (:data:`SOURCES`, the one place to
adapt), the rows a claim selects, and per claim one value per seed. Our numbers come from
``results/<study>/figures/summary.csv`` (one row per run, readout and seed; fa_index /
residual_max only with two-layer nets), ``robust_accuracy_vs_radius.csv`` (every run's
robust-accuracy curve over the radius grid) and ``critical_radius_scaling.csv`` (the scaling
sweep).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from ibrobust.claims.core import (
    Column,
    Measurement,
    NotApplicable,
    NotRun,
    Source,
    StudyContext,
    not_above,
)
from ibrobust.claims.measurement import one_per_run
from ibrobust.kinds import MODELS, OPTIMIZERS, trainer
from ibrobust.studies.feature_averaging.radius_readoff import (  # noqa: F401  (re-exported)
    ReadOff,
    falls_to,
    grid_max,
    points_of,
    radius_measurement,
    ratio_brackets,
    read_off,
    resolution_text,
)
from ibrobust.studies.feature_averaging.tables import HI, LO, REFINED

# ---- column mapping (summary.csv) ----
SETTING = "setting"  # binary | multiclass | the reference's label
BINARY, MULTICLASS = "binary", "multiclass"
# the paper's hand-built robust net: its rows carry its kind's label (ibrobust.kinds.MODELS)
REFERENCE = MODELS.capability("robust_reference", "label")
GRAM_PATH = "gram_gd"  # the training path that keeps W(t) in W(0) + span{x_i} (kinds.TRAINERS)
READOUT = "readout"  # optional: the binary readout of the row (absent: LEGACY_READOUT)
LEGACY_READOUT = "sum"  # what the attack jobs used before readouts were a study list
ATTACKS = ("pgd_margin", "pgd_ce", "universal")
REFERENCE_KIND = "robust_reference"  # the reference net's model kind (the curve's model_kind)
# docs/studies/README.md, rule P3: "nearly zero" (robust accuracy) read as at most 0.1
NEAR_ZERO = 0.1
# the lambda-decomposition columns the scaling sweep's table carries per run when the sweep's
# nets are decomposed (final checkpoint): the d-trend claims read them
SWEEP_LAMBDA_COLUMNS = ("fa_index", "other_class_ratio", "decoupling_ratio")


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
            # read-off brackets and refined radii (tables.LO / HI / REFINED; NaN: censored,
            # or not refined)
            *(
                Column(radius_col(a) + end, lo=0, nan_ok=True, required=False)
                for a in ("worst", *ATTACKS)
                for end in (LO, HI, REFINED)
            ),
            Column("fa_index", lo=0, hi=1, nan_ok=True, required=False),
            Column("other_class_ratio", lo=0, nan_ok=True, required=False),
            Column("other_class_slope", nan_ok=True, required=False),
            Column("residual_max", lo=0, nan_ok=True, required=False),
            Column("cosine_same_class_mean", lo=-1, hi=1, nan_ok=True),
            Column("n_points", lo=1, nan_ok=True, required=False),
            # the k-class nets' argmax accuracy on the k cluster labels (test.fine_acc)
            Column("fine_acc", lo=0, hi=1, nan_ok=True, required=False),
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
            *(Column(c, lo=0, nan_ok=True, required=False) for c in SWEEP_LAMBDA_COLUMNS),
            *(
                Column("critical_radius" + end, lo=0, nan_ok=True, required=False)
                for end in (LO, HI, REFINED)
            ),
        ),
        built_by="the study's target when the study has a scaling sweep",
    ),
    "curve": Source(
        path="figures/robust_accuracy_vs_radius.csv",
        keys={"dataset": None, "attack": None, "supervision": (BINARY, MULTICLASS)},
        numeric=(
            Column("seed", lo=0),
            Column("eps", lo=0),
            Column("robust_acc", lo=0, hi=1),
        ),
        built_by="the study's target (and the default target)",
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


def d_and_k(ctx: StudyContext, dataset: str) -> tuple[int, int]:
    ds = ctx.datasets[dataset]
    return int(ds["d"]), int(ds["k"])


# ---- measurements --------------------------------------------------------------------------
def binary_over_theory(dataset: str):
    """Per 2-class seed: the 50 % critical radius (worst case over attacks) / sqrt(d/k), with
    its read-off bracket (the measure fa.binary_radius used before it read the near-zero
    radius; benchmarks/fa_rate_stop_table.py tabulates the recorded sweep with it)."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        d, k = d_and_k(ctx, dataset)
        sel = rows(src["summary"], dataset, BINARY)
        return radius_measurement(sel, WORST, ctx, math.sqrt(d / k))

    return compute


def near_zero_radius(dataset: str):
    """Per 2-class seed: the radius at which the worst case over attacks leaves at most
    :data:`NEAR_ZERO` of the test points robust (``robust_accuracy_vs_radius.csv``, attack
    ``worst``), over sqrt(d/k), with the radius grid's bracket as its read-off resolution; a
    curve that never falls that far is censored at the grid's top (a lower bound)."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        d, k = d_and_k(ctx, dataset)
        df = src["curve"]
        sel = df[(df["dataset"] == dataset) & (df["supervision"] == BINARY)]
        sel = sel[sel["attack"] == "worst"]
        if "model_kind" in sel:
            sel = sel[sel["model_kind"] != REFERENCE_KIND]
        if sel.empty:
            raise NotRun(f"no 2-class worst-case robust-accuracy curve for {dataset}")
        if READOUT in sel:  # a 2-class net has one score: every readout's curve is the same
            sel = sel[sel[READOUT] == sel[READOUT].iloc[0]]
        scale, top = math.sqrt(d / k), grid_max(ctx)
        vals, brackets, labels, cens = [], [], [], False
        for seed, g in sel.groupby("seed", sort=True):
            r, lo, hi = falls_to(g["eps"], g["robust_acc"], NEAR_ZERO)
            if not math.isfinite(r):
                r = lo = hi = top
                cens = True
            vals.append(r / scale)
            brackets.append((lo / scale, hi / scale))
            labels.append(f"seed {int(seed)}")
        points = int(sel["n"].min()) if "n" in sel and sel["n"].notna().all() else None
        return Measurement(
            tuple(vals), lower_bound=cens, labels=tuple(labels), brackets=tuple(brackets),
            resolution="the radius grid: each seed's crossing lies between two grid radii",
            points=points,
        )  # fmt: skip

    return compute


def kclass_clean_accuracy(dataset: str):
    """Per k-class seed: the argmax accuracy on the k cluster labels (``fine_acc``)."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        df = src["summary"]
        if "fine_acc" not in df or df["fine_acc"].isna().all():
            raise NotRun(
                "the summary has no 'fine_acc' (the k-class nets' argmax accuracy on the "
                "cluster labels): each k-class run's metrics.json records it (test.fine_acc), "
                "the summary table does not carry it yet; judging it takes that column in "
                "summary.csv (the figures job, seconds; no retraining)"
            )
        sel = rows(df, dataset, MULTICLASS, readouts_of(ctx)[0])
        return Measurement(tuple(sel["fine_acc"]), points=points_of(sel))

    return compute


def kclass_over_binary(dataset: str, readout: str):
    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        bsel = rows(src["summary"], dataset, BINARY)
        msel = rows(src["summary"], dataset, MULTICLASS, readout)
        seeds = bsel.index.intersection(msel.index)
        if seeds.empty:
            raise NotRun(f"no seed with both a binary and a k-class run on {dataset}")
        b, m = read_off(bsel.loc[seeds], WORST, ctx), read_off(msel.loc[seeds], WORST, ctx)
        note = "2-class radius off the grid (ratio overstated)" if b.censored else ""
        # a ratio of two read-off radii lies in [m_lo / b_hi, m_hi / b_lo]
        return Measurement(
            tuple(m.values / b.values),
            lower_bound=m.censored and not b.censored,
            note=note,
            points=points_of(bsel, msel),
            brackets=ratio_brackets(m.brackets, b.brackets),
            resolution=f"k-class: {m.resolution}; 2-class: {b.resolution}",
        )

    return compute


def reference_over_sqrt_d(dataset: str):
    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        d, _ = d_and_k(ctx, dataset)
        sel = rows(src["summary"], dataset, REFERENCE)
        return radius_measurement(sel, WORST, ctx, math.sqrt(d))

    return compute


def universal_over_theory(dataset: str):
    """Per seed: the 2-class net's critical radius under the universal direction alone over
    sqrt(d/k)."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        d, k = d_and_k(ctx, dataset)
        sel = rows(src["summary"], dataset, BINARY)
        if radius_col("universal") not in sel:
            raise NotRun("the universal-direction attack was not run")
        return radius_measurement(sel, radius_col("universal"), ctx, math.sqrt(d / k))

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
