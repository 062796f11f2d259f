"""The one call signature of a training path (:data:`ibrobust.kinds.TRAINERS`).

A training path is a module exposing ``fit_path``, a :class:`Trainer`: it trains the
freshly built ``net`` of one ``train`` job on ``data.train`` for a ``supervision`` with the
job's ``optimizers`` entry and seed, and returns a :class:`Fitted`. It may call ``on_log``
with each history row as it is made (progress lines, MLflow metrics).

History rows share one vocabulary (:data:`HISTORY_KEYS`): ``epoch`` counts passes over the
training set (one full-batch step is one epoch; epoch 0, when logged, is before the first
update), ``loss`` is the mean training loss and ``acc`` the training accuracy on the
supervised labels; a path may add columns (``seconds``, ``full_loss``, ...). Loss names are
:data:`ibrobust.training.losses.TRAINING_LOSSES`.

:func:`ibrobust.stages.networks.fit` is the only caller: it builds the net, calls the
path and saves the state, history and checkpoints.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch
from torch import nn

from ibrobust.data.dataset import Dataset

# the curve columns of a history row (optimizer eval_every; ibrobust.training.curves), here
# with the rest of the history vocabulary so a job logs them without loading the attack
CURVE_KEYS = ("train_acc", "test_acc", "robust_train_acc", "robust_test_acc")

HISTORY_KEYS = ("epoch", "loss", "acc")  # every history row has these

OnLog = Callable[[dict], None]


@dataclass
class Fitted:
    """What a training path returns."""

    state: dict[str, torch.Tensor]  # the trained net's state_dict
    history: list[dict]  # rows with HISTORY_KEYS (+ path-specific columns)
    epochs: int  # epochs taken (= full-batch steps)
    converged: bool  # reached the optimizer's stop_loss (False when it has none)
    # epoch -> state_dict of saved iterates; the caller adds epoch 0 (the initial net) and
    # the last epoch (the trained net) where the path does not list them itself
    checkpoints: dict[int, dict[str, torch.Tensor]] = field(default_factory=dict)


class Trainer(Protocol):
    """``fit_path`` of a training-path module."""

    def __call__(
        self,
        net: nn.Module,
        data: Dataset,
        supervision: str,
        optimizer: Mapping[str, Any],
        seed: int,
        on_log: OnLog | None = None,
        device: str | None = None,
    ) -> Fitted: ...


def check_history(rows: list[dict]) -> list[dict]:
    """``rows`` if every row has the shared keys (a path that forgets one fails here)."""
    for i, row in enumerate(rows):
        missing = [k for k in HISTORY_KEYS if k not in row]
        if missing:
            raise ValueError(f"history row {i} lacks {missing}: {row}")
    return rows
