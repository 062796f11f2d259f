"""Study PRICE-LIN glue (Tsilivis, Frank, Srebro, Kempe, NeurIPS 2024, Sec. 5.1).

The sweep is regime (k_w, k_x) x n x eps x algorithm x dataset draw. The workflow runs one
job per (regime, n); inside it, for each algorithm, every draw x eps fraction is one
problem of a single vectorised :func:`~ibrobust.training.robust_erm.train_robust_erm` call:

* :func:`~ibrobust.data.teacher.sample_test_set` /
  :func:`~ibrobust.data.teacher.sample_train_draws` (the ``teacher`` dataset kind) draw the
  data: a training set of size n is a prefix of the one of size n' > n and all n share the
  teacher and the test set of the seed;
* :func:`draw_margins` solves the exact l_inf margin gamma* of every draw (LP);
* :func:`problem_grid` lays out B = draws x fractions problems, eps = fraction * gamma*
  of the problem's own draw (fraction 0 is plain ERM);
* :func:`erm_config` maps an ``optimizers`` registry entry plus the study's (shared)
  stopping rule to a :class:`~ibrobust.training.robust_erm.RobustERMConfig`;
* :func:`metrics_table` evaluates the B solutions in closed form (one row per problem),
  :func:`margin_path_table` the margin ratio (:func:`margin_ratio`, the same function) at
  the checkpoints along training (every decade of the train loss, one row each);
* :func:`run_algorithm` is one algorithm of a job (train, time, tabulate), and
  :func:`weights_arrays` the job's solutions file;
* :mod:`ibrobust.studies.price_linear.tables` compares algorithms across jobs
  (cosines, gap differences, the summary table).

Gaps are accuracy differences train - test (>= 0 when the model overfits): the robust gap
at the training eps, and the clean gap (test clean error - train clean error).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from ibrobust.analysis.linear_metrics import (
    clean_accuracy,
    l1_norm,
    l2_norm,
    normalized_linf_margin,
    robust_accuracy,
)
from ibrobust.data.teacher import (  # noqa: F401  (re-exported: the study's data)
    sample_test_set,
    sample_train_draws,
    teacher_config,
)
from ibrobust.studies.price_linear.algorithms import (  # noqa: F401  (re-exported)
    ALGORITHM_LABEL,
    METRICS,
    algorithm_label,
    algorithm_of,
    linear_kind,
    regime_label,
)
from ibrobust.training.robust_erm import RobustERMConfig, RobustERMResult, train_robust_erm


# ---- configs and labels ------------------------------------------------------------------
def erm_config(optimizer: Mapping, stopping: Mapping) -> RobustERMConfig:
    """RobustERMConfig of a registry entry; ``stopping`` (loss_threshold, max_iters) is the
    study's and so identical for every algorithm. ``lr_max: null`` means no cap."""
    kind = linear_kind(optimizer)  # its algorithm and RobustERMConfig fields
    algorithm = kind.algorithm(optimizer)
    fields = kind.erm_fields(optimizer)
    if fields.get("lr_max") is None:
        fields["lr_max"] = math.inf
    return RobustERMConfig(
        algorithm=algorithm,
        loss_threshold=float(stopping["loss_threshold"]),
        max_iters=int(stopping["max_iters"]),
        checkpoint_decades=True,  # the study records every run's margin path
        **fields,
    )


# ---- data ------------------------------------------------------------------------------------
def draw_margins(x: torch.Tensor, y: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """(gamma* (R,), maximisers (R, d)): exact l_inf margin of every draw (LP, HiGHS)."""
    # imported here: scipy costs ~0.5 s per process and only the data jobs solve LPs
    from ibrobust.analysis.linear_margin import linf_margin

    res = [linf_margin(x[r], y[r]) for r in range(x.shape[0])]
    return np.array([m.gamma for m in res]), np.stack([m.w for m in res])


# ---- the problem grid of one job -------------------------------------------------------------
@dataclass(frozen=True)
class ProblemGrid:
    """B = R draws x F fractions problems, draw-major (problem b = row * F + fraction)."""

    row: np.ndarray  # (B,) index of the problem's draw in the stacked (R, n, d) data
    draw: np.ndarray  # (B,) draw id
    eps_fraction: np.ndarray  # (B,) eps / gamma*
    gamma: np.ndarray  # (B,) gamma* of the problem's draw
    eps: np.ndarray  # (B,) l_inf training radius

    def __len__(self) -> int:
        return len(self.row)


def problem_grid(
    draws: Sequence[int], gamma: np.ndarray, fractions: Sequence[float]
) -> ProblemGrid:
    """Every draw at every fraction of its own margin; fractions must lie in [0, 1)."""
    gamma = np.asarray(gamma, dtype=np.float64)
    fr = np.asarray(fractions, dtype=np.float64)
    if gamma.shape != (len(draws),):
        raise ValueError(f"gamma must have one entry per draw ({len(draws)}), got {gamma.shape}")
    if fr.ndim != 1 or fr.size == 0 or np.any(fr < 0) or np.any(fr >= 1):
        raise ValueError(f"fractions must be a non-empty list in [0, 1), got {list(fractions)}")
    if np.any(gamma <= 0):
        raise ValueError(f"every draw must be separable (gamma* > 0), got {gamma.tolist()}")
    n_draws, n_fr = len(draws), fr.size
    row = np.repeat(np.arange(n_draws), n_fr)
    return ProblemGrid(
        row=row,
        draw=np.asarray(draws, dtype=np.int64)[row],
        eps_fraction=np.tile(fr, n_draws),
        gamma=gamma[row],
        eps=(gamma[:, None] * fr).reshape(-1),  # (R, F) -> (B,), draw-major
    )


def train_problems(
    x: torch.Tensor, y: torch.Tensor, grid: ProblemGrid, config: RobustERMConfig
) -> RobustERMResult:
    """Robust ERM on all problems of ``grid`` at once; x (R, n, d), y (R, n)."""
    rows = torch.as_tensor(grid.row)
    return train_robust_erm(x[rows], y[rows], torch.as_tensor(grid.eps, dtype=x.dtype), config)


# MLflow metric of a price_train job -> its :func:`metrics_table` column (means over draws
# per eps fraction)
JOB_METRICS = {"train.robust_acc": "train_robust_acc", "test.robust_acc": "test_robust_acc",
               "test.clean_acc": "test_clean_acc", "gap.robust": "robust_gap",
               "gap.clean": "clean_gap", "w.l1_norm": "l1_norm", "w.l2_norm": "l2_norm",
               "iters": "iters", "converged": "converged"}  # fmt: skip


def margin_ratio(
    w: torch.Tensor, x: torch.Tensor, y: torch.Tensor, gamma: torch.Tensor
) -> torch.Tensor:
    """(...,) min_i y_i <w, x_i> / (||w||_1 gamma*): the clean normalised l_inf margin of w
    (..., d) on x (..., n, d), y (..., n) relative to the best possible gamma* (...,); 1 for
    the max-l1-margin direction, -inf for w = 0."""
    return normalized_linf_margin(w, x, y) / gamma


def metrics_table(
    result: RobustERMResult,
    grid: ProblemGrid,
    x: torch.Tensor,
    y: torch.Tensor,
    x_test: torch.Tensor,
    y_test: torch.Tensor,
) -> pd.DataFrame:
    """One row per problem: accuracies (closed form), gaps, norms, stopping record.

    ``margin_ratio`` = min_i y_i <w, x_i> / (||w||_1 gamma*) is the clean normalised l_inf
    margin relative to the best possible (1 for the max-l1-margin direction).
    """
    rows = torch.as_tensor(grid.row)
    w = result.w  # (B, d)
    xb, yb = x[rows].to(w.dtype), y[rows].to(w.dtype)  # (B, n, d), (B, n)
    x_test, y_test = x_test.to(w.dtype), y_test.to(w.dtype)
    eps = torch.as_tensor(grid.eps, dtype=w.dtype)
    tr_rob = robust_accuracy(w, xb, yb, eps)
    te_rob = robust_accuracy(w, x_test, y_test, eps)
    tr_cl = clean_accuracy(w, xb, yb)
    te_cl = clean_accuracy(w, x_test, y_test)
    gamma = torch.as_tensor(grid.gamma, dtype=w.dtype)
    table = {
        "draw": grid.draw,
        "eps_fraction": grid.eps_fraction,
        "gamma": grid.gamma,
        "eps": grid.eps,
        "train_robust_acc": tr_rob,
        "test_robust_acc": te_rob,
        "train_clean_acc": tr_cl,
        "test_clean_acc": te_cl,
        "robust_gap": tr_rob - te_rob,
        "clean_gap": tr_cl - te_cl,
        "l1_norm": l1_norm(w),
        "l2_norm": l2_norm(w),
        "margin_ratio": margin_ratio(w, xb, yb, gamma),
        "iters": result.iters,
        "converged": result.converged,
        "diverged": result.diverged,
        "log10_loss": result.log_loss / math.log(10),
        "c": result.c,
    }
    return pd.DataFrame(
        {k: (v.numpy() if isinstance(v, torch.Tensor) else v) for k, v in table.items()}
    )


def margin_path_table(
    result: RobustERMResult, grid: ProblemGrid, x: torch.Tensor, y: torch.Tensor
) -> pd.DataFrame:
    """One row per checkpoint of ``result`` (the first iterate at each decade of the train
    loss, :class:`~ibrobust.training.robust_erm.Checkpoints`): the problem's draw and
    eps_fraction, the step ``iter``, ``log10_loss`` and :func:`margin_ratio` there, sorted
    by (problem, iter). Needs a result trained with ``checkpoint_decades``."""
    ck = result.checkpoints
    if ck is None:
        raise ValueError("the result has no checkpoints (train with checkpoint_decades=True)")
    b = ck.problem.numpy()
    rows = torch.as_tensor(grid.row)[ck.problem]
    xb, yb = x[rows].to(ck.w.dtype), y[rows].to(ck.w.dtype)  # (K, n, d), (K, n)
    gamma = torch.as_tensor(grid.gamma, dtype=ck.w.dtype)[ck.problem]
    return pd.DataFrame(
        {
            "draw": grid.draw[b],
            "eps_fraction": grid.eps_fraction[b],
            "iter": ck.step.numpy(),
            "log10_loss": (ck.log_loss / math.log(10)).numpy(),
            "margin_ratio": margin_ratio(ck.w, xb, yb, gamma).numpy(),
        }
    )


@dataclass(frozen=True)
class AlgorithmRun:
    """One algorithm of a price_train job over every problem of its grid."""

    name: str
    erm: RobustERMConfig
    result: RobustERMResult
    table: pd.DataFrame  # metrics_table with columns optimizer, algorithm first
    seconds: float  # training wall time
    path: pd.DataFrame  # margin_path_table with columns optimizer, algorithm first

    @property
    def means(self) -> pd.Series:
        """Each metric's mean over the problems."""
        return self.table.drop(columns=["optimizer", "algorithm"]).astype(float).mean()

    def job_metrics(self) -> dict[str, float]:
        """The MLflow metrics of the job for this algorithm (:data:`JOB_METRICS`, seconds)."""
        means = self.means
        out = {f"{self.name}.{m}": float(means[c]) for m, c in JOB_METRICS.items()}
        return out | {f"{self.name}.train.seconds": self.seconds}

    def describe(self, n_draws: int, n_fractions: int) -> str:
        """One log line: what ran, how long, how many problems converged or diverged."""
        r = self.result
        return (
            f"{self.name} ({self.erm.algorithm}, {len(self.table)} problems: {n_draws} draws x "
            f"{n_fractions} eps fractions): {self.seconds:.2f} s; {int(r.converged.sum())} "
            f"reached the loss threshold {self.erm.loss_threshold:g}, {int(r.diverged.sum())} "
            f"diverged; mean robust gap {self.means.robust_gap:.3f}"
        )


def run_algorithm(
    name: str,
    optimizer: Mapping,
    stopping: Mapping,
    x: torch.Tensor,
    y: torch.Tensor,
    grid: ProblemGrid,
    x_test: torch.Tensor,
    y_test: torch.Tensor,
) -> AlgorithmRun:
    """Train the ``optimizers`` entry ``name`` on every problem of ``grid`` (one vectorised
    robust ERM) and tabulate its solutions (:func:`metrics_table`) and its checkpoints
    (:func:`margin_path_table`)."""
    erm = erm_config(optimizer, stopping)
    t0 = time.monotonic()
    result = train_problems(x, y, grid, erm)
    seconds = time.monotonic() - t0
    table = metrics_table(result, grid, x, y, x_test, y_test)
    path = margin_path_table(result, grid, x, y)
    for t in (table, path):
        t.insert(0, "optimizer", name)
        t.insert(1, "algorithm", algorithm_of(optimizer))
    return AlgorithmRun(name, erm, result, table, seconds, path)


def weights_arrays(runs: Sequence[AlgorithmRun], grid: ProblemGrid) -> dict[str, np.ndarray]:
    """The job's solutions file: ``w`` (algorithms, problems, d) in the order of ``runs``,
    ``optimizer`` names and the grid (``draw``, ``eps_fraction``, ``eps``) per problem."""
    return {
        "w": np.stack([r.result.w.numpy() for r in runs]),
        "optimizer": np.asarray([r.name for r in runs]),
        "draw": np.asarray(grid.draw),
        "eps_fraction": np.asarray(grid.eps_fraction),
        "eps": np.asarray(grid.eps),
    }


__all__ = [
    "AlgorithmRun",
    "ALGORITHM_LABEL",
    "METRICS",
    "ProblemGrid",
    "algorithm_label",
    "algorithm_of",
    "draw_margins",
    "erm_config",
    "margin_path_table",
    "margin_ratio",
    "metrics_table",
    "problem_grid",
    "regime_label",
    "run_algorithm",
    "sample_test_set",
    "sample_train_draws",
    "teacher_config",
    "train_problems",
    "weights_arrays",
]
