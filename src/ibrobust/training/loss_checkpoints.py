"""The iterates of a robust-ERM run at the decades of its train loss
(:mod:`ibrobust.training.robust_erm`, ``checkpoint_decades``): one row per checkpoint."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Checkpoints:
    """The iterates at the decades of the train loss (module docstring), one row each,
    sorted by (problem, step)."""

    problem: torch.Tensor  # (K,) int64 index of the problem in the batch
    step: torch.Tensor  # (K,) int64 iteration t of the checkpoint
    log_loss: torch.Tensor  # (K,) natural log of the train loss at it
    w: torch.Tensor  # (K, d) the linear predictor at it (u*u - v*v for diag_gd)

    @staticmethod
    def stack(
        rows: list[tuple[torch.Tensor, int, torch.Tensor, torch.Tensor]], d: int, dtype: torch.dtype
    ) -> Checkpoints:
        """From groups (problems (k,), step, log_loss (k,), w (k, d)), sorted by (problem,
        step)."""
        if not rows:
            none = torch.zeros(0, dtype=torch.int64)
            return Checkpoints(
                none, none, torch.zeros(0, dtype=dtype), torch.zeros((0, d), dtype=dtype)
            )
        problem = torch.cat([r[0] for r in rows])
        step = torch.cat([torch.full_like(r[0], r[1]) for r in rows])
        order = torch.argsort(problem * (int(step.max()) + 1) + step)
        log_loss, w = torch.cat([r[2] for r in rows]), torch.cat([r[3] for r in rows])
        return Checkpoints(problem[order], step[order], log_loss[order], w[order])
