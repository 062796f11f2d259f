"""Study PRELU glue (Min & Vidal, "Can Implicit Bias Imply Adversarial Robustness?", ICML 2024):
the per-run analysis of the synthetic half, its summary table, and Table 1 of the MNIST half
beside the paper's numbers.

Synthetic half (:func:`synthetic_summary`): per run the robust accuracy (critical radius,
accuracy at the reference radii 1/sqrt(K) and sqrt(2)/2), the neuron alignment and the
distances to the ideal classifiers (per run:
:func:`ibrobust.studies.prelu.experiment.run_analysis`).

MNIST half (:func:`table1`): robust accuracy of each model at the radii of the paper's
Table 1 (l_inf 0.05, 0.1; l2 1, 2; l1 5, 10) and its clean accuracy, beside the paper's
p = 1 and p = 4 numbers (:data:`PAPER_TABLE1`) and those of the official pretrained models
(:data:`OFFICIAL_PRETRAINED`; both in docs/studies/prelu.md, "The paper's numbers"), with the
AutoAttack version each number comes from. Both reference sets are 10-class models: the
table's 2-class rows have none.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ibrobust.analysis.readoff import interpolated_bracket
from ibrobust.kinds import MODELS
from ibrobust.studies.prelu.radii import PRELU_ROBUST_RADIUS, relu_nonrobust_radius

# (norm, radius) columns of the paper's Table 1, in its order
TABLE1_COLUMNS: list[tuple[str, float]] = [
    ("linf", 0.05),
    ("linf", 0.1),
    ("l2", 1.0),
    ("l2", 2.0),
    ("l1", 5.0),
    ("l1", 10.0),
]
# Min & Vidal Table 1 (10-class MNIST, width 500, AutoAttack APGD-CE): robust accuracy of
# the p = 1 (ReLU) and p = 4 nets (docs/studies/prelu.md, "Table 1")
PAPER_TABLE1: dict[tuple[str, float], dict[int, float]] = {
    ("linf", 0.05): {1: 0.512, 4: 0.913},
    ("linf", 0.1): {1: 0.040, 4: 0.637},
    ("l2", 1.0): {1: 0.301, 4: 0.775},
    ("l2", 2.0): {1: 0.007, 4: 0.239},
    ("l1", 5.0): {1: 0.500, 4: 0.807},
    ("l1", 10.0): {1: 0.098, 4: 0.402},
}
# The official pretrained 10-class pReLU MNIST models (width 500) under AutoAttack's standard
# APGD-CE on the paper's test split (MNIST training images 50000-59999), docs/studies/prelu.md
# "Official pretrained models": p -> column
OFFICIAL_PRETRAINED: dict[int, dict[Any, float]] = {
    1: {"clean": 0.982, ("linf", 0.05): 0.521, ("linf", 0.1): 0.043, ("l2", 1.0): 0.312,
        ("l2", 2.0): 0.009, ("l1", 5.0): 0.503, ("l1", 10.0): 0.106},
    2: {"clean": 0.981, ("linf", 0.05): 0.849, ("linf", 0.1): 0.354, ("l2", 1.0): 0.642,
        ("l2", 2.0): 0.102, ("l1", 5.0): 0.742, ("l1", 10.0): 0.296},
    3: {"clean": 0.981, ("linf", 0.05): 0.894, ("linf", 0.1): 0.517, ("l2", 1.0): 0.727,
        ("l2", 2.0): 0.165, ("l1", 5.0): 0.781, ("l1", 10.0): 0.355},
    4: {"clean": 0.982, ("linf", 0.05): 0.912, ("linf", 0.1): 0.634, ("l2", 1.0): 0.770,
        ("l2", 2.0): 0.240, ("l1", 5.0): 0.803, ("l1", 10.0): 0.398},
}  # fmt: skip
NORM_LABEL = {"linf": "linf", "l2": "l2", "l1": "l1"}


def column_name(norm: str, eps: float) -> str:
    return f"{NORM_LABEL[norm]} {eps:g}"


def model_p(entry: dict) -> float:
    """The exponent p of a ``models`` entry (NaN for models that are not pReLU nets: kinds
    without the capability ``alignment``, which reads their weights and p)."""
    if not MODELS.of(entry)["alignment"]:
        return float("nan")
    return float(MODELS.setting(entry, "p"))


def label_runs(df: pd.DataFrame, labels: dict) -> pd.DataFrame:
    """``df`` (with dataset / model columns) plus ``p`` and, for the synthetic half, ``alpha``."""
    df = df.copy()
    df["p"] = df.model.map({m: model_p(e) for m, e in labels["models"].items()})
    if "alphas" in labels:
        df["alpha"] = df.dataset.map(labels["alphas"])
    return df


# ---- synthetic half: the summary over runs -----------------------------------------------------
def interpolate(eps: np.ndarray, acc: np.ndarray, at: float) -> float:
    """Robust accuracy at radius ``at`` by linear interpolation on the grid (NaN off the grid)."""
    order = np.argsort(eps)
    e, a = np.asarray(eps, float)[order], np.asarray(acc, float)[order]
    if not e[0] <= at <= e[-1]:
        return float("nan")
    return float(np.interp(at, e, a))


# the refined critical radius of a run (rule prelu_refine, refined.json): NaN where not refined
REFINED = ("critical_radius_refined", "critical_radius_refined_lo", "critical_radius_refined_hi")


def synthetic_summary(
    attack: list[dict],
    analysis: list[dict],
    train: list[dict],
    labels: dict,
    refined: list[dict] = (),
) -> pd.DataFrame:
    """One row per run: alpha, p, clean and robust accuracy (critical radius = 50 % of the
    worst case; interpolated robust accuracy at 1/sqrt(K) and sqrt(2)/2), final train loss,
    alignment fractions and ideal distances; for the runs in ``refined`` (their refined.json,
    rule prelu_refine) the critical radius by per-point bisection and its bracket
    (:data:`REFINED`, the bisection's tolerance wide; NaN for the others).

    ``attack`` / ``analysis`` / ``train``: per-run dicts (run keys + the attack summary.json,
    the run's row of the analysis table, the metrics.json); ``labels``: {"alphas": {dataset: alpha},
    "models": {model: entry}, "k": K}.
    """
    keys = ["dataset", "model", "optimizer", "supervision", "seed"]
    key_of = lambda r: tuple(str(r[k]) for k in keys)  # noqa: E731
    ana = {key_of(r): r for r in analysis}
    tr = {key_of(r): r for r in train}
    ref = {key_of(r): r for r in refined}
    k = int(labels["k"])
    refs = {"relu": relu_nonrobust_radius(k), "prelu": PRELU_ROBUST_RADIUS}
    rows = []
    for r in attack:
        worst = r["robust_acc"]["worst"]
        eps = np.array([float(e) for e in worst])
        acc = np.array([float(v) for v in worst.values()])
        row = {
            **{k_: r[k_] for k_ in keys},
            "alpha": labels["alphas"][r["dataset"]],
            "p": model_p(labels["models"][r["model"]]),
            "clean_acc": r["clean_acc"],
            "critical_radius": r["critical_radius"]["worst"],
            "robust_acc@1/sqrt(K)": interpolate(eps, acc, refs["relu"]),
            "robust_acc@sqrt(2)/2": interpolate(eps, acc, refs["prelu"]),
            # 10 % inside the p > 2 theorem's radius (claim prelu.p<p>_robust_below)
            "robust_acc@0.9sqrt(2)/2": interpolate(eps, acc, 0.9 * refs["prelu"]),
            # its read-off bracket: the accuracies at the two grid radii around it
            **_bracket_columns("robust_acc@0.9sqrt(2)/2", eps, acc, 0.9 * refs["prelu"]),
            "n_points": r["n_points"],
        }
        a = ana.get(key_of(r), {})
        for col in ("n_active", "frac_single", "frac_average", "mean_best_cos"):
            row[col] = a.get(col, float("nan"))
        for col in ("dist_F", "dist_Fp", "dist_F_test", "dist_Fp_test"):
            row[col] = a.get(col, float("nan"))
        f = ref.get(key_of(r), {})
        for col, key in zip(REFINED, ("critical_radius", "critical_radius_lo", "critical_radius_hi"),
                            strict=True):  # fmt: skip
            row[col] = float(f[key]) if key in f else float("nan")
        t = tr.get(key_of(r), {})
        row["train.acc"] = t.get("train.acc", float("nan"))
        row["test.binary_acc"] = t.get("test.binary_acc", float("nan"))
        rows.append(row)
    return pd.DataFrame(rows)


def _bracket_columns(col: str, eps: np.ndarray, acc: np.ndarray, at: float) -> dict[str, float]:
    """``<col>.lo`` / ``<col>.hi``: the read-off bracket of an accuracy interpolated at ``at``
    (:func:`ibrobust.analysis.readoff.interpolated_bracket`; NaN off the grid)."""
    if not float(np.min(eps)) <= at <= float(np.max(eps)):
        return {f"{col}.lo": float("nan"), f"{col}.hi": float("nan")}
    lo, hi = interpolated_bracket(eps, acc, at)
    return {f"{col}.lo": lo, f"{col}.hi": hi}


SUMMARY_COLUMNS = [
    "clean_acc",
    "critical_radius",
    "robust_acc@1/sqrt(K)",
    "robust_acc@sqrt(2)/2",
    "robust_acc@0.9sqrt(2)/2",
    "frac_single",
    "frac_average",
    "n_active",
    "dist_F",
    "dist_Fp",
]


def synthetic_means(table: pd.DataFrame) -> pd.DataFrame:
    """Mean and std over seeds of :data:`SUMMARY_COLUMNS` per (p, alpha, optimizer, supervision)."""
    group = ["p", "alpha", "optimizer", "supervision"]
    agg = table.groupby(group, sort=True)[SUMMARY_COLUMNS].agg(["mean", "std"])
    agg.columns = [f"{c}.{s}" for c, s in agg.columns]
    agg.insert(0, "seeds", table.groupby(group, sort=True).seed.nunique())
    return agg.reset_index()


def synthetic_markdown(means: pd.DataFrame) -> str:
    """:func:`synthetic_means` as a markdown table with ``mean +- std`` cells."""
    out = means[["p", "alpha", "optimizer", "supervision", "seeds"]].copy()
    for c in SUMMARY_COLUMNS:
        m, sd = means[f"{c}.mean"], means[f"{c}.std"].fillna(0.0)
        digits = 1 if c == "n_active" else 3
        out[c] = [f"{a:.{digits}f} +- {b:.{digits}f}" for a, b in zip(m, sd, strict=True)]
    return out.to_markdown(index=False)


def synthetic_report(means: pd.DataFrame, k: int) -> str:
    """summary.md of the synthetic half: what the columns mean, then
    :func:`synthetic_markdown`."""
    return (
        "# Study PRELU, synthetic: mean +- std over seeds per (p, alpha)\n\n"
        f"K = {k}: reference radii 1/sqrt(K) = {k**-0.5:.3f} (ReLU) and sqrt(2)/2 = 0.707 "
        "(pReLU, p > 2). critical_radius = first radius at 50 % worst-case robust "
        "accuracy; robust_acc@r is interpolated linearly on the radius grid. frac_single / "
        "frac_average: active neurons best aligned with one centre / a class average. "
        "dist_F, dist_Fp: min_c ||c f - G|| / ||G|| on points of the centres' unit sphere.\n\n"
        + synthetic_markdown(means)
        + "\n"
    )


# ---- MNIST half: Table 1 ---------------------------------------------------------------------
def attack_version(settings: dict) -> str:
    """A short record of what an AutoAttack (or PGD) evaluation ran, from the attack summary."""
    if not settings:
        return ""
    if "version" not in settings:  # pgd
        return f"pgd {settings.get('steps', '?')} steps x {settings.get('restarts', '?')} restarts"
    parts = []
    for a in str(settings["attacks"]).split(","):
        if f"{a}.n_iter" in settings:
            s = f"{a} {settings[f'{a}.n_iter']} iter x {settings.get(f'{a}.n_restarts', 1)} restarts"
            if settings.get(f"{a}.use_largereps"):
                s += " (use_largereps)"
            parts.append(s)
        else:
            parts.append(a)
    return f"autoattack {settings['version']} [{'; '.join(parts)}]"


def _mean_std(vals: list[float]) -> tuple[float, float]:
    v = np.asarray(vals, float)
    return float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else 0.0


def table1(attack: list[dict], train: list[dict], labels: dict) -> pd.DataFrame:
    """Tidy Table 1: one row per (dataset, model, optimizer, supervision, column) with our
    number (mean and std over seeds, and each seed's value in seed order; worst case over
    the grid's attacks), the attacks and their version, the points attacked, and the
    paper's / official pretrained models' number.

    ``attack``: per-job dicts (run keys + ``grid`` + the attack summary.json); ``train``:
    per-run dicts (run keys + metrics.json); ``labels``: {"models": {model: entry}}.
    Columns the radius grids do not contain are left out.
    """
    rows: list[dict] = []
    for key, g in pd.DataFrame(train).groupby(_TABLE1_GROUP, sort=False):
        base = dict(zip(_TABLE1_GROUP, key, strict=True))
        p = model_p(labels["models"][base["model"]])
        ten = base["supervision"] == "multiclass"
        ref = OFFICIAL_PRETRAINED.get(int(p), {}) if ten and p == int(p) else {}
        m, s = _mean_std(list(g["test.fine_acc"] if ten else g["test.binary_acc"]))
        rows.append(
            {
                **base,
                "p": p,
                "task": "10-class" if ten else "2-class",
                "column": "clean",
                "norm": "",
                "eps": 0.0,
                "ours": m,
                "ours_std": s,
                "seeds": len(g),
                "n_points": "full test split",
                "attacks": "",
                "attack_version": "",
                "paper": float("nan"),
                "official_pretrained": ref.get("clean", float("nan")),
            }
        )
        rows += _robust_rows(attack, base, p, ten, ref)
    return pd.DataFrame(rows)


_TABLE1_GROUP = ["dataset", "model", "optimizer", "supervision"]


def _robust_rows(attack: list[dict], base: dict, p: float, ten: bool, ref: dict) -> list[dict]:
    """The Table 1 columns of one (dataset, model, optimizer, supervision) that the
    radius grids contain (worst case over the attacks, mean and std over seeds)."""
    rows = []
    for norm, eps in TABLE1_COLUMNS:
        found = [
            r
            for r in attack
            if all(r[c] == base[c] for c in _TABLE1_GROUP)
            and r["grid"] in (norm, "main")
            and _has_radius(r, eps)
        ]
        if not found:
            continue
        found = sorted(found, key=lambda r: int(r["seed"]))
        per_seed = [_acc_at(r, "worst", eps) for r in found]
        m, s = _mean_std(per_seed)
        names = [a for a in found[0]["robust_acc"] if a != "worst"]
        settings = found[0].get("settings", {})
        paper = PAPER_TABLE1[(norm, eps)].get(int(p)) if ten and p == int(p) else None
        rows.append(
            {
                **base,
                "p": p,
                "task": "10-class" if ten else "2-class",
                "column": column_name(norm, eps),
                "norm": norm,
                "eps": eps,
                "ours": m,
                "ours_std": s,
                "seeds": len(found),
                "per_seed": " ".join(f"{v:.6g}" for v in per_seed),  # in seed order
                "n_points": found[0]["n_points"],
                "attacks": ",".join(names),
                "attack_version": "; ".join(
                    attack_version(settings.get(a, {})) for a in names if settings.get(a)
                ),
                "paper": float("nan") if paper is None else paper,
                "official_pretrained": ref.get((norm, eps), float("nan")),
            }
        )
    return rows


def _has_radius(r: dict, eps: float) -> bool:
    return any(math.isclose(float(e), eps) for e in r["robust_acc"]["worst"])


def _acc_at(r: dict, attack: str, eps: float) -> float:
    for e, v in r["robust_acc"][attack].items():
        if math.isclose(float(e), eps):
            return float(v)
    raise KeyError(eps)


def _cell(v: float) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.3f}"


def table1_markdown(table: pd.DataFrame) -> str:
    """Per (dataset, task): rows p (model), columns clean + Table 1's, cells
    ``ours / paper / official`` (``-`` where there is no reference number)."""
    out = [
        "# Study PRELU, MNIST: Table 1 of Min & Vidal (ICML 2024) beside ours",
        "",
        "Cell = ours / paper (Table 1, p = 1 and p = 4) / official pretrained model "
        "(docs/studies/prelu.md, standard AutoAttack APGD-CE on MNIST training images "
        "50000-59999). Both references are 10-class models. Ours: mean over seeds of the "
        "worst case over the grid's attacks; `clean` is on the full test split, robust "
        "columns on the first n_points test points.",
        "",
    ]
    for (ds, task), g in table.groupby(["dataset", "task"], sort=False):
        cols = list(dict.fromkeys(g.column))
        out += [f"## {ds}, {task}", ""]
        out.append("| model | p | optimizer | seeds | " + " | ".join(cols) + " |")
        out.append("|---" * (4 + len(cols)) + "|")
        for (model, opt), gm in g.groupby(["model", "optimizer"], sort=False):
            cells = []
            for c in cols:
                row = gm[gm.column == c]
                if row.empty:
                    cells.append("")
                    continue
                r = row.iloc[0]
                cells.append(f"{_cell(r.ours)} / {_cell(r.paper)} / {_cell(r.official_pretrained)}")
            p = gm.p.iloc[0]
            seeds = int(gm[gm.column == "clean"].seeds.iloc[0]) if "clean" in cols else ""
            out.append(
                f"| {model} | {'' if math.isnan(p) else f'{p:g}'} | {opt} | {seeds} | "
                + " | ".join(cells)
                + " |"
            )
        out.append("")
        versions = g[g.attack_version != ""].drop_duplicates("column")
        if not versions.empty:
            out.append("Attacks (per column: name, version, points attacked):")
            out.append("")
            for _, r in versions.iterrows():
                out.append(f"- {r.column}: {r.attacks} = {r.attack_version}; {r.n_points} points")
            out.append("")
    return "\n".join(out)
