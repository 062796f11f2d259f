"""Study PRICE-NN's rows: the runs of the generic network rules as tables (Tsilivis et al.,
NeurIPS 2024, Sec. 5.2 and App. F.2).

A run (study kind ``price_nn``, :func:`ibrobust.studies.price_nn.runs`) carries its labels
``arch`` (fc, cnn), ``algorithm`` (gd = l2 steepest descent, sd = sign descent), training
radius ``eps`` (0 = ERM) and training-set size ``n`` next to the run keys. Its outputs:

* the train rule's history (curves every ``eval_every`` epochs: clean and robust train /
  test accuracy, robust under the *training* PGD at the training eps) and metrics
  (``train.steps``: the epoch reached; ``train.converged``: the train loss crossed the
  optimizer's ``stop_loss`` there);
* the attack rule's summary at every training radius (the half's attack set: training PGD,
  strong PGD, APGD-CE) with the worst case ``worst``; a run is read at its own eps.

Training attack numbers come from the last curve point (the training PGD on the curves' test
points), the strong number from the attack rule's worst case (on its ``attack_points``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

LABELS = ("arch", "algorithm", "eps", "n", "seed")
PAPER_FC_SD_MINUS_GD = 4.11  # robust ERM, robust test accuracy points, mean over 3 seeds
WORST = "worst"  # the attack suite's worst case over attacks


def history_rows(runs: Sequence[Mapping], histories: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Long table of the curves: one row per (run, curve point) with the run's labels."""
    frames = []
    for r, h in zip(runs, histories, strict=True):
        if "robust_test_acc" not in h:
            raise ValueError(f"run {dict(r)} has no curves: set eval_every on its optimizer")
        h = h.dropna(subset=["robust_test_acc"]).copy()
        for k in LABELS:
            h[k] = r[k]
        frames.append(h)
    return pd.concat(frames, ignore_index=True)


def final_row(run: Mapping, history: pd.DataFrame, metrics: Mapping, attack: Mapping) -> dict:
    """One run's final numbers (accuracies as fractions)."""
    curve = history.dropna(subset=["robust_test_acc"]).iloc[-1]
    eps = f"{float(run['eps'])}"
    strong = attack["robust_acc"][WORST]
    if eps not in strong:
        raise ValueError(f"the attack summary of {dict(run)} has no radius {eps}: {list(strong)}")
    return {
        **{k: run[k] for k in LABELS},
        "optimizer": run["optimizer"],
        "epochs": int(metrics["train.steps"]),
        "reached_stop_loss": bool(metrics.get("train.converged", 0.0)),
        "final_loss": float(history["loss"].iloc[-1]),
        "train_acc": float(curve["train_acc"]),
        "test_acc": float(attack["clean_acc"]),
        "robust_train_acc_train_pgd": float(curve["robust_train_acc"]),
        "robust_test_acc_train_pgd": float(curve["robust_test_acc"]),
        "robust_test_acc_worst": float(strong[eps]),
        **{f"robust_test_acc_{a}": float(v[eps]) for a, v in attack["robust_acc"].items()},
    }


def final_rows(
    runs: Sequence[Mapping],
    histories: Sequence[pd.DataFrame],
    metrics: Sequence[Mapping],
    attacks: Sequence[Mapping],
) -> pd.DataFrame:
    rows = [final_row(*a) for a in zip(runs, histories, metrics, attacks, strict=True)]
    return pd.DataFrame(rows)


def markdown_table(df: pd.DataFrame, digits: int = 2) -> str:
    """A pipe table of ``df`` (floats rounded to ``digits``)."""

    def cell(v) -> str:
        return f"{v:.{digits}f}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(map(str, df.columns)) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines)
