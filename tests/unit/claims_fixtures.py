"""Study summaries for the ledger tests, in the exact shapes the workflow writes them.

FA: the per-run rows of workflow_scripts/fa_summary_table.py (and the scaling CSV of
fa_scaling_figure.py); FA-IMAGES: :func:`ibrobust.experiments.fa_images.summary_table` on
tidy attack curves; PRICE-LIN: :func:`ibrobust.experiments.price_linear.mean_over_draws` on
a tidy metrics table; PRELU: :func:`ibrobust.experiments.prelu.synthetic_summary` on
per-run attack / analysis / train dicts, and :func:`ibrobust.experiments.prelu.table1`.
Every number is set by the caller, so each test chooses the verdict it expects.
"""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from ibrobust.config import load_schema, validate_config
from ibrobust.experiments.fa_images import summary_table
from ibrobust.experiments.prelu import synthetic_summary, table1
from ibrobust.experiments.price_linear import METRICS
from ibrobust.experiments.price_linear_tables import mean_over_draws

ROOT = Path(__file__).resolve().parents[2]


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
    readouts=("sum", "argmax", "log_odds"),
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
    slope: float = -0.5, d: int = 1000, seeds=(0, 1), slope_d: float = 0.5
) -> pd.DataFrame:
    """Rows as fa_scaling_figure writes them (ibrobust.experiments.fa_scaling.scaling_table):
    sweep over k at d: binary radius = sqrt(d) k^slope; sweep over d at k = 10: binary radius
    = d^slope_d / sqrt(10); the 2-class rows repeat under each readout."""
    rows = []
    points = [("k", k, d, k, d**0.5 * k**slope) for k in (2, 4, 10, 20)]
    points += [("d", dd, dd, 10, dd**slope_d / 10**0.5) for dd in (250, 500, 1000, 2000)]
    for seed in seeds:
        for key, value, dd, k, rb in points:
            for label, r in (("binary", rb), ("robust reference", float("nan"))):
                for readout in ("sum", "argmax", "log_odds"):
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
def images_summary(acc: dict[tuple[str, str, float], tuple[float, ...]]) -> pd.DataFrame:
    """summary_table on curves whose worst-case robust accuracy per seed is
    ``acc[(dataset, supervision, eps)]`` (the PGD-CE attack 0.05 above, margin = worst)."""
    rows, train = [], []
    for (ds, sup, eps), per_seed in acc.items():
        for seed, a in enumerate(per_seed):
            keys = dict(
                dataset=ds, model="cnn_small", optimizer="adam_img", supervision=sup, seed=seed
            )
            for e, v in ((0.0, 0.99), (eps, a)):
                rows.append(dict(keys, attack="worst", eps=e, robust_acc=v))
                rows.append(dict(keys, attack="pgd_margin_img", eps=e, robust_acc=v))
                if sup == "multiclass":
                    rows.append(dict(keys, attack="pgd_ce_img", eps=e, robust_acc=min(1, v + 0.05)))
            train.append(dict(keys, **{"test.fine_acc": 0.98 if sup == "multiclass" else None}))
    radii = {ds: sorted({e for (d, _, e) in acc if d == ds}) for ds, _, _ in acc}
    tasks = {ds: ds for ds in radii}
    return summary_table(pd.DataFrame(rows), pd.DataFrame(train), radii, tasks)


# ---- Study PRICE-LIN ---------------------------------------------------------------------------
def price_summary(gap: dict[str, float], grow: float = 0.0, at_margin: float = 0.0) -> pd.DataFrame:
    """mean_over_draws of a tidy table: robust gap of optimizer o = ``gap[o]`` x
    (1 + grow x eps_fraction) at eps fractions in (0, 0.99), ``at_margin`` x gap[o] at 0.99;
    4 draws with +-0.01 jitter; every regime alike."""
    rows = []
    for ds in ("teacher_w512_x512", "teacher_w4_x512", "teacher_w512_x4", "teacher_w4_x4"):
        for o, g in gap.items():
            for f in (0.0, 0.25, 0.5, 0.75, 0.9, 0.99):
                for n in (16, 32, 64):
                    for draw in range(4):
                        base = g * at_margin if f == 0.99 else g * (1 + grow * f)
                        rg = base + 0.01 * (draw - 1.5)
                        m = dict.fromkeys(METRICS, 0.0)
                        m.update(train_robust_acc=1.0, test_robust_acc=1.0 - rg, robust_gap=rg)
                        rows.append(
                            dict(dataset=ds, optimizer=o, eps_fraction=f, n=n, draw=draw, **m)
                        )
    return mean_over_draws(pd.DataFrame(rows))


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


def prelu_table1(acc: dict[int, float]) -> pd.DataFrame:
    """table1 of 10-class nets whose worst-case accuracy at every Table-1 radius > 0 is acc[p]."""
    train, attack = [], []
    grids = {"linf": [0.0, 0.05, 0.1], "l2": [0.0, 1.0, 2.0], "l1": [0.0, 5.0, 10.0]}
    for p, a in acc.items():
        keys = dict(
            dataset="mnist_parity_full",
            model=f"prelu_mnist_p{p}",
            optimizer="adam_prelu",
            supervision="multiclass",
        )
        train.append(dict(keys, seed=0, **{"test.fine_acc": 0.98}))
        for norm, radii in grids.items():
            curve = {str(e): (0.98 if e == 0 else a) for e in radii}
            attack.append(
                dict(
                    keys,
                    seed=0,
                    grid=norm,
                    robust_acc={"worst": curve, "apgdce": curve},
                    n_points=1000,
                )
            )
    models = {f"prelu_mnist_p{p}": {"kind": "prelu", "p": p} for p in acc}
    return table1(attack, train, {"models": models})
