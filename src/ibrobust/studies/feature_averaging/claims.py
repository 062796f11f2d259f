"""Claims of Study FA (Li, Pan, Lyu, Li, ICLR 2025; docs/studies/fa.md, "Claims"), kind
``feature_averaging``. Our numbers come from ``results/<study>/figures/summary.csv`` (one row
per run, readout and seed; fa_index / residual_max only with two-layer nets) and
``critical_radius_scaling.csv``; column mapping: :data:`SOURCES` (the one place to adapt).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from ibrobust.claims.core import (
    Claim,
    Column,
    Measurement,
    NotRun,
    Source,
    StudyContext,
    at_least,
    at_most,
    between,
    not_above,
    restricted,
)
from ibrobust.kinds import MODELS
from ibrobust.studies.feature_averaging.claims_scaling import scaling_claims

# ---- column mapping (summary.csv) ----
SETTING = "setting"  # binary | multiclass | the reference's label
BINARY, MULTICLASS = "binary", "multiclass"
# the paper's hand-built robust net: its rows carry its kind's label (ibrobust.kinds.MODELS)
REFERENCE = MODELS.capability("robust_reference", "label")
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
            Column("residual_max", lo=0, nan_ok=True, required=False),
            Column("cosine_same_class_mean", lo=-1, hi=1, nan_ok=True),
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


def _dk(ctx: StudyContext, dataset: str) -> tuple[int, int]:
    ds = ctx.datasets[dataset]
    return int(ds["d"]), int(ds["k"])


# ---- measurements --------------------------------------------------------------------------
def points_of(ctx: StudyContext) -> int | None:
    """Test points each seed's robustness is measured on (the study's attack_points)."""
    return ctx.config.get("attack_points")


def binary_over_theory(dataset: str):
    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        d, k = _dk(ctx, dataset)
        r, cens = radii(rows(src["summary"], dataset, BINARY), WORST, ctx)
        return Measurement(tuple(r / math.sqrt(d / k)), lower_bound=cens, points=points_of(ctx))

    return compute


def kclass_over_binary(dataset: str, readout: str):
    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        b, cb = radii(rows(src["summary"], dataset, BINARY), WORST, ctx)
        m, cm = radii(rows(src["summary"], dataset, MULTICLASS, readout), WORST, ctx)
        seeds = b.index.intersection(m.index)
        if seeds.empty:
            raise NotRun(f"no seed with both a binary and a k-class run on {dataset}")
        note = "2-class radius off the grid (ratio overstated)" if cb else ""
        return Measurement(
            tuple(m[seeds] / b[seeds]), lower_bound=cm and not cb, note=note, points=points_of(ctx)
        )

    return compute


def ce_over_margin(dataset: str, readout: str):
    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        sel = rows(src["summary"], dataset, MULTICLASS, readout)
        for a in ("pgd_ce", "pgd_margin"):
            if radius_col(a) not in sel:
                raise NotRun(f"attack {a} was not run")
        ce, cens = radii(sel, radius_col("pgd_ce"), ctx)
        mg, _ = radii(sel, radius_col("pgd_margin"), ctx)
        return Measurement(tuple(ce / mg), lower_bound=cens, points=points_of(ctx))

    return compute


def reference_over_sqrt_d(dataset: str):
    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        d, _ = _dk(ctx, dataset)
        r, cens = radii(rows(src["summary"], dataset, REFERENCE), WORST, ctx)
        return Measurement(tuple(r / math.sqrt(d)), lower_bound=cens, points=points_of(ctx))

    return compute


def column_of(dataset: str, settings: tuple[str, ...], col: str, scale: float = 1.0):
    """``col`` x ``scale`` of every run of the ``settings`` (one value per run)."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        vals: list[float] = []
        if col not in src["summary"]:
            raise NotRun(f"the summary has no {col!r} (no two-layer net: no lambda decomposition)")
        for setting in settings:
            v = rows(src["summary"], dataset, setting)[col]
            if v.isna().any():
                raise ValueError(f"column {col!r} is NaN for a {setting} run on {dataset}")
            vals += list(v * scale)
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


def claims(ctx: StudyContext) -> list[Claim]:
    """Study FA's claims for each dataset of the study (and each readout it evaluates)."""
    out: list[Claim] = []
    cfg = ctx.config
    cells = [dict(model=m, optimizer=o) for m in cfg["models"] for o in cfg["optimizers"]]
    for ds in cfg["datasets"]:
        d, k = _dk(ctx, ds)
        tag = f"{ds} (d={d}, k={k})"
        per = _radius_claims(ds, tag) + _feature_claims(ds, tag, k)
        for ro in readouts_of(ctx):
            per += _readout_claims(ds, f"{tag}, readout {ro}", ro)
        per.append(_gradient_claim(ds, tag))
        # several trained nets per dataset (fa_prelu: p = 1 and 3): one row set per net
        out += per if len(cells) == 1 else [c for x in cells for c in restricted(per, x, _ref)]
    return out + scaling_claims(BINARY)


def _ref(df: pd.DataFrame) -> pd.Series:
    """The robust reference's rows (shared by every trained net of the study)."""
    return df[SETTING if SETTING in df else "label"] == REFERENCE


def _radius_claims(ds: str, tag: str) -> list[Claim]:
    return [
        Claim(
            id="fa.binary_radius",
            setting=tag,
            claim="GD on the 2-class labels learns the average of each class's features: "
            "a non-robust net whose critical radius scales like sqrt(d/k).",
            paper="100% robust accuracy to ~12, collapse by ~18 at d=3072, k=10 (sqrt(d/k)=17.5)",
            measure="critical_radius.worst (50% point of the worst case over attacks) of "
            "the 2-class nets / sqrt(d/k), per seed",
            rule=between("critical radius / sqrt(d/k)", (0.5, 1.5), (1 / 3, 2.0)),
            compute=binary_over_theory(ds),
        ),
        Claim(
            id="fa.reference_radius",
            setting=tag,
            claim="A robust network (one neuron per cluster, bias filtering the noise) "
            "exists, with a radius of order sqrt(d).",
            paper="Omega(sqrt(d)) (theory)",
            measure="critical_radius.worst of the hand-built reference net / sqrt(d), "
            "per seed (NaN = robust on the whole grid: the grid's top, a lower bound)",
            rule=at_least("critical radius / sqrt(d)", 0.4, 0.25),
            compute=reference_over_sqrt_d(ds),
        ),
    ]


def _feature_claims(ds: str, tag: str, k: int) -> list[Claim]:
    return [
        Claim(
            id="fa.averaging_index",
            setting=tag,
            claim="2-class GD neurons average their class's features (feature-averaging "
            "index second-largest / largest same-class lambda ~ 1).",
            paper="~1 (Lemma: equal lambdas; cosine blocks ~0.40-0.48)",
            measure="fa_index (final checkpoint, mean over neurons) of the 2-class nets",
            rule=at_least("fa_index", 0.8, 0.5),
            compute=column_of(ds, (BINARY,), "fa_index"),
        ),
        Claim(
            id="fa.decoupling_index",
            setting=tag,
            claim="k-class training makes neurons decouple onto single features "
            "(feature-averaging index ~ 0).",
            paper="near-diagonal 10-class cosine matrix",
            measure="fa_index of the k-class nets",
            rule=at_most("fa_index", 0.2, 0.5),
            compute=column_of(ds, (MULTICLASS,), "fa_index"),
        ),
        Claim(
            id="fa.cosine_blocks",
            setting=tag,
            claim="The 2-class cosine matrix cos(w, mu_j) has two blocks at ~1/sqrt(k/2).",
            paper="0.40-0.48 at k=10 (1/sqrt(5) = 0.447)",
            measure="cosine_same_class_mean of the 2-class nets x sqrt(k/2) (1 = theory)",
            rule=between("cosine x sqrt(k/2)", (0.89, 1.07), (0.67, 1.34)),
            compute=column_of(ds, (BINARY,), "cosine_same_class_mean", math.sqrt(k / 2)),
        ),
        Claim(
            id="fa.span_residual",
            setting=tag,
            claim="GD never leaves span{mu_j, xi_i}: the lambda decomposition's relative "
            "residual is tiny.",
            paper="0 (Lemma)",
            measure="residual_max (largest relative residual over neurons and "
            "checkpoints), every trained net",
            rule=at_most("residual_max", 1e-3, 1e-2),
            compute=column_of(ds, (BINARY, MULTICLASS), "residual_max"),
        ),
    ]


def _readout_claims(ds: str, setting: str, ro: str) -> list[Claim]:
    return [
        Claim(
            id="fa.kclass_over_binary",
            setting=setting,
            claim="Training on the fine cluster labels (k-class) makes the net more "
            "robust than 2-class training.",
            paper="critical radius ~34 vs ~12: ratio ~2.5-3 (theory sqrt(k) = 3.16)",
            measure="critical_radius.worst of the k-class net (this readout, worst case over "
            "its attacks) / of the 2-class net, same seed",
            rule=at_least("ratio", 1.5, 1.0),
            compute=kclass_over_binary(ds, ro),
        ),
        Claim(
            id="fa.ce_over_margin",
            setting=setting,
            claim="PGD on the binary readout's margin understates the k-class net's "
            "robustness relative to PGD on the fine-label cross-entropy "
            "(third-party reproduction).",
            paper="qualitative (reproduction: CE restores the paper's ordering)",
            measure="critical_radius.pgd_ce / critical_radius.pgd_margin of the k-class nets",
            rule=at_least("ratio", 1.2, 1.0),
            compute=ce_over_margin(ds, ro),
        ),
    ]


def _gradient_claim(ds: str, tag: str) -> Claim:
    return Claim(
        id="fa.gradient_per_margin",
        setting=tag,
        claim="A feature-averaging net has a margin like a robust net's but a much "
        "larger input gradient (every same-class neuron fires), so a smaller "
        "first-order distance q / ||grad_x q|| to its boundary.",
        paper="qualitative (talks; theory sqrt(2d/k) vs ~sqrt(d)/2 for clean points)",
        measure="median over test points of q / ||grad_x q|| (q = y F(x)) of the "
        "robust reference / of the 2-class net, same seed",
        rule=at_least("ratio", 1.5, 1.0),
        compute=first_order_ratio(ds),
        sources=("margin_gradient",),
    )
