"""Study PRICE-NN's rows: the runs of the generic network rules as tables (Tsilivis et al.,
NeurIPS 2024, Sec. 5.2 and App. F.2).

A run (study kind ``price_nn``, :func:`ibrobust.studies.price_nn.runs`) carries its labels
``arch`` (fc, cnn), ``algorithm`` (gd = l2 steepest descent, sd = sign descent), training
radius ``eps`` (0 = ERM) and training-set size ``n`` next to the run keys. Its outputs:

* the train rule's history (curves every ``eval_every`` epochs: clean and robust train /
  test accuracy, robust under the *training* PGD at the training eps; robust train on every
  training image, robust test on the first ``eval_points`` test images) and metrics
  (``train.steps``: the epoch reached; ``train.converged``: the train loss fell below the
  optimizer's ``stop_loss`` there with the perturbed batch classified without error);
* the attack rule's summary at the run's training eps (the half's attack set: training PGD,
  strong PGD, APGD-CE) with the per-point worst case ``worst``.

Accuracy is that of the half's task: the binary readout (fc, MNIST 2 vs 7) or the top-1 fine
class (cnn, 10 classes). Training-attack numbers come from the curve points, the strong
number from the attack rule's worst case (on its ``attack_points``).

*Fitted* (:data:`FIT_RULE`): a CNN run reached its loss threshold (the paper's reporting
time: "after convergence of train error to 0", the first epoch below the threshold); an FC
run (a fixed number of steps) ends at robust train accuracy 100 % under the training PGD.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

LABELS = ("arch", "algorithm", "eps", "n", "seed")
PAPER_FC_SD_MINUS_GD = 4.11  # robust ERM, robust test accuracy points, mean over 3 seeds
WORST = "worst"  # the attack suite's worst case over attacks
# arch -> what makes a run fitted: "threshold" = it reached its stop_loss (train error 0 under
# the training PGD at that epoch); "end" = robust train accuracy 100 % at its last curve point
FIT_RULE = {"fc": "end", "cnn": "threshold"}


def is_fitted(arch: str, reached_stop_loss: bool, robust_train_acc: float) -> bool:
    """A run fitted its training set (:data:`FIT_RULE`)."""
    if FIT_RULE.get(arch, "threshold") == "threshold":
        return bool(reached_stop_loss)
    return robust_train_acc >= 1.0


def best_curve_point(history: pd.DataFrame) -> tuple[float, int]:
    """(robust test accuracy, epoch) of the curve point with the highest robust test accuracy
    (training PGD; the first such epoch on ties): robust overfitting is its fall to the end."""
    curve = history.dropna(subset=["robust_test_acc"])
    i = int(np.argmax(curve["robust_test_acc"].to_numpy()))
    return float(curve["robust_test_acc"].iloc[i]), int(curve["epoch"].iloc[i])


def late_increase(losses: Sequence[float]) -> float:
    """The share of the logged train-loss steps in the last half of the log (the later
    ``len // 2`` entries, each against the one before it) on which the loss rose: 0 for a
    loss that only falls, near 1/2 for one that oscillates (SD's instability near
    convergence, paper App. E). NaN with fewer than 4 entries."""
    x = np.asarray(losses, dtype=float)
    if len(x) < 4:
        return float("nan")
    tail = x[len(x) - len(x) // 2 - 1 :]  # the last half and the entry before it
    return float(np.mean(np.diff(tail) > 0))


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
    reached = bool(metrics.get("train.converged", 0.0))
    epochs = int(metrics["train.steps"])
    robust_train = float(curve["robust_train_acc"])
    best, best_epoch = best_curve_point(history)
    return {
        **{k: run[k] for k in LABELS},
        "optimizer": run["optimizer"],
        "epochs": epochs,
        "reached_stop_loss": reached,
        "epochs_to_threshold": epochs if reached else None,
        "fitted": is_fitted(str(run["arch"]), reached, robust_train),
        "final_loss": float(history["loss"].iloc[-1]),
        "late_increase": late_increase(history["loss"].dropna().to_numpy()),
        "train_acc": float(curve["train_acc"]),
        "test_acc": float(attack["clean_acc"]),
        "robust_train_acc_train_pgd": robust_train,
        "robust_train_err": 1.0 - robust_train,
        "robust_test_acc_train_pgd": float(curve["robust_test_acc"]),
        "robust_test_acc_best": best,
        "best_epoch": best_epoch,
        "robust_test_acc_worst": float(strong[eps]),
        "attack_points": int(attack["n_points"]),
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
