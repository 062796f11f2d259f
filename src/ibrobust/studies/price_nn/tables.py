"""Study PRICE-NN's tables: the paired GD - SD differences of the final rows of
:mod:`ibrobust.studies.price_nn.rows` and the summary beside the paper's numbers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ibrobust.studies.price_nn.plots import fc_table
from ibrobust.studies.price_nn.rows import PAPER_FC_SD_MINUS_GD

# a cell compares the algorithms' implicit bias only where both fit the training set (the
# paper's runs are at 100 % robust train accuracy): every run's final robust train accuracy
# under the training PGD at least this
FIT_ACC = 0.9


def paired_differences(
    rows: Sequence[Mapping], metric: str, a: str = "sd", b: str = "gd"
) -> list[dict]:
    """Per (arch, eps, n): ``metric`` of algorithm a minus b, per seed, with mean, std and
    range over the seeds that ran both (points of accuracy, i.e. x100); ``fitted``: every
    run of the cell reached robust train accuracy >= FIT_ACC (training PGD)."""
    cells: dict[tuple, dict[int, dict[str, float]]] = {}
    fit: dict[tuple, float] = {}
    for r in rows:
        key = (r["arch"], r["eps"], r["n"])
        cells.setdefault(key, {}).setdefault(r["seed"], {})[r["algorithm"]] = r[metric]
        fit[key] = min(fit.get(key, 1.0), float(r.get("robust_train_acc_train_pgd", 1.0)))
    out = []
    for (arch, eps, n), by_seed in sorted(cells.items()):
        d = [100 * (v[a] - v[b]) for _, v in sorted(by_seed.items()) if a in v and b in v]
        if not d:
            continue
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
                "fitted": fit[(arch, eps, n)] >= FIT_ACC,
            }
        )
    return out


def _fmt(d: Mapping | None) -> str:
    if d is None:
        return "n/a"
    return f"{d['mean']:+.2f} (std {d['std']:.2f}, range {d['min']:+.2f}..{d['max']:+.2f}; seeds {d['per_seed']})"


def summary_markdown(
    fc_diffs: Sequence[Mapping],
    cnn_diffs: Sequence[Mapping],
    fc_final: Sequence[Mapping],
    cnn_final: Sequence[Mapping] = (),
) -> str:
    """``summary.md``: our numbers beside the paper's (Sec. 5.2), from the difference tables."""
    lines = ["# Study PRICE-NN: GD vs sign descent on MNIST 2 vs 7", ""]
    lines += [
        "## Fully connected net (robust test accuracy, SD - GD, points)",
        "",
        f"Paper (robust ERM, 3 seeds): SD better by {PAPER_FC_SD_MINUS_GD} points on average, "
        "both at 100 % robust train accuracy; under ERM the two are close.",
        "",
        "| eps | n | training PGD | strong (PGD + APGD-CE, worst case) | clean test acc. |",
        "|---|---|---|---|---|",
    ]
    by = {(d["eps"], d["n"], d["metric"]): d for d in fc_diffs}
    for eps, n in sorted({(d["eps"], d["n"]) for d in fc_diffs}):
        lines.append(
            f"| {eps:g} | {n} | {_fmt(by.get((eps, n, 'robust_test_acc_train_pgd')))} | "
            f"{_fmt(by.get((eps, n, 'robust_test_acc_worst')))} | "
            f"{_fmt(by.get((eps, n, 'test_acc')))} |"
        )
    if fc_final:
        lines += ["", "Final robust train accuracy (training PGD), per run:", ""]
        for r in sorted(fc_final, key=lambda r: (r["eps"], r["algorithm"], r["seed"])):
            lines.append(
                f"- {r['algorithm']} eps {r['eps']:g} seed {r['seed']}: "
                f"{100 * r['robust_train_acc_train_pgd']:.1f} % (epochs {r['epochs']})"
            )
    lines += [
        "",
        "## CNN (robust test accuracy, GD - SD, points; strong attack, worst case)",
        "",
        "Paper: GD ahead of SD for this non-homogeneous net, more so for small n and large eps.",
        "",
        f"A cell compares the two only where every run fit its training set (robust train "
        f"accuracy >= {FIT_ACC:g} under the training PGD); elsewhere the sign says who did not.",
        "",
        "| eps | n | GD - SD | sign |",
        "|---|---|---|---|",
    ]
    for d in sorted(cnn_diffs, key=lambda d: (d["eps"], d["n"])):
        if d["metric"] != "robust_test_acc_worst":
            continue
        sign = "GD ahead" if d["mean"] > 0 else ("SD ahead" if d["mean"] < 0 else "tie")
        if not d["fitted"]:
            sign = f"not compared: {_unfit(cnn_final, d)} did not fit the training set"
        lines.append(f"| {d['eps']:g} | {d['n']} | {_fmt(d)} | {sign} |")
    if cnn_final:
        lines += ["", "CNN runs: the epoch reported (first below the optimizer's stop_loss):", ""]
        for r in sorted(cnn_final, key=lambda r: (r["eps"], r["n"], r["algorithm"], r["seed"])):
            how = "reached" if r["reached_stop_loss"] else "not reached (max steps)"
            lines.append(
                f"- {r['algorithm']} eps {r['eps']:g} n {r['n']} seed {r['seed']}: epoch "
                f"{r['epochs']} ({how}; final loss {r['final_loss']:.3g})"
            )
    return "\n".join(lines) + "\n"


def _unfit(runs: Sequence[Mapping], cell: Mapping) -> str:
    """The algorithms of ``cell``'s runs below FIT_ACC robust train accuracy ("GD", "SD")."""
    low = {
        r["algorithm"].upper()
        for r in runs
        if (r["arch"], r["eps"], r["n"]) == (cell["arch"], cell["eps"], cell["n"])
        and float(r["robust_train_acc_train_pgd"]) < FIT_ACC
    }
    return " and ".join(sorted(low)) or "a run"


FC_TABLE_METRICS = {  # final row column -> label in the FC table
    "robust_train_acc_train_pgd": "robust train acc. (training PGD)",
    "robust_test_acc_train_pgd": "robust test acc. (training PGD)",
    "robust_test_acc_worst": "robust test acc. (strong attacks, worst case)",
    "test_acc": "clean test acc.",
}
DIFF_METRICS = ("robust_test_acc_train_pgd", "robust_test_acc_worst", "test_acc")


def study_tables(final: pd.DataFrame) -> dict[str, pd.DataFrame | str]:
    """The FC table, the paired differences (FC: SD - GD; CNN: GD - SD) and summary.md."""
    rows = final.to_dict("records")
    fc = [r for r in rows if r["arch"] == "fc"]
    cnn = [r for r in rows if r["arch"] == "cnn"]
    fc_diffs = [d for m in DIFF_METRICS for d in paired_differences(fc, m)]
    cnn_diffs = [d for m in DIFF_METRICS for d in paired_differences(cnn, m, "gd", "sd")]
    table = fc_table(final[final["arch"] == "fc"], FC_TABLE_METRICS) if fc else pd.DataFrame()
    md = summary_markdown(fc_diffs, cnn_diffs, fc, cnn)
    return {
        "fc_table": table,
        "differences": pd.DataFrame(fc_diffs + cnn_diffs),
        "cnn_differences": pd.DataFrame([d for d in cnn_diffs if d["metric"] == DIFF_METRICS[1]]),
        "summary_md": md,
    }
