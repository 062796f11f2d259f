"""What counts as a correct prediction, and the logits AutoAttack sees for it.

A :class:`Task` turns the project's model contract (``forward(x)`` -> (n, H) logits,
``binary_score(x) = forward(x) @ readout``) into

* ``correct(model, x, y, fine)`` -> (n,) bool, the prediction is right;
* ``logits(model)`` -> a module whose argmax is that prediction, and ``labels(y, fine)``
  -> (n,) int64, the class it should pick (what a multi-class attack such as AutoAttack
  needs: it judges success by ``argmax logits != label``).

Tasks (registry :data:`TASKS`):

``binary`` (Studies FA / FA-IMAGES): correct iff ``y * binary_score(x) > 0`` (a tie is an
error); a k-class model is judged by its binary readout. Its logits are the two-logit
wrapper :class:`BinaryLogits`, z(x) = (-s(x)/2, +s(x)/2) with s = binary_score and label
``y > 0``: the cross-entropy of z is log(1 + exp(-y s)) = softplus(-y s), the logistic
loss of the margin, and argmax z = sign s (at s = 0 argmax picks class 0, i.e. -1, which
the binary rule also counts as an error for y = +1; for y = -1 the wrapper calls the tie
correct, so the suite re-judges every adversarial point with ``correct``).

``fine`` (Study PRELU's 10-class Table 1): correct iff ``argmax forward(x) == fine``; the
logits are the model's own and the label is the fine class.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import torch
from torch import nn

from ibrobust.attacks.losses import binary_correct


class BinaryLogits(nn.Module):
    """Two logits (-s/2, +s/2) from the binary score s = ``model.binary_score(x)``."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (n, *s) -> (n, 2)
        s = self.model.binary_score(x)  # (n,)
        return torch.stack((-0.5 * s, 0.5 * s), dim=1)


class Task(ABC):
    """Correctness of a prediction and the matching (logits, label) pair."""

    name: ClassVar[str]

    @abstractmethod
    def correct(
        self, model: nn.Module, x: torch.Tensor, y: torch.Tensor, fine: torch.Tensor
    ) -> torch.Tensor:
        """(n,) bool: the model's prediction on x is right."""

    @abstractmethod
    def logits(self, model: nn.Module) -> nn.Module:
        """A module x -> (n, C) logits whose argmax is the task's prediction."""

    @abstractmethod
    def labels(self, y: torch.Tensor, fine: torch.Tensor) -> torch.Tensor:
        """(n,) int64: the class ``logits`` should pick."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class BinaryTask(Task):
    """Correct iff y * binary_score(x) > 0; logits (-s/2, s/2), label y > 0."""

    name = "binary"

    def correct(self, model, x, y, fine):
        return binary_correct(model, x, y)

    def logits(self, model):
        return BinaryLogits(model)

    def labels(self, y, fine):
        return (y > 0).long()


class FineTask(Task):
    """Correct iff argmax forward(x) == fine; the model's own logits, label fine."""

    name = "fine"

    def correct(self, model, x, y, fine):
        return model(x).argmax(dim=1) == fine

    def logits(self, model):
        return model

    def labels(self, y, fine):
        return fine.long()


TASKS: dict[str, Task] = {t.name: t for t in (BinaryTask(), FineTask())}


def get_task(task: str | Task) -> Task:
    """The registered task of that name (a :class:`Task` passes through)."""
    if isinstance(task, Task):
        return task
    try:
        return TASKS[task]
    except (KeyError, TypeError):
        raise ValueError(f"unknown task {task!r}; known: {sorted(TASKS)}") from None


@torch.no_grad()
def correct_in_batches(
    task: Task, model: nn.Module, x: torch.Tensor, y: torch.Tensor, fine: torch.Tensor, batch: int
) -> torch.Tensor:
    """(n,) bool under ``task``, ``batch`` points per forward pass."""
    parts = [
        task.correct(model, x[lo : lo + batch], y[lo : lo + batch], fine[lo : lo + batch])
        for lo in range(0, x.shape[0], batch)
    ]
    return torch.cat(parts) if parts else torch.zeros(0, dtype=torch.bool, device=x.device)


def strict_keys(kind: str, spec: dict, known: set[str]) -> None:
    """ValueError naming the keys of an attack spec that its kind does not know."""
    unknown = sorted(set(spec) - known)
    if unknown:
        raise ValueError(
            f"unknown key(s) {unknown} for attack kind {kind!r}; known: {sorted(known)}"
        )
