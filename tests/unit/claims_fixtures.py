"""Study outputs for the ledger tests, in the exact shapes the workflow writes them.

FA: the per-run rows of workflow_scripts/fa_summary_table.py (and the scaling CSV of
fa_scaling_figure.py, the margin-gradient summary of fa_margin_gradient.py). FA-IMAGES:
per-run ``robust_accuracy.csv`` tables (:func:`ibrobust.analysis.robustness.robust_accuracy_table`
of hand-made correctness masks), gathered as images_robust_figure.py and
images_summary_table.py gather them (``per_readout(gather_csv(...))``): the curves CSV, and
:func:`ibrobust.studies.feature_averaging_images.tables.summary_table` of it. PRICE-LIN: per-run
``metrics.csv`` tables (the columns of
:func:`ibrobust.studies.price_linear.experiment.metrics_table`) gathered as price_gap_figure.py does
(``gap_vs_n.csv``) and :func:`~ibrobust.studies.price_linear.tables.mean_over_draws` of
them (``summary.csv``). PRELU: :func:`ibrobust.studies.prelu.tables.synthetic_summary` and
:func:`ibrobust.studies.prelu.tables.table1`. PRICE-NN:
:func:`ibrobust.studies.price_nn.tables.study_tables` of hand-made final rows. MARGIN:
workflow_scripts/margin_summary.py's steps on hand-made per-run history, checkpoints and
points tables (``summary.csv`` and ``points.csv``). Every number is set by the caller, so
each test chooses the verdict it expects.
"""

from __future__ import annotations

import copy
import importlib.util
import math
import tempfile
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import yaml

from ibrobust.analysis.robustness import robust_accuracy_table
from ibrobust.claims.intervals import LEVEL
from ibrobust.claims.ledger import build_ledger, study_outputs
from ibrobust.config import load_schema, validate_config
from ibrobust.experiments.tables import per_readout
from ibrobust.io import save_csv
from ibrobust.studies.feature_averaging_images.tables import summary_table
from ibrobust.studies.margin import tables as mr
from ibrobust.studies.prelu.tables import synthetic_summary, table1
from ibrobust.studies.price_linear.algorithms import algorithm_of
from ibrobust.studies.price_linear.experiment import METRICS
from ibrobust.studies.price_linear.tables import mean_over_draws
from ibrobust.studies.price_nn.tables import study_tables

ROOT = Path(__file__).resolve().parents[2]
READOUTS = ("sum", "argmax", "log_odds")  # config.yaml's readouts of fa and fa_images


@cache
def _validated() -> dict:
    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())
    return validate_config(cfg, load_schema(ROOT / "schemas" / "config.schema.yaml"))


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
T_975_5, T_975_15 = 2.57058183564, 2.13144954556
T_95_2 = 2.91998558035


def t_ends(values: Sequence[float], t: float) -> tuple[float, float]:
    """mean -+ t sd / sqrt(n) of ``values`` (the t interval, given its quantile)."""
    v = np.asarray(values, dtype=float)
    half = t * v.std(ddof=1) / math.sqrt(v.size)
    return v.mean() - half, v.mean() + half


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
) -> pd.DataFrame:
    """The ledger of ``cfg`` when exactly ``files`` ((study, relative path) -> table) exist,
    indexed by (study, id, setting)."""
    for (study, rel), df in files.items():
        write(tmp_path, study, rel, df)
    table = build_ledger(study_outputs(cfg, tmp_path), level)
    return table.set_index(["study", "id", "setting"]).sort_index()


def verdicts(df: pd.DataFrame, study: str, id_: str) -> list[str]:
    return list(df.loc[(study, id_)].verdict)


def one(df: pd.DataFrame, study: str, id_: str) -> pd.Series:
    """The single ledger row of claim ``id_``."""
    rows = df.loc[(study, id_)]
    assert len(rows) == 1, rows
    return rows.iloc[0]


# ---- Study FA ---------------------------------------------------------------------------------
def fa_summary(
    binary=(10.0, 10.5, 9.5),
    multiclass=(17.0, 16.0, 18.0),
    multiclass_margin=None,
    reference=(float("nan"),) * 3,
    fa_binary=(0.95, 0.97, 0.96),
    fa_multi=(0.05, 0.1, 0.08),
    cosine_binary=(0.44, 0.45, 0.43),
    residual=1e-5,
    dataset="clusters_d1000",
    readouts=READOUTS,
) -> pd.DataFrame:
    """Rows as fa_summary_table writes them: ``multiclass`` is the worst case of the k-class
    nets; its PGD-margin radius (``multiclass_margin``, default = the worst case) and a
    PGD-CE radius 1.5x larger; every row once per readout (the same numbers under each;
    ``readouts=None``: no readout column, the summaries before readouts were a list)."""
    rows = _fa_rows(binary, multiclass, multiclass_margin, reference, fa_binary, fa_multi,
                    cosine_binary, residual, dataset)  # fmt: skip
    if readouts is None:
        return rows
    return pd.concat([rows.assign(readout=ro) for ro in readouts], ignore_index=True)


def _fa_rows(
    binary, multiclass, multiclass_margin, reference, fa_binary, fa_multi, cosine_binary,
    residual, dataset,
) -> pd.DataFrame:  # fmt: skip
    mm = multiclass if multiclass_margin is None else multiclass_margin
    rows = []
    for s, (rb, rm, rmm, rr) in enumerate(zip(binary, multiclass, mm, reference, strict=True)):
        common = dict(dataset=dataset, optimizer="gd", seed=s)
        rows.append(
            dict(
                common,
                model="two_layer_m5",
                setting="binary",
                clean_acc=1.0,
                **{
                    "critical_radius.pgd_margin": rb,
                    "critical_radius.universal": rb + 3,
                    "critical_radius.worst": rb,
                },
                fa_index=fa_binary[s],
                residual_max=residual,
                cosine_same_class_mean=cosine_binary[s],
            )
        )
        rows.append(
            dict(
                common,
                model="two_layer_m5",
                setting="multiclass",
                clean_acc=1.0,
                **{
                    "critical_radius.pgd_margin": rmm,
                    "critical_radius.pgd_ce": 1.5 * rmm,
                    "critical_radius.universal": rmm + 5,
                    "critical_radius.worst": min(rm, rmm),
                },
                fa_index=fa_multi[s],
                residual_max=residual,
                cosine_same_class_mean=0.2,
            )
        )
        rows.append(
            dict(
                common,
                model="robust_reference",
                optimizer="handbuilt",
                setting="robust reference",
                clean_acc=1.0,
                **{
                    "critical_radius.pgd_margin": rr,
                    "critical_radius.universal": rr,
                    "critical_radius.worst": rr,
                },
            )
        )
    return pd.DataFrame(rows)


def fa_scaling(
    slope: float | Sequence[float] = -0.5,
    d: int = 1000,
    seeds=(0, 1),
    slope_d: float | Sequence[float] = 0.5,
) -> pd.DataFrame:
    """Rows as fa_scaling_figure writes them (ibrobust.studies.feature_averaging.scaling.scaling_table):
    sweep over k at d: binary radius = sqrt(d) k^slope; sweep over d at k = 10: binary radius
    = d^slope_d / sqrt(10); a sequence gives each seed its own slope; the 2-class rows
    repeat under each readout."""

    def per_seed(s, i):
        return s[i] if isinstance(s, Sequence) else s

    rows = []
    for i, seed in enumerate(seeds):
        a, b = per_seed(slope, i), per_seed(slope_d, i)
        points = [("k", k, d, k, d**0.5 * k**a) for k in (2, 4, 10, 20)]
        points += [("d", dd, dd, 10, dd**b / 10**0.5) for dd in (250, 500, 1000, 2000)]
        for key, value, dd, k, rb in points:
            for label, r in (("binary", rb), ("robust reference", float("nan"))):
                for readout in READOUTS:
                    rows.append(
                        dict(
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
                            sqrt_d_over_k=(dd / k) ** 0.5,
                            half_sqrt_d=dd**0.5 / 2,
                            sqrt_half_d=(dd / 2) ** 0.5,
                        )
                    )
    return pd.DataFrame(rows)


def fa_margin_gradient(binary=(12.0, 12.5, 11.5), reference=(24.0, 24.0, 24.0)) -> pd.DataFrame:
    """Rows as workflow_scripts/fa_margin_gradient.py writes them (summarize per net, readout
    and seed), with the given median first-order distances (gradient norm 1)."""
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
PRICE_FRACTIONS = (0.0, 0.25, 0.5, 0.75, 0.9, 0.99)
Gap = Callable[[str, str, float, int, int], float]  # (dataset, optimizer, fraction, n, draw)


def price_outputs(
    gap: Gap,
    optimizers: Sequence[str] = ("lin_gd", "lin_cd", "lin_sd", "diag_gd"),
    n_values: Sequence[int] = (16, 32, 64),
    draws: Sequence[int] = (0, 1, 2, 3),
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(summary.csv, gap_vs_n.csv) of a study whose robust gap (train - test robust accuracy)
    of each problem is ``gap(dataset, optimizer, eps_fraction, n, draw)``: one metrics.csv
    per (dataset, optimizer, n) job with a row per (draw, eps fraction), the columns of
    metrics_table, gathered as price_gap_figure.py and price_summary_table.py gather them."""
    optimizer_cfg = default_config()["optimizers"]
    tables = []
    for ds in PRICE_DATASETS:
        for o in optimizers:
            for n in n_values:
                rows = []
                for draw in draws:
                    for f in PRICE_FRACTIONS:
                        g = gap(ds, o, f, n, draw)
                        tr, te = 0.5 + g / 2, 0.5 - g / 2  # in [0, 1] for |gap| <= 1
                        rows.append(_price_row(draw, f, tr, te))
                table = pd.DataFrame(rows)
                table.insert(0, "algorithm", algorithm_of(optimizer_cfg[o]))
                tables.append((dict(dataset=ds, optimizer=o, n=n), table))
    problems = gathered(tables)
    return mean_over_draws(problems), problems


def _price_row(draw: int, fraction: float, train: float, test: float) -> dict:
    row = dict(draw=draw, eps_fraction=fraction, gamma=0.1, eps=0.1 * fraction)
    row.update(dict.fromkeys(METRICS, 0.0))
    row.update(train_robust_acc=train, test_robust_acc=test, robust_gap=train - test, c=1.0)
    row.update(train_clean_acc=1.0, test_clean_acc=0.9, clean_gap=0.1, iters=100.0)
    return row


def constant_gaps(gaps: Mapping[str, float]) -> Gap:
    """Every problem of optimizer o has robust gap ``gaps[o]``."""
    return lambda ds, o, f, n, draw: gaps[o]


# ---- Study PRELU ---------------------------------------------------------------------------------
PRELU_MODELS = {f"prelu_p{p}": {"kind": "prelu", "p": p} for p in (1, 2, 3, 4)}


def prelu_summary(
    radius: dict[int, tuple[float, ...]],
    frac_single: dict[int, float],
    dist: dict[int, tuple[float, float]],
    alpha: float = 0.1,
) -> pd.DataFrame:
    """synthetic_summary for the given critical radii per p and seed (a worst-case curve
    that falls linearly from 1 at radius 0 to 0 at twice the critical radius)."""
    ds = f"prelu_clusters@alpha={alpha:g}"
    attack, analysis, train = [], [], []
    grid = np.array([0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.2, 1.5])
    for p, radii in radius.items():
        for seed, r in enumerate(radii):
            keys = dict(
                dataset=ds,
                model=f"prelu_p{p}",
                optimizer="sgd_prelu",
                supervision="binary",
                seed=seed,
            )
            acc = np.clip(1 - grid / (2 * r), 0, 1)
            curve = {str(e): float(a) for e, a in zip(grid, acc, strict=True)}
            attack.append(
                dict(
                    keys,
                    robust_acc={"worst": curve},
                    critical_radius={"worst": r},
                    clean_acc=1.0,
                    n_points=1000,
                )
            )
            fs = frac_single[p]
            analysis.append(
                dict(
                    keys,
                    n_active=20,
                    frac_single=fs,
                    frac_average=1 - fs,
                    mean_best_cos=0.9,
                    dist_F=dist[p][0],
                    dist_Fp=dist[p][1],
                )
            )
            train.append(dict(keys, **{"train.acc": 1.0, "test.binary_acc": 1.0}))
    labels = {"alphas": {ds: alpha}, "models": PRELU_MODELS, "k": 10}
    return synthetic_summary(attack, analysis, train, labels)


def prelu_table1(acc: dict[int, float | tuple[float, ...]], n_points: int = 1000) -> pd.DataFrame:
    """table1 of 10-class nets whose worst-case accuracy at every Table-1 radius > 0 is
    acc[p] (one seed) or acc[p][s] (seed s), on ``n_points`` attacked points."""
    train, attack = [], []
    grids = {"linf": [0.0, 0.05, 0.1], "l2": [0.0, 1.0, 2.0], "l1": [0.0, 5.0, 10.0]}
    for p, a in acc.items():
        per_seed = a if isinstance(a, tuple) else (a,)
        keys = dict(
            dataset="mnist_parity_full",
            model=f"prelu_mnist_p{p}",
            optimizer="adam_prelu",
            supervision="multiclass",
        )
        for seed, v in enumerate(per_seed):
            train.append(dict(keys, seed=seed, **{"test.fine_acc": 0.98}))
            for norm, radii in grids.items():
                curve = {str(e): (0.98 if e == 0 else v) for e in radii}
                attack.append(
                    dict(
                        keys,
                        seed=seed,
                        grid=norm,
                        robust_acc={"worst": curve, "apgdce": curve},
                        n_points=n_points,
                    )
                )
    models = {f"prelu_mnist_p{p}": {"kind": "prelu", "p": p} for p in acc}
    return table1(attack, train, {"models": models})


# ---- Study PRICE-NN ------------------------------------------------------------------------------
def price_nn_summary(
    fc_robust: Mapping[float, Sequence[float]],
    fc_clean: Sequence[float],
    cnn: Mapping[tuple[int, float], Sequence[float]] | None = None,
    unfitted: Sequence[tuple[int, float]] = (),
) -> pd.DataFrame:
    """study_tables(final)["differences"] (summary.csv) of final rows whose SD - GD robust
    test accuracy (points) of the FC net at eps > 0 is ``fc_robust[eps][seed]``, whose SD - GD
    clean accuracy at eps 0 is ``fc_clean[seed]`` and whose CNN GD - SD robust accuracy of
    cell (n, eps) is ``cnn[(n, eps)][seed]``; the CNN GD runs of the ``unfitted`` cells do
    not fit their training set (robust train accuracy 0.5)."""
    rows = []

    def add(arch, eps, n, seed, lead, trail, diff, metric, fit=1.0):
        base = dict(arch=arch, eps=eps, n=n, seed=seed, robust_test_acc_train_pgd=0.5,
                    robust_test_acc_worst=0.5, test_acc=0.9, robust_train_acc_train_pgd=1.0,
                    robust_train_err=0.0, fitted=True, epochs=10, reached_stop_loss=True,
                    epochs_to_threshold=10, final_loss=1e-3, robust_test_acc_best=0.5,
                    best_epoch=10)  # fmt: skip
        rows.append(dict(base, algorithm=trail))
        ahead = dict(base, algorithm=lead, robust_train_acc_train_pgd=fit,
                     robust_train_err=1.0 - fit, fitted=fit >= 1.0, reached_stop_loss=fit >= 1.0)  # fmt: skip
        ahead[metric] = base[metric] + diff / 100
        rows.append(ahead)

    for eps, per_seed in fc_robust.items():
        for seed, v in enumerate(per_seed):
            add("fc", eps, 100, seed, "sd", "gd", v, "robust_test_acc_worst")
    for seed, v in enumerate(fc_clean):
        add("fc", 0.0, 100, seed, "sd", "gd", v, "test_acc")
    for (n, eps), per_seed in (cnn or {}).items():
        for seed, v in enumerate(per_seed):
            fit = 0.5 if (n, eps) in unfitted else 1.0
            add("cnn", eps, n, seed, "gd", "sd", v, "robust_test_acc_worst", fit)
    return study_tables(pd.DataFrame(rows))["differences"]


# ---- Study MARGIN --------------------------------------------------------------------------------
MARGIN_CHECKPOINTS = (("model-1", 2), ("final", 5))  # (name, epoch) of each checkpoint


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


def margin_history(
    log10_loss_end: float = -310.0, margin_growth: float = 3.0, smoothed_dip: float = 0.0
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(history.csv, checkpoints.csv) of one run: epochs 0..5, fit from epoch 2, the
    normalized margin growing ``margin_growth``-fold from the first checkpoint to the last,
    the smoothed margin dipping by ``smoothed_dip`` once (epoch 4)."""
    epochs = np.arange(6)
    nm = np.array([-1.0, -0.1, 1e-3, 1.5e-3, 2e-3, 1e-3 * margin_growth])
    sm = np.array([-1.0, -0.5, 1e-3, 1.5e-3, 1.5e-3 - smoothed_dip, 3e-3])
    hist = pd.DataFrame(
        {
            "epoch": epochs,
            "train_acc": [0.5, 0.9, 1.0, 1.0, 1.0, 1.0],
            "test_acc": [0.5, 0.85, 0.9, 0.9, 0.9, 0.9],
            "log10_train_loss": np.linspace(0.0, log10_loss_end, 6),
            "q_min": nm,
            "rho": np.ones(6),
            "normalized_margin": nm,
            "smoothed_normalized_margin": sm,
            "alpha": np.full(6, 2.0),
            "log10_eta": np.zeros(6),
        }
    )
    cks = pd.DataFrame([dict(name=n, epoch=e) for n, e in MARGIN_CHECKPOINTS])
    return hist, cks


def margin_outputs(
    runs: Mapping[str, tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]], radii: Mapping
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(summary.csv, points.csv) as workflow_scripts/margin_summary.py writes them from each
    run's (history, checkpoints, points) tables; ``radii``: the study's robustness radii."""
    tables, all_points = {}, []
    for run, (hist, cks, pts) in runs.items():
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
        )
    return mr.summary_table(tables), pd.concat(all_points, ignore_index=True)
