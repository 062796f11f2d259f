"""Study outputs for the ledger tests, in the exact shapes the workflow writes them.

FA: the summary rows of workflow_scripts/fa_figures.py (per run and readout: critical radii
per attack, clean accuracy, fa_index, other_class_ratio, residual_max, the same-class cosine;
2-class and reference rows repeated under each readout by ``per_readout``), the scaling CSV
of fa_scaling_figure.py and the margin-gradient summary of fa_margin_gradient.py.
FA-IMAGES: per-run ``robust_accuracy.csv`` tables
(:func:`ibrobust.attacks.tables.robust_accuracy_table` of hand-made correctness masks),
gathered as workflow_scripts/fa_images_figures.py gathers them
(``per_readout(gather_csv(...))``): the curves CSV, and
:func:`ibrobust.studies.feature_averaging_images.tables.summary_table` of it. PRICE-LIN: one
``metrics.csv`` per (regime, n) job as workflow_scripts/price_train.py writes it (column
``optimizer``, then ``algorithm``, then the columns of
:func:`ibrobust.studies.price_linear.experiment.metrics_table`, ``converged`` and
``margin_ratio`` among them), gathered as price_linear_figures.py gathers them
(``gap_vs_n.csv``) and :func:`~ibrobust.studies.price_linear.tables.mean_over_draws` of them
(``summary.csv``). PRELU: :func:`ibrobust.studies.prelu.tables.synthetic_summary` and
:func:`ibrobust.studies.prelu.tables.table1`. PRICE-NN: ``cells.csv`` with the columns
declared in :data:`ibrobust.studies.price_nn.claims.SOURCES` (one row per arch, n, eps and
seed; ``gd_*`` / ``sd_*`` side by side). MARGIN: workflow_scripts/margin_figures.py's steps
on hand-made per-run history, checkpoints and points tables (``summary.csv``,
``points.csv``), plus the columns :mod:`ibrobust.studies.margin.claims` declares for the
summary (``schedule``, ``kkt_residual``, ``homogeneity``, ``loss_rate_*``, ``norm_rate_*``)
and ``schedules.csv``. Every number is set by the caller, so each test chooses the verdict
it expects.
"""

from __future__ import annotations

import copy
import importlib.util
import math
import tempfile
from collections.abc import Callable, Collection, Mapping, Sequence
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import yaml
from config_helpers import validated

from ibrobust.attacks.tables import robust_accuracy_table
from ibrobust.claims.intervals import LEVEL
from ibrobust.config import load_schema
from ibrobust.io import save_csv
from ibrobust.ledger.table import build_ledger, study_outputs
from ibrobust.stages.tables import per_readout
from ibrobust.studies.feature_averaging_images.tables import summary_table
from ibrobust.studies.margin import tables as mr
from ibrobust.studies.prelu.tables import synthetic_summary, table1
from ibrobust.studies.price_linear.algorithms import algorithm_of
from ibrobust.studies.price_linear.tables import mean_over_draws

ROOT = Path(__file__).resolve().parents[2]
READOUTS = ("sum", "argmax", "log_odds")  # config.yaml's readouts of fa and fa_images


@cache
def _validated() -> dict:
    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())
    return validated(cfg, load_schema(ROOT / "schemas" / "config.schema.yaml"))


def default_config(**studies_enabled: bool) -> dict:
    """The repository's config.yaml, validated (defaults filled), studies enabled as given."""
    cfg = copy.deepcopy(_validated())
    for name, on in studies_enabled.items():
        cfg["studies"][name]["enabled"] = on
    return cfg


@cache
def _figures_helpers():
    """workflow_scripts/_figures.py (gather_csv: how the figure and summary jobs gather the
    per-run tables)."""
    spec = importlib.util.spec_from_file_location(
        "_figures", ROOT / "workflow_scripts" / "_figures.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def gathered(tables: Sequence[tuple[dict, pd.DataFrame]]) -> pd.DataFrame:
    """gather_csv of per-run tables ((run wildcards, table) pairs), each written to a CSV
    first, as the jobs wrote them."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, (_, df) in enumerate(tables):
            paths.append(str(Path(tmp) / f"run{i}.csv"))
            save_csv(paths[-1], df)
        return _figures_helpers().gather_csv(paths, [run for run, _ in tables])


# ---- the ledger of hand-made outputs -----------------------------------------------------------
# Student t quantiles (tables): T_975_<df> for 95 % intervals, T_95_2 for a 90 % one
T_975_1, T_975_2, T_975_3, T_975_6 = 12.7062047362, 4.30265272975, 3.18244630528, 2.44691185114
T_975_4, T_975_5, T_975_7 = 2.77644510520, 2.57058183564, 2.36462425159
T_975_11, T_975_15 = 2.20098516009, 2.13144954556
T_95_2 = 2.91998558035


def t_ends(values: Sequence[float], t: float) -> tuple[float, float]:
    """mean -+ t sd / sqrt(n) of ``values`` (the t interval, given its quantile)."""
    v = np.asarray(values, dtype=float)
    half = t * v.std(ddof=1) / math.sqrt(v.size)
    return v.mean() - half, v.mean() + half


def near_zero_ends(zero: Sequence[float], t: float, scale: float = 10.0, radii=None):
    """The interval fa.binary_radius reports for :func:`fa_curve` crossings ``zero`` (over
    ``scale`` = sqrt(d/k)): their t interval widened by the grid brackets' reach, below to the
    mean of the lower grid radii and above to the mean of the upper ones."""
    radii = FA_RADII if radii is None else radii
    lows, highs = [], []
    for z in zero:
        j = next(i for i, e in enumerate(radii) if e >= z)
        lows.append(radii[max(j - 1, 0)] / scale)
        highs.append(radii[j] / scale)
    v = [z / scale for z in zero]
    lo, hi = t_ends(v, t)
    return lo - (np.mean(v) - np.mean(lows)), hi + (np.mean(highs) - np.mean(v))


def write(results: Path, study: str, rel: str, df: pd.DataFrame) -> Path:
    """``df`` at results/<study>/<rel>, as the jobs write it (save_csv)."""
    path = results / study / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    save_csv(path, df)
    return path


def ledger(
    tmp_path: Path,
    cfg: dict,
    files: Mapping[tuple[str, str], pd.DataFrame],
    level: float = LEVEL,
    per_claim: bool = False,
) -> pd.DataFrame:
    """The ledger of ``cfg`` when exactly ``files`` ((study, relative path) -> table) exist,
    indexed by (study, id, setting): every study's rows as each study alone judges them
    (``per_claim``: one verdict per claim, as the ledger rule writes it)."""
    for (study, rel), df in files.items():
        write(tmp_path, study, rel, df)
    table = build_ledger(study_outputs(cfg, tmp_path), level, per_claim=per_claim)
    return table.set_index(["study", "id", "setting"]).sort_index()


def verdicts(df: pd.DataFrame, study: str, id_: str) -> list[str]:
    return list(df.loc[(study, id_)].verdict)


def one(df: pd.DataFrame, study: str, id_: str) -> pd.Series:
    """The single ledger row of claim ``id_``."""
    rows = df.loc[(study, id_)]
    assert len(rows) == 1, rows
    return rows.iloc[0]


def rows_by(df: pd.DataFrame, study: str, id_: str, part: int = -1, sep: str = ", ") -> dict:
    """The ledger rows of claim ``id_`` keyed by one part of their setting (default: the
    last, e.g. ``readout sum``)."""
    rows = df.loc[(study, id_)]
    return {s.split(sep)[part]: r for s, r in rows.iterrows()}


# ---- Study FA ---------------------------------------------------------------------------------
def fa_summary(
    binary=(9.0, 9.5, 8.5),
    multiclass=(25.0, 26.0, 24.0),
    reference=(float("nan"),) * 3,
    universal=(10.0, 10.0, 10.0),
    clean=(1.0, 1.0, 1.0),
    fa_binary=(0.95, 0.97, 0.96),
    other_class=(0.05, 0.06, 0.04),
    other_class_slope=None,
    fa_multi=(0.05, 0.06, 0.04),
    cosine_binary=(0.44, 0.45, 0.43),
    residual=1e-5,
    dataset="clusters_d1000",
    readouts=READOUTS,
    n_points=1000,
    refined: float | None = 0.0,
) -> pd.DataFrame:
    """Rows as workflow_scripts/fa_figures.py writes them (per seed: the 2-class net, the
    k-class net under each readout, the robust reference). ``binary``: the 2-class net's
    PGD-margin radius, ``universal`` its universal-direction radius (its worst case is the
    smaller of the two); ``multiclass``: the k-class net's worst case (its PGD-margin radius;
    PGD-CE 1.5x that, universal 5 more). The 2-class
    and reference rows have no readout and are repeated under each (``per_readout``);
    ``n_points``: the test points each run's attacks ran on (the measured count);
    ``readouts=None``: no readout column (the summaries before readouts were a list). The
    defaults are a study whose claims hold (hand-computed in tests/unit/test_claims.py).
    ``other_class_slope``: the 2-class nets' slope of the other-class ratio on log10 step
    (None: ``other_class`` - 0.1, so that a ratio under the old 0.1 threshold falls).
    ``refined``: a bisection tolerance: every net's worst-case radius and the 2-class nets'
    universal one are refined (as rule fa_refine's brackets reach the summary:
    ``<col>.refined`` the radius, ``.lo`` / ``.hi`` +- half the tolerance around it; NaN for
    a censored radius); the default 0 (exact radii) leaves the intervals as the rules' tests
    compute them by hand; None: every radius is the grid's (no bracket columns: the ledger
    reads the config grid's cells)."""
    if other_class_slope is None:
        other_class_slope = tuple(round(o - 0.1, 12) for o in other_class)
    rows = []
    for s, rb in enumerate(binary):
        common = dict(dataset=dataset, optimizer="gd", seed=s, readout=None, n_points=n_points)
        decomposed = dict(fa_index=fa_binary[s], other_class_ratio=other_class[s],
                          other_class_slope=other_class_slope[s], residual_max=residual)  # fmt: skip
        radii = {"critical_radius.pgd_margin": rb, "critical_radius.universal": universal[s],
                 "critical_radius.worst": min(rb, universal[s])}  # fmt: skip
        radii.update(_refined(radii, refined, ("worst", "universal")))
        rows.append(
            dict(common, model="two_layer_m5", setting="binary", clean_acc=clean[s],
                 **radii, **decomposed, cosine_same_class_mean=cosine_binary[s])
        )  # fmt: skip
        for ro in readouts or [None]:
            rows.append(
                dict(common, model="two_layer_m5", setting="multiclass", readout=ro,
                     clean_acc=1.0,
                     **(mradii := {"critical_radius.pgd_margin": multiclass[s],
                                   "critical_radius.pgd_ce": 1.5 * multiclass[s],
                                   "critical_radius.universal": multiclass[s] + 5,
                                   "critical_radius.worst": multiclass[s]}),
                     **_refined(mradii, refined, ("worst",)),
                     fa_index=fa_multi[s], other_class_ratio=0.5, other_class_slope=0.1,
                     residual_max=residual,
                     cosine_same_class_mean=0.2)
            )  # fmt: skip
        ref = reference[s]
        rows.append(
            dict(common, model="robust_reference", optimizer="handbuilt",
                 setting="robust reference", clean_acc=1.0,
                 **(rradii := {"critical_radius.pgd_margin": ref,
                               "critical_radius.universal": ref, "critical_radius.worst": ref}),
                 **_refined(rradii, refined, ("worst",)))
        )  # fmt: skip
    df = pd.DataFrame(rows)
    if readouts is None:
        return df.drop(columns="readout")
    return per_readout(df, list(readouts))


FA_RADII = (
    0.0,
    2.0,
    4.0,
    6.0,
    8.0,
    9.0,
    10.0,
    11.0,
    12.0,
    13.0,
    14.0,
    15.0,
    16.0,
    18.0,
    20.0,
    22.0,
    24.0,
    28.0,
    32.0,
)  # config.yaml's studies.fa.radii


def fa_curve(
    zero=(9.0, 9.5, 8.5),
    dataset="clusters_d1000",
    readouts=READOUTS,
    radii=FA_RADII,
    n=1000,
    level=0.1,
) -> pd.DataFrame:
    """Rows as workflow_scripts/fa_figures.py writes robust_accuracy_vs_radius.csv: per seed
    the 2-class net's worst-case curve over ``radii``, which falls to ``level`` exactly at
    ``zero[s]`` under linear interpolation (NaN: never that low on the grid), repeated under
    each readout; the reference net's curve at 1.0 everywhere."""
    rows = []
    for s, z in enumerate(zero):
        acc = [1.0] * len(radii)  # NaN: never falls to the level on the grid
        if not math.isnan(z):
            j = next(i for i, e in enumerate(radii) if e >= z)  # the crossing's upper radius
            acc = [1.0] * j + [0.0] * (len(radii) - j)
            if j > 0:  # between radii[j - 1] and radii[j], a fraction f of the way
                f = (z - radii[j - 1]) / (radii[j] - radii[j - 1])
                if f < 0.9:
                    acc[j - 1] = level / (1 - f)  # from there to 0 at radii[j]
                else:
                    acc[j] = 1 - (1 - level) / f  # from 1 at radii[j - 1] to there
        for ro in readouts or [None]:
            for e, a in zip(radii, acc, strict=True):
                for kind, model, acc_ in (
                    ("two_layer", "two_layer_m5", a),
                    ("robust_reference", "robust_reference", 1.0),
                ):
                    rows.append(dict(attack="worst", eps=e, robust_acc=acc_, n=n,
                                     dataset=dataset, model=model, optimizer="gd",
                                     supervision="binary", seed=s, readout=ro,
                                     model_kind=kind))  # fmt: skip
    df = pd.DataFrame(rows)
    return df.drop(columns="readout") if readouts is None else df


def _refined(radii: Mapping[str, float], tol: float | None, attacks: Sequence[str]) -> dict:
    """The refined columns of ``attacks``' radii (+- tol / 2), none without a tolerance."""
    if tol is None:
        return {}
    out = {}
    for a in attacks:
        v = radii[f"critical_radius.{a}"]
        out.update({f"critical_radius.{a}.refined": v, f"critical_radius.{a}.lo": v - tol / 2,
                    f"critical_radius.{a}.hi": v + tol / 2})  # fmt: skip
    return out


def fa_scaling(
    slope: float | Sequence[float] = -0.5,
    d: int = 1000,
    seeds=(0, 1),
    slope_d: float | Sequence[float] = 0.5,
    lambdas: Mapping[str, tuple[float, float | Sequence[float]]] | None = None,
    refined: float | None = 0.0,
    bracket: float | None = None,
) -> pd.DataFrame:
    """Rows as fa_scaling_figure writes them (ibrobust.studies.feature_averaging.scaling.scaling_table):
    sweep over k at d: binary radius = sqrt(d) k^slope; sweep over d at k = 10: binary radius
    = d^slope_d / sqrt(10); a sequence gives each seed its own slope; the 2-class rows
    repeat under each readout. ``lambdas``: column -> (intercept, slope): the sweep's nets
    decomposed, the column = intercept + slope ln d on the d sweep's rows (a sequence of
    slopes: one per seed; seed s's intercept is intercept + 0.1 s); ``decoupling_ratio``
    goes on k-class rows (label multiclass), the others on the 2-class rows. ``refined``: a
    bisection tolerance: each 2-class radius is refined (``critical_radius.refined`` the
    radius, ``.lo`` / ``.hi`` +- half the tolerance); else ``bracket``: each radius in a grid
    cell [r - bracket, r + bracket] (not refined); both None: no bracket columns (a table
    from before them)."""

    def per_seed(s, i):
        return s[i] if isinstance(s, Sequence) else s

    rows = []
    for i, seed in enumerate(seeds):
        a, b = per_seed(slope, i), per_seed(slope_d, i)
        points = [("k", k, d, k, d**0.5 * k**a) for k in (2, 4, 10, 20)]
        points += [("d", dd, dd, 10, dd**b / 10**0.5) for dd in (250, 500, 1000, 2000)]
        for key, value, dd, k, rb in points:
            labels = [("binary", rb), ("robust reference", float("nan"))]
            if lambdas and "decoupling_ratio" in lambdas:
                labels.append(("multiclass", 2 * rb))
            for label, r in labels:
                extra = {}
                for col, (a0, b0) in (lambdas or {}).items():
                    if (col == "decoupling_ratio") != (label == "multiclass"):
                        continue
                    if label == "robust reference":
                        continue
                    extra[col] = (
                        a0 + 0.1 * i + per_seed(b0, i) * math.log(dd) if key == "d" else math.nan
                    )
                for readout in READOUTS:
                    rows.append(
                        dict(
                            **extra,
                            key=key,
                            dataset=f"clusters_d1000@{key}={value}",
                            model="two_layer_m5",
                            optimizer="gd",
                            supervision="binary",
                            seed=seed,
                            readout=readout,
                            label=label,
                            value=value,
                            d=dd,
                            k=k,
                            critical_radius=r,
                            **_scaling_brackets(r, refined, bracket),
                            sqrt_d_over_k=(dd / k) ** 0.5,
                            half_sqrt_d=dd**0.5 / 2,
                            sqrt_half_d=(dd / 2) ** 0.5,
                        )
                    )
    return pd.DataFrame(rows)


def _scaling_brackets(r: float, refined: float | None, bracket: float | None) -> dict:
    if refined is not None:
        h = math.nan if math.isnan(r) else refined / 2
        return {"critical_radius.refined": r, "critical_radius.lo": r - h,
                "critical_radius.hi": r + h}  # fmt: skip
    if bracket is not None:
        return {"critical_radius.refined": math.nan, "critical_radius.lo": r - bracket,
                "critical_radius.hi": r + bracket}  # fmt: skip
    return {}


def fa_margin_gradient(binary=(12.0, 12.5, 11.5), reference=(13.4, 14.0, 12.9)) -> pd.DataFrame:
    """Rows as workflow_scripts/fa_margin_gradient.py writes them (summarize per net, readout
    and seed), with the given median first-order distances (gradient norm 1). The default
    reference / 2-class ratios (1.117, 1.12, 1.122) sit on the theory's sqrt(k/8) = 1.118."""
    rows = []
    for seed, (fb, fr) in enumerate(zip(binary, reference, strict=True)):
        for label, model, fo, readouts in (
            ("binary", "two_layer_m5", fb, ["sum"]),
            ("multiclass", "two_layer_m5", 1.3 * fb, ["sum", "log_odds"]),
            ("robust reference", "robust_reference", fr, ["sum"]),
        ):
            for ro in readouts:
                rows.append(
                    {
                        "dataset": "clusters_d1000",
                        "model": model,
                        "optimizer": "gd",
                        "supervision": "binary" if label != "multiclass" else label,
                        "seed": seed,
                        "label": label,
                        "readout": ro,
                        "points": 200.0,
                        "frac_correct": 1.0,
                        "frac_unbroken": 0.0,
                        "margin.median": fo,
                        "grad_norm.median": 1.0,
                        "first_order.median": fo,
                        "breaking_radius.median": 0.9 * fo,
                        "margin_per_param_norm.median": fo / 10,
                        "grad_norm_per_param_norm.median": 0.1,
                        "breaking_over_first_order.median": 0.9,
                    }
                )
    return pd.DataFrame(rows)


# ---- Study FA-IMAGES ---------------------------------------------------------------------------
IMAGE_POINTS = 100  # attacked test points per run: accuracies are multiples of 1/100


def _mask(acc: float, n: int) -> torch.Tensor:
    k = round(acc * n)
    assert math.isclose(k / n, acc), f"{acc} is not a multiple of 1/{n}"
    return torch.arange(n) < k


def images_outputs(
    acc: Mapping[tuple[str, str, float], Sequence[float]],
    readouts: Sequence[str] = READOUTS,
    points: int = IMAGE_POINTS,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(summary.csv, robust_accuracy_vs_radius.csv) of runs whose worst-case robust accuracy
    per seed at radius eps is ``acc[(dataset, supervision, eps)]`` (clean accuracy 0.99;
    PGD-margin = the worst case, PGD-CE 0.05 above it on the k-class nets). Each run's table
    is robust_accuracy_table of first-k correctness masks over ``points`` points; a k-class
    run is attacked once per readout (the same numbers), a 2-class run once."""
    grids: dict[str, list[float]] = {}
    for ds, _, e in acc:
        grids.setdefault(ds, [0.0])
        grids[ds] = sorted({*grids[ds], e})
    tables, train = [], []
    for ds, grid in grids.items():
        for sup in ("binary", "multiclass"):
            per_eps = {e: acc[(ds, sup, e)] for e in grid if e > 0}
            seeds = len(next(iter(per_eps.values())))
            for seed in range(seeds):
                run = dict(dataset=ds, model="cnn_small", optimizer="adam_img", supervision=sup,
                           seed=seed)  # fmt: skip
                curve = [0.99 if e == 0 else per_eps[e][seed] for e in grid]
                masks = {"pgd_margin_img": torch.stack([_mask(a, points) for a in curve])}
                if sup == "multiclass":
                    ce = [min(0.99, a + 0.05) for a in curve]
                    masks["pgd_ce_img"] = torch.stack([_mask(a, points) for a in ce])
                table = robust_accuracy_table(masks, grid)
                for ro in readouts if sup == "multiclass" else [None]:
                    tables.append((dict(run, readout=ro), table))
                fine = 0.98 if sup == "multiclass" else None
                train.append(dict(run, **{"test.fine_acc": fine}))
    curves = per_readout(gathered(tables), list(readouts))
    radii = {ds: [e for e in grid if e > 0] for ds, grid in grids.items()}
    summary = summary_table(curves, pd.DataFrame(train), radii, {ds: ds for ds in grids})
    return summary, curves


# ---- Study PRICE-LIN ---------------------------------------------------------------------------
PRICE_DATASETS = ("teacher_w512_x512", "teacher_w4_x512", "teacher_w512_x4", "teacher_w4_x4")
REGIME = {  # config.yaml's datasets by sparsity regime (ibrobust.studies.price_linear.claims)
    "dense/dense": "teacher_w512_x512",
    "sparse w*": "teacher_w4_x512",
    "sparse x": "teacher_w512_x4",
    "sparse/sparse": "teacher_w4_x4",
}
PRICE_FRACTIONS = (0.0, 0.25, 0.5, 0.75, 0.9, 0.99)  # config.yaml's eps grid
PRICE_OPTIMIZERS = ("lin_gd", "lin_cd", "lin_sd", "diag_gd")
Value = Callable[[str, str, float, int, int], float]  # (dataset, optimizer, fraction, n, draw)


def price_outputs(
    gap: Value,
    clean: Value | None = None,
    converged: Callable[[str, str, float, int, int], bool] | None = None,
    margin: Value | None = None,
    optimizers: Sequence[str] = PRICE_OPTIMIZERS,
    n_values: Sequence[int] = (16, 32, 64),
    draws: Sequence[int] = (0, 1, 2, 3),
    fractions: Sequence[float] = PRICE_FRACTIONS,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(summary.csv, gap_vs_n.csv) of a study in which problem (dataset, optimizer, eps
    fraction, n, draw) has robust gap ``gap(...)`` (train - test robust accuracy), clean gap
    ``clean(...)`` (default 0.1), reached the stopping loss when ``converged(...)`` (default
    always) and has normalised margin ``margin(...)`` (default 0.5). One metrics.csv per
    (dataset, n) job, a row per (optimizer, draw, eps fraction), as price_train.py writes
    it; gathered with the job's wildcards as price_linear_figures.py gathers them."""
    cfg = default_config()["optimizers"]
    tables = []
    for ds in PRICE_DATASETS:
        for n in n_values:
            rows = []
            for o in optimizers:
                for draw in draws:
                    for f in fractions:
                        key = (ds, o, f, n, draw)
                        row = dict(optimizer=o, algorithm=algorithm_of(cfg[o]))
                        row.update(_price_row(draw, f, gap(*key),
                                              0.1 if clean is None else clean(*key),
                                              True if converged is None else converged(*key),
                                              0.5 if margin is None else margin(*key)))  # fmt: skip
                        rows.append(row)
            tables.append((dict(dataset=ds, n=n), pd.DataFrame(rows)))
    problems = gathered(tables)
    return mean_over_draws(problems), problems


def _price_row(draw: int, f: float, gap: float, clean: float, conv: bool, margin: float) -> dict:
    """One problem's row, the columns of metrics_table in its order."""
    tr, te = 0.5 + gap / 2, 0.5 - gap / 2  # in [0, 1] for |gap| <= 1
    return dict(
        draw=draw, eps_fraction=f, gamma=0.1, eps=0.1 * f,
        train_robust_acc=tr, test_robust_acc=te, train_clean_acc=1.0, test_clean_acc=1.0 - clean,
        robust_gap=tr - te, clean_gap=clean, l1_norm=1.0, l2_norm=1.0, margin_ratio=margin,
        iters=100.0 if conv else 5000.0, converged=conv, diverged=False,
        log10_loss=-4.5 if conv else -2.0, c=1.0,
    )  # fmt: skip


def edge_outputs(edge: Value, **kw) -> dict:
    """Both PRICE-LIN outputs of a study whose GD robust gap exceeds every other
    optimizer's by ``edge(dataset, "lin_gd", fraction, n, draw)``; every gap also moves with
    the draw by 0.05 x draw (the draw's training set), which pairing by draw removes."""

    def gap(ds, o, f, n, draw):
        common = 0.02 + 0.05 * draw
        return common + (edge(ds, o, f, n, draw) if o == "lin_gd" else 0.0)

    summary, problems = price_outputs(gap, **kw)
    return {PRICE: summary, PRICE_PROBLEMS: problems}


PRICE = ("price_linear", "figures/summary.csv")
PRICE_PROBLEMS = ("price_linear", "figures/gap_vs_n.csv")


# ---- Study PRELU ---------------------------------------------------------------------------------
PRELU_MODELS = {f"prelu_p{p}": {"kind": "prelu", "p": p} for p in (1, 2, 3, 4)}
PRELU_GRID = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.2, 1.5)  # config.yaml


def prelu_summary(
    radius: Mapping[int, Sequence[float]],
    frac_single: Mapping[int, float],
    dist: Mapping[int, tuple[float, float]],
    alpha: float = 0.1,
    below: Mapping[int, Sequence[float]] | None = None,
    refined: Mapping[int, float] | None = None,
) -> pd.DataFrame:
    """synthetic_summary of one run per p and seed with the given critical radii. The
    worst-case curve falls linearly from 1 at radius 0 to 0 at twice the critical radius;
    for a p in ``below`` it is instead below[p][seed] on (0, 0.8] (so robust accuracy at
    0.9 sqrt(2)/2 = 0.636, interpolated between 0.6 and 0.7, is exactly that) and half that
    beyond. ``refined``: p -> a bisection tolerance: its runs also get a refined radius (the
    given radius, bracketed by +- half the tolerance, as rule prelu_refine writes it)."""
    ds = f"prelu_clusters@alpha={alpha:g}"
    attack, analysis, train, ref = [], [], [], []
    grid = np.array(PRELU_GRID)
    for p, radii in radius.items():
        for seed, r in enumerate(radii):
            keys = dict(dataset=ds, model=f"prelu_p{p}", optimizer="sgd_prelu",
                        supervision="binary", seed=seed)  # fmt: skip
            if below is not None and p in below:
                a = below[p][seed]
                acc = np.where(grid == 0, 1.0, np.where(grid <= 0.8, a, a / 2))
            else:
                acc = np.clip(1 - grid / (2 * r), 0, 1)
            curve = {str(e): float(v) for e, v in zip(grid, acc, strict=True)}
            attack.append(dict(keys, robust_acc={"worst": curve}, critical_radius={"worst": r},
                               clean_acc=1.0, n_points=1000))  # fmt: skip
            fs = frac_single[p]
            analysis.append(dict(keys, n_active=20, frac_single=fs, frac_average=1 - fs,
                                 mean_best_cos=0.9, dist_F=dist[p][0], dist_Fp=dist[p][1]))  # fmt: skip
            train.append(dict(keys, **{"train.acc": 1.0, "test.binary_acc": 1.0}))
            if refined is not None and p in refined:
                h = refined[p] / 2
                ref.append(dict(keys, critical_radius=r, critical_radius_lo=r - h,
                                critical_radius_hi=r + h))  # fmt: skip
    labels = {"alphas": {ds: alpha}, "models": PRELU_MODELS, "k": 10}
    return synthetic_summary(attack, analysis, train, labels, refined=ref)


def prelu_table1(
    acc: Mapping[int, float | tuple[float, ...]],
    n_points: int = 1000,
    parity: Mapping[int, float | tuple[float, ...]] | None = None,
) -> pd.DataFrame:
    """table1 of 10-class nets whose worst-case accuracy at every Table-1 radius > 0 is
    acc[p] (one seed) or acc[p][s] (seed s), on ``n_points`` attacked points; with
    ``parity``, 2-class nets of the same p (their accuracies likewise) too."""
    train, attack = [], []
    grids = {"linf": [0.0, 0.05, 0.1], "l2": [0.0, 1.0, 2.0], "l1": [0.0, 5.0, 10.0]}
    tasks = [("multiclass", acc)] + ([("binary", parity)] if parity is not None else [])
    for sup, accs in tasks:
        for p, a in accs.items():
            per_seed = a if isinstance(a, tuple) else (a,)
            keys = dict(dataset="mnist_parity_full", model=f"prelu_mnist_p{p}",
                        optimizer="adam_prelu", supervision=sup)  # fmt: skip
            for seed, v in enumerate(per_seed):
                train.append(dict(keys, seed=seed, **{"test.fine_acc": 0.98,
                                                      "test.binary_acc": 0.99}))  # fmt: skip
                for norm, radii in grids.items():
                    curve = {str(e): (0.98 if e == 0 else v) for e in radii}
                    attack.append(dict(keys, seed=seed, grid=norm, n_points=n_points,
                                       robust_acc={"worst": curve, "apgdce": curve}))  # fmt: skip
    ps = {*acc, *(parity or {})}
    models = {f"prelu_mnist_p{p}": {"kind": "prelu", "p": p} for p in ps}
    return table1(attack, train, {"models": models})


PRELU = ("prelu", "figures/summary.csv")
TABLE1 = ("prelu", "figures/table1.csv")


# ---- Study PRICE-NN ------------------------------------------------------------------------------
NN_FIELDS = ("robust_test", "clean_test", "robust_train", "robust_test_end", "robust_test_best",
             "late_increase")  # fmt: skip
Cell = tuple[str, int, float]  # (arch, n, eps)


def price_nn_cells(
    fc_robust: Mapping[float, Sequence[float]] | None = None,
    fc_clean: Sequence[float] = (0.0, 0.0, 0.0),
    cnn: Mapping[tuple[int, float], Sequence[float]] | None = None,
    cnn_clean: Mapping[int, Sequence[float]] | None = None,
    unfitted: Collection[tuple[str, int, float, int]] = (),
    overfit: Mapping[str, Sequence[float]] | None = None,
    late: Mapping[str, Sequence[float]] | None = None,
    attack_points: int = 500,
) -> pd.DataFrame:
    """cells.csv (the columns of :data:`ibrobust.studies.price_nn.claims.SOURCES`): one row
    per (arch, n, eps, seed), GD's and SD's numbers side by side (each run's strong attacks
    on ``attack_points`` test points, the measured count). Both algorithms start at
    robust test accuracy 0.5 and clean test accuracy 0.9 (robust = clean at eps 0); the
    leading algorithm is ahead by the given accuracy points:

    * ``fc_robust[eps][seed]``: SD - GD robust test accuracy of the FC net (n = 100) at eps;
    * ``fc_clean[seed]``: SD - GD clean test accuracy of the FC net under ERM (eps 0);
    * ``cnn[(n, eps)][seed]``: GD - SD robust test accuracy of the CNN cell (eps > 0);
    * ``cnn_clean[n][seed]``: GD - SD clean test accuracy of the CNN at n under ERM;
    * ``unfitted``: the (arch, n, eps, seed) whose GD run did not fit (robust train 0.5);
    * ``overfit[alg][seed]``: the FC net's best minus final robust test accuracy on its
      evaluation curve (points) under robust ERM (default 0; the curve ends at the final
      robust test accuracy);
    * ``late[alg][seed]``: the CNN's late train-loss increase fraction, in the largest (n,
      eps) cell only (default 0.1; NaN elsewhere).
    """
    rows = {}

    def row(arch, n, eps, seed) -> dict:
        key = (arch, n, eps, seed)
        if key not in rows:
            base = dict(arch=arch, n=n, eps=eps, seed=seed)
            for a in ("gd", "sd"):
                base.update({f"{a}_robust_test": 0.5 if eps > 0 else 0.9, f"{a}_clean_test": 0.9,
                             f"{a}_robust_train": 1.0, f"{a}_robust_test_end": math.nan,
                             f"{a}_robust_test_best": math.nan,
                             f"{a}_late_increase": math.nan,
                             f"{a}_attack_points": attack_points})  # fmt: skip
            rows[key] = base
        return rows[key]

    def lead(r, first, field, points):
        r[f"{first}_{field}"] = r[f"{first}_{field}"] + points / 100
        if r["eps"] == 0 and field == "clean_test":
            r[f"{first}_robust_test"] = r[f"{first}_clean_test"]

    for eps, per_seed in (fc_robust or {}).items():
        for s, v in enumerate(per_seed):
            lead(row("fc", 100, eps, s), "sd", "robust_test", v)
    for s, v in enumerate(fc_clean):
        lead(row("fc", 100, 0.0, s), "sd", "clean_test", v)
    for (n, eps), per_seed in (cnn or {}).items():
        for s, v in enumerate(per_seed):
            lead(row("cnn", n, eps, s), "gd", "robust_test", v)
    for n, per_seed in (cnn_clean or {}).items():
        for s, v in enumerate(per_seed):
            lead(row("cnn", n, 0.0, s), "gd", "clean_test", v)
    for (arch, n, eps, seed), r in rows.items():
        for a in ("gd", "sd"):
            if arch == "fc" and eps > 0:
                extra = (overfit or {}).get(a, [0.0] * (seed + 1))[seed]
                r[f"{a}_robust_test_end"] = r[f"{a}_robust_test"]
                r[f"{a}_robust_test_best"] = r[f"{a}_robust_test_end"] + extra / 100
        r["gd_robust_train"] = 0.5 if (arch, n, eps, seed) in unfitted else 1.0
    cnn_cells = [k for k in rows if k[0] == "cnn" and k[2] > 0]
    if cnn_cells:
        top = max(k[1] for k in cnn_cells), max(k[2] for k in cnn_cells)
        for (arch, n, eps, seed), r in rows.items():
            if arch == "cnn" and (n, eps) == top:
                for a in ("gd", "sd"):
                    r[f"{a}_late_increase"] = (late or {}).get(a, [0.1] * (seed + 1))[seed]
    df = pd.DataFrame(list(rows.values()))
    for a in ("gd", "sd"):
        df[f"{a}_fitted"] = (df[f"{a}_robust_train"] >= 1.0).astype(float)
        df[f"{a}_epochs"] = 10.0
    cols = ["arch", "n", "eps", "seed"]
    cols += [f"{a}_{f}" for a in ("gd", "sd") for f in NN_FIELDS]
    cols += [f"{a}_{f}" for f in ("fitted", "epochs", "attack_points") for a in ("gd", "sd")]
    return df[cols].sort_values(["arch", "n", "eps", "seed"]).reset_index(drop=True)


PRICE_NN = ("price_nn", "figures/cells.csv")


# ---- Study MARGIN --------------------------------------------------------------------------------
MARGIN_CHECKPOINTS = (("model-1", 2), ("final", 5))  # (name, epoch) of each checkpoint
LOSS_BASED, CONSTANT = "loss_based", "constant"  # the runs' schedules (margin/claims.py)
# columns the claims read beyond margin_figures.py's (NaN where a run does not compute them)
MARGIN_EXTRA = ("kkt_residual", "homogeneity", "loss_rate_slope", "loss_rate_theory",
                "norm_rate_slope", "norm_rate_theory")  # fmt: skip


def margin_points(
    distances: Mapping[tuple[str, str], Sequence[float]],
    certified: float = 0.5,
    margins: Mapping[tuple[str, str], Sequence[float]] | None = None,
) -> pd.DataFrame:
    """One run's points.csv (the columns of ibrobust.studies.margin.experiment.checkpoint_robustness):
    ``distances[(checkpoint, split)]``: the FAB l2 distance of each point (NaN: not reached);
    the PGD bisection bound 10 % above it on the first half of the points (NaN beyond, as
    outside the bisection sample); the certificate ``certified`` x the distance; margins 1
    unless given."""
    frames = []
    for (name, split), d in distances.items():
        d = np.asarray(d, dtype=float)
        n = len(d)
        pgd = np.where(np.arange(n) < (n + 1) // 2, 1.1 * d, np.nan)
        q = np.ones(n) if margins is None else np.asarray(margins[(name, split)], dtype=float)
        df = pd.DataFrame(
            {
                "index": np.arange(n),
                "margin": q,
                "normalized_margin": q / 10,
                "fab_l2": d,
                "fab_linf": np.full(n, np.nan),
                "pgd_l2_upper": pgd,
                "certified_l2": certified * np.nan_to_num(d, nan=1.0),
                "certified_l2_pairwise": certified * np.nan_to_num(d, nan=1.0),
            }
        )
        df["distance_l2"] = df[["fab_l2", "pgd_l2_upper"]].min(axis=1, skipna=True)
        df["distance_linf"] = df["fab_linf"]
        frames.append(df.assign(checkpoint=name, split=split))
    return pd.concat(frames, ignore_index=True)


def history_table(
    epochs: Sequence[int],
    log10_loss: Sequence[float],
    normalized: Sequence[float],
    smoothed: Sequence[float],
    checkpoints: Sequence[tuple[str, int]] = MARGIN_CHECKPOINTS,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(history.csv, checkpoints.csv) of one run, as margin_train.py writes them: one
    history row per logged epoch (train accuracy 1 once the smoothed margin is positive)."""
    sm = np.asarray(smoothed, dtype=float)
    hist = pd.DataFrame(
        {
            "epoch": np.asarray(epochs),
            "train_acc": np.where(sm > 0, 1.0, 0.5),
            "test_acc": np.where(sm > 0, 0.9, 0.5),
            "log10_train_loss": np.asarray(log10_loss, dtype=float),
            "q_min": np.asarray(normalized, dtype=float),
            "rho": np.ones(len(sm)),
            "normalized_margin": np.asarray(normalized, dtype=float),
            "smoothed_normalized_margin": sm,
            "alpha": np.full(len(sm), 2.0),
            "log10_eta": np.zeros(len(sm)),
        }
    )
    return hist, pd.DataFrame([dict(name=n, epoch=e) for n, e in checkpoints])


def margin_history(
    log10_loss_end: float = -310.0,
    margin_growth: float = 3.0,
    smoothed_dip: float = 0.0,
    smoothed: Sequence[float] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(history.csv, checkpoints.csv) of one run: epochs 0..5, fit from epoch 2, log10 L
    falling linearly to ``log10_loss_end`` (so the two checkpoints, epochs 2 and 5, sit at
    0.4 and 1 x it: log10(-log10 L) 0.398 apart), the normalized margin growing
    ``margin_growth``-fold from the first checkpoint to the last (a log-log slope of
    log10(growth) / log10(2.5)), the smoothed margin dipping by ``smoothed_dip`` once (epoch
    4) unless given whole (``smoothed``)."""
    nm = [-1.0, -0.1, 1e-3, 1.5e-3, 2e-3, 1e-3 * margin_growth]
    sm = [-1.0, -0.5, 1e-3, 1.5e-3, 1.5e-3 - smoothed_dip, 3e-3] if smoothed is None else smoothed
    return history_table(range(6), np.linspace(0.0, log10_loss_end, 6), nm, sm)


def margin_outputs(runs: Mapping[str, tuple], radii: Mapping) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(summary.csv, points.csv) as workflow_scripts/margin_figures.py writes them from each
    run's (history, checkpoints, points) tables, plus the columns the claims declare:
    ``schedule`` (default loss_based) and :data:`MARGIN_EXTRA` (NaN unless given). A run's
    tuple may end with a dict of those values (a scalar for the run, or a list with one
    value per checkpoint). ``radii``: the study's robustness radii."""
    tables, all_points = {}, []
    for run, (hist, cks, pts, *rest) in runs.items():
        extra = {"schedule": LOSS_BASED, **dict.fromkeys(MARGIN_EXTRA, math.nan)}
        extra.update(rest[0] if rest else {})
        sep, cc = mr.separation(hist), mr.certificate_check(pts)
        all_points.append(pts.assign(run=run))
        rob = mr.robust_at(pts, radii)
        wide = rob.pivot(index="checkpoint", columns="split")
        wide.columns = [f"{split}_{col}" for col, split in wide.columns]
        t = mr.checkpoint_table(hist, cks)
        t = t.merge(wide, left_on="name", right_index=True, how="left")
        tables[run] = t.assign(
            **{f"sep_{a}": b for a, b in sep.items()},
            **{f"cert_{a}": b for a, b in cc.items()},
            min_log10_loss=float(hist["log10_train_loss"].min()),
            all_finite=float(mr.all_finite(hist)),
            **extra,
        )
    return mr.summary_table(tables), pd.concat(all_points, ignore_index=True)


def margin_kkt(cks: pd.DataFrame, residuals: Sequence[float] | None = None, degree: int = 4):
    """One run's kkt.csv (workflow_scripts/margin_kkt.py): per checkpoint its KKT residual
    (default: falling tenfold from the first checkpoint to the last) and the net's degree."""
    r = np.geomspace(0.5, 0.05, len(cks)) if residuals is None else np.asarray(residuals, float)
    return pd.DataFrame(
        {"name": cks["name"], "epoch": cks["epoch"], "kkt_residual": r, "homogeneity": degree}
    )


def margin_flow_history(
    a: float | None = None,
    degree: int = 4,
    steps: int = 20000,
    lr: float = 0.1,
    log_every: int = 10,
    fit_step: int = 100,
    dips: Sequence[int] = (),
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(history.csv, checkpoints.csv) of a constant-step run (ibrobust.training.margin.train_flow
    columns) on the flow's rates exactly: from ``fit_step`` on, L(t) = 1 / (t (ln t)^a) (a =
    2 - 2/L by default: the theorem's) and rho^L = ln(1/L) = ln t + a ln ln t (the smoothed
    margin's relation at gamma~ = 1) at t = step x lr; before it the data is not fit. The smoothed margin rises, except one decrease of 1e-6 (relative)
    at each logged step of ``dips``. Checkpoints: ``separated`` at the fit, ``final``."""
    a = 2.0 - 2.0 / degree if a is None else a
    step = np.arange(0, steps + 1, log_every)
    t = step * lr
    fit = step >= fit_step
    ln_t = np.log(np.where(fit & (t > np.e), t, np.e))  # (ln t >= 1: finite where t <= e)
    ln_loss = np.where(fit, -ln_t - a * np.log(ln_t), math.log(math.log(10.0)))
    sm = np.where(fit, 1e-3 * (1.0 - 1.0 / ln_t), -1.0)
    for d in dips:
        sm[d] = sm[d - 1] * (1 - 1e-6)
    rho = np.where(fit, -ln_loss, 1.0) ** (1.0 / degree)  # ln t + a ln ln t > 0 (t >= e)
    nm = np.where(fit, sm * 1.01, -0.5)
    hist = pd.DataFrame(
        {
            "epoch": step, "log10_train_loss": ln_loss / math.log(10.0), "q_min": nm * rho**degree,
            "rho": rho, "normalized_margin": nm, "smoothed_normalized_margin": sm,
            "train_acc": np.where(fit, 1.0, 0.5), "test_acc": np.where(fit, 0.9, 0.5),
            "log10_eta": math.log10(lr), "seconds": step * 1e-3, "time": t,
        }
    )  # fmt: skip
    cks = pd.DataFrame([dict(name="separated", epoch=int(step[fit][0])),
                        dict(name="final", epoch=int(step[-1]))])  # fmt: skip
    return hist, cks


def margin_summary_outputs(
    runs: Mapping[str, tuple], radii: Mapping, constant: Mapping[str, tuple] | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(summary.csv, points.csv) exactly as workflow_scripts/margin_figures.py writes them
    (:func:`ibrobust.studies.margin.tables.run_table` per run) from each loss-based run's
    (history, checkpoints, points[, kkt]) tables and each constant-step run's (history,
    checkpoints[, kkt]) (``constant``, keyed by the same run labels); kkt defaults to
    :func:`margin_kkt`; ``radii``: the study's robustness radii."""
    tables, all_points = {}, []
    for run, (hist, cks, pts, *kkt) in runs.items():
        all_points.append(pts.assign(run=run))
        k = kkt[0] if kkt else margin_kkt(cks)
        tables[(run, "loss_based")] = mr.run_table(hist, cks, pts, k, radii)[0]
    for run, (hist, cks, *kkt) in (constant or {}).items():
        k = kkt[0] if kkt else margin_kkt(cks)
        tables[(run, "constant")] = mr.run_table(hist, cks, None, k, radii, "constant")[0]
    return mr.summary_table(tables), pd.concat(all_points, ignore_index=True)


def margin_schedules(pairs: Mapping[str, tuple[float, float]], epochs: int = 200) -> pd.DataFrame:
    """schedules.csv (the columns of margin/claims.py SOURCES["schedules"]): per seed's run,
    log10 L of its (loss-based, constant-step) runs at the constant run's last epoch."""
    return pd.DataFrame(
        [dict(run=run, epochs=epochs, log10_loss_constant=c, log10_loss_loss_based=lb)
         for run, (lb, c) in pairs.items()]
    )  # fmt: skip
