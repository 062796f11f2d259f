"""Study PRICE-NN's tables: the paired GD - SD differences of the final rows of
:mod:`ibrobust.studies.price_nn.rows`, per cell (``summary.csv``), both algorithms side by side per cell and seed (``cells.csv``,
what the claims read), and the summary beside the paper's numbers.

A cell is (arch, eps, n); a pair is a cell and a seed (GD and SD on the same data subset
and initialisation). The paper compares the algorithms only where both fit the training set
("both algorithms reach 100 % robust train accuracy"; "after convergence of train error to
0"): each row says whether its runs did (:func:`ibrobust.studies.price_nn.rows.is_fitted`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ibrobust.studies.price_nn.plots import fc_table
from ibrobust.studies.price_nn.rows import FIT_RULE, PAPER_FC_SD_MINUS_GD

ALGORITHMS = ("gd", "sd")
DIRECTION = {"fc": ("sd", "gd"), "cnn": ("gd", "sd")}  # arch -> (a, b) of the difference a - b
# cells.csv's per-algorithm columns (<algorithm>_<name>) -> the final-row column they copy;
# the first seven are the ones the claims read (ibrobust.studies.price_nn.claims.SOURCES)
CELL_COLUMNS = {
    "robust_test": "robust_test_acc_worst",  # strong attacks, per-point worst case, train eps
    "clean_test": "test_acc",  # clean (top-1 for the 10-class CNN)
    "robust_train": "robust_train_acc_train_pgd",  # training PGD, every training image, end
    "robust_test_end": "robust_test_acc_train_pgd",  # training PGD, the curve's last point ...
    "robust_test_best": "robust_test_acc_best",  # ... and its best point (robust overfitting)
    "late_increase": "late_increase",  # share of rises of the train loss, last half of the log
    "fitted": "fitted",
    "epochs": "epochs",
    "best_epoch": "best_epoch",
    "robust_train_err": "robust_train_err",
    "reached_stop_loss": "reached_stop_loss",
    "epochs_to_threshold": "epochs_to_threshold",  # NaN: the threshold was not reached
    "attack_points": "attack_points",  # the test points the strong attacks ran on (measured)
    "final_loss": "final_loss",
}


def _by_cell(rows: Sequence[Mapping]) -> dict[tuple, dict[int, dict[str, Mapping]]]:
    """(arch, eps, n) -> seed -> algorithm -> row."""
    cells: dict[tuple, dict[int, dict[str, Mapping]]] = {}
    for r in rows:
        key = (r["arch"], r["eps"], r["n"])
        cells.setdefault(key, {}).setdefault(int(r["seed"]), {})[r["algorithm"]] = r
    return cells


def paired_differences(
    rows: Sequence[Mapping], metric: str, a: str = "sd", b: str = "gd"
) -> list[dict]:
    """Per (arch, eps, n): ``metric`` of algorithm a minus b, per seed, with mean, std and
    range over the seeds that ran both (points of accuracy, i.e. x100). ``fitted``: every
    run of the cell fit its training set; ``per_seed_fitted``: per seed (aligned with
    ``per_seed`` and ``seed_ids``), 1 where both algorithms fit; ``seeds_fitted``: their
    number."""
    out = []
    for (arch, eps, n), by_seed in sorted(_by_cell(rows).items()):
        pairs = [(s, v) for s, v in sorted(by_seed.items()) if a in v and b in v]
        if not pairs:
            continue
        d = [100 * (float(v[a][metric]) - float(v[b][metric])) for _, v in pairs]
        both = [bool(v[a].get("fitted", True)) and bool(v[b].get("fitted", True)) for _, v in pairs]
        runs = [r for v in by_seed.values() for r in v.values()]
        out.append(
            {
                "arch": arch,
                "eps": eps,
                "n": n,
                "metric": metric,
                "difference": f"{a}-{b}",
                "mean": float(np.mean(d)),
                "std": float(np.std(d, ddof=1)) if len(d) > 1 else 0.0,
                "min": float(np.min(d)),
                "max": float(np.max(d)),
                "seeds": len(d),
                "per_seed": " ".join(f"{v:+.2f}" for v in d),
                "seed_ids": " ".join(str(s) for s, _ in pairs),
                "per_seed_fitted": " ".join(str(int(f)) for f in both),
                "seeds_fitted": int(sum(both)),
                "fitted": all(bool(r.get("fitted", True)) for r in runs),
            }
        )
    return out


def cells_table(rows: Sequence[Mapping]) -> pd.DataFrame:
    """``cells.csv``: one row per (arch, n, eps, seed) with both algorithms'
    :data:`CELL_COLUMNS` side by side (``gd_<name>``, ``sd_<name>``; empty for a missing
    run), ``both_fitted``, and the difference in the arch's direction (FC: SD - GD; CNN:
    GD - SD; points) of the robust and the clean test accuracy."""
    out = []
    for (arch, eps, n), by_seed in sorted(_by_cell(rows).items()):
        a, b = DIRECTION.get(arch, ("gd", "sd"))
        for seed, v in sorted(by_seed.items()):
            row: dict = {"arch": arch, "n": n, "eps": eps, "seed": seed}
            for alg in ALGORITHMS:
                for name, col in CELL_COLUMNS.items():
                    row[f"{alg}_{name}"] = v[alg].get(col) if alg in v else None
            both = a in v and b in v
            row["both_fitted"] = both and bool(v[a]["fitted"]) and bool(v[b]["fitted"])
            row["difference"] = f"{a}-{b}"
            for name in ("robust_test", "clean_test"):
                col = CELL_COLUMNS[name]
                row[f"diff_{name}"] = (
                    100 * (float(v[a][col]) - float(v[b][col])) if both else float("nan")
                )
            out.append(row)
    return pd.DataFrame(out)


def _fmt(d: Mapping | None) -> str:
    if d is None:
        return "n/a"
    return f"{d['mean']:+.2f} (std {d['std']:.2f}, range {d['min']:+.2f}..{d['max']:+.2f}; seeds {d['per_seed']})"


def _run_line(r: Mapping) -> str:
    thr = (
        f"loss threshold at epoch {r['epochs']}"
        if r["reached_stop_loss"]
        else f"loss threshold not reached in {r['epochs']} epochs"
    )
    return (
        f"- {r['algorithm']} eps {r['eps']:g} n {r['n']} seed {r['seed']}: "
        f"{'fitted' if r['fitted'] else 'NOT fitted'}; robust train error "
        f"{100 * r['robust_train_err']:.1f} % (training PGD, end); {thr} (final loss "
        f"{r['final_loss']:.3g})"
    )


def summary_markdown(
    fc_diffs: Sequence[Mapping],
    cnn_diffs: Sequence[Mapping],
    fc_final: Sequence[Mapping],
    cnn_final: Sequence[Mapping] = (),
) -> str:
    """``summary.md``: our numbers beside the paper's (Sec. 5.2), from the difference tables."""
    lines = ["# Study PRICE-NN: GD vs sign descent (FC: MNIST 2 vs 7; CNN: 10-class MNIST)", ""]
    lines += [
        "## Fully connected net (robust test accuracy, SD - GD, points)",
        "",
        f"Paper (robust ERM, 3 seeds): SD better by {PAPER_FC_SD_MINUS_GD} points on average, "
        "both at 100 % robust train accuracy; under ERM the two are close.",
        "",
        "A run is fitted when its robust train accuracy (training PGD, every training image) is "
        "100 % at the end; `fitted seeds` marks per seed (in the order of the values) where "
        "both algorithms fit.",
        "",
        "| eps | n | training PGD | strong (per-point worst case) | clean test acc. | fitted seeds |",
        "|---|---|---|---|---|---|",
    ]
    by = {(d["eps"], d["n"], d["metric"]): d for d in fc_diffs}
    for eps, n in sorted({(d["eps"], d["n"]) for d in fc_diffs}):
        strong = by.get((eps, n, "robust_test_acc_worst"))
        lines.append(
            f"| {eps:g} | {n} | {_fmt(by.get((eps, n, 'robust_test_acc_train_pgd')))} | "
            f"{_fmt(strong)} | {_fmt(by.get((eps, n, 'test_acc')))} | "
            f"{strong['per_seed_fitted'] if strong else 'n/a'} |"
        )
    lines += _fc_run_lines(fc_final)
    lines += [
        "",
        "## CNN, 10 classes (robust test accuracy, GD - SD, points; strong attacks, worst case)",
        "",
        "Paper: GD ahead of SD for this non-homogeneous net, more so for small n and large eps.",
        "",
        "A cell compares the two only where every run fit its training set: it reached its loss "
        "threshold (the reporting time) with robust train error 0 under the training PGD "
        f"(rule {FIT_RULE['cnn']!r}); elsewhere the row says which runs did not.",
        "",
        "| eps | n | GD - SD | sign | fitted seeds |",
        "|---|---|---|---|---|",
    ]
    for d in sorted(cnn_diffs, key=lambda d: (d["eps"], d["n"])):
        if d["metric"] != "robust_test_acc_worst":
            continue
        sign = "GD ahead" if d["mean"] > 0 else ("SD ahead" if d["mean"] < 0 else "tie")
        if not d["fitted"]:
            sign = f"not compared: {_unfit(cnn_final, d)} did not fit the training set"
        lines.append(f"| {d['eps']:g} | {d['n']} | {_fmt(d)} | {sign} | {d['per_seed_fitted']} |")
    if cnn_final:
        lines += ["", "CNN runs (reported at the first epoch below the optimizer's stop_loss):", ""]
        for r in sorted(cnn_final, key=lambda r: (r["eps"], r["n"], r["algorithm"], r["seed"])):
            lines.append(_run_line(r))
    return "\n".join(lines) + "\n"


def _fc_run_lines(fc_final: Sequence[Mapping]) -> list[str]:
    """The FC runs' robust train accuracy at the end and their curves' best and end."""
    if not fc_final:
        return []
    lines = ["", "FC runs (robust train accuracy under the training PGD at the end):", ""]
    for r in sorted(fc_final, key=lambda r: (r["eps"], r["algorithm"], r["seed"])):
        lines.append(
            f"- {r['algorithm']} eps {r['eps']:g} seed {r['seed']}: "
            f"{100 * r['robust_train_acc_train_pgd']:.1f} % "
            f"({'fitted' if r['fitted'] else 'NOT fitted'}; {r['epochs']} epochs); robust "
            f"test acc. (training PGD) best {100 * r['robust_test_acc_best']:.1f} % at epoch "
            f"{r['best_epoch']}, end {100 * r['robust_test_acc_train_pgd']:.1f} %"
        )
    return lines


def _unfit(runs: Sequence[Mapping], cell: Mapping) -> str:
    """The runs of ``cell`` that did not fit ("GD seed 1", ...)."""
    low = [
        f"{r['algorithm'].upper()} seed {r['seed']}"
        for r in sorted(runs, key=lambda r: (r["algorithm"], r["seed"]))
        if (r["arch"], r["eps"], r["n"]) == (cell["arch"], cell["eps"], cell["n"])
        and not r["fitted"]
    ]
    return ", ".join(low) or "a run"


FC_TABLE_METRICS = {  # final row column -> label in the FC table
    "robust_train_acc_train_pgd": "robust train acc. (training PGD)",
    "robust_test_acc_train_pgd": "robust test acc. (training PGD)",
    "robust_test_acc_best": "best robust test acc. during training (training PGD)",
    "robust_test_acc_worst": "robust test acc. (strong attacks, worst case)",
    "test_acc": "clean test acc.",
}
DIFF_METRICS = ("robust_test_acc_train_pgd", "robust_test_acc_worst", "test_acc")


def study_tables(final: pd.DataFrame) -> dict[str, pd.DataFrame | str]:
    """The FC table, the paired differences (FC: SD - GD; CNN: GD - SD) per cell and per
    seed, and summary.md."""
    rows = final.to_dict("records")
    fc = [r for r in rows if r["arch"] == "fc"]
    cnn = [r for r in rows if r["arch"] == "cnn"]
    fc_diffs = [d for m in DIFF_METRICS for d in paired_differences(fc, m, *DIRECTION["fc"])]
    cnn_diffs = [d for m in DIFF_METRICS for d in paired_differences(cnn, m, *DIRECTION["cnn"])]
    table = fc_table(final[final["arch"] == "fc"], FC_TABLE_METRICS) if fc else pd.DataFrame()
    md = summary_markdown(fc_diffs, cnn_diffs, fc, cnn)
    return {
        "fc_table": table,
        "differences": pd.DataFrame(fc_diffs + cnn_diffs),
        "cnn_differences": pd.DataFrame([d for d in cnn_diffs if d["metric"] == DIFF_METRICS[1]]),
        "cells": cells_table(rows),
        "summary_md": md,
    }
