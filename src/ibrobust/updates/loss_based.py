"""The loss-based learning rate of Lyu & Li (ICLR 2020, App. "SGD with loss-based learning rate").

Epoch t runs SGD with eta(t) = alpha(t) / L(t-1), where L(t-1) is the training loss after
the last accepted epoch. After the epoch, with the new training loss L(t):

* L(t) < L(t-1): the epoch is accepted and alpha(t+1) = alpha(t) * grow (2^(1/5));
* otherwise alpha is divided by shrink (2^(1/10)), the epoch is rolled back (parameters
  and optimizer state) and redone.

Log space. A mini-batch step is eta * grad L_B = alpha * (L_B / L(t-1)) * grad log L_B;
:meth:`LossBasedLR.step_scale` returns alpha * exp(log L_B - log L(t-1)), the factor that
multiplies grad log L_B. Both logs are finite however small the losses are, so neither
the step nor its direction ever underflows (with L_B = L(t-1) it is alpha * grad log L).

The class is pure bookkeeping (no tensors): the trainer asks it for the factor of each
step and reports each epoch's loss; :meth:`state_dict` / :meth:`load_state_dict` let a
run be resumed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

GROW = 2.0 ** (1 / 5)  # the paper's factors
SHRINK = 2.0 ** (1 / 10)


@dataclass(frozen=True)
class LossBasedLRConfig:
    alpha: float = 0.1  # alpha(0); eta(1) = alpha / L(0) (the seeds do not give the paper's)
    grow: float = GROW  # alpha *= grow after an epoch that lowered the loss
    shrink: float = SHRINK  # alpha /= shrink after one that did not (and it is redone)

    def __post_init__(self) -> None:
        if not (isinstance(self.alpha, int | float) and math.isfinite(self.alpha)) or not (
            self.alpha > 0
        ):
            raise ValueError(f"alpha must be a finite number > 0, got {self.alpha!r}")
        if not self.grow >= 1:
            raise ValueError(f"grow must be >= 1, got {self.grow!r}")
        if not self.shrink > 1:
            raise ValueError(f"shrink must be > 1, got {self.shrink!r}")


class LossBasedLR:
    """alpha(t) and log L(t-1) of the loss-based schedule (see the module docstring)."""

    def __init__(self, cfg: LossBasedLRConfig, log_loss: float):
        if not math.isfinite(log_loss):
            raise ValueError(f"the initial log loss must be finite, got {log_loss!r}")
        self.cfg = cfg
        self.alpha = float(cfg.alpha)
        self.log_loss = float(log_loss)  # natural log of L(t-1)

    @property
    def log_eta(self) -> float:
        """log eta(t) = log alpha(t) - log L(t-1) (natural log; eta itself may overflow)."""
        return math.log(self.alpha) - self.log_loss

    def step_scale(self, log_batch_loss: float) -> float:
        """alpha * L_B / L(t-1): the factor of grad log L_B in one SGD step; inf when it
        exceeds float64 (a batch loss e^709 times the last epoch's: the epoch has diverged)."""
        log_scale = math.log(self.alpha) + log_batch_loss - self.log_loss
        return math.exp(log_scale) if log_scale < 709.0 else math.inf

    def end_epoch(self, log_loss: float) -> bool:
        """Report L(t) (as its log); True = accepted (alpha grows), False = roll back and
        redo the epoch (alpha shrinks). A non-finite loss is never accepted."""
        accepted = math.isfinite(log_loss) and log_loss < self.log_loss
        if accepted:
            self.alpha *= self.cfg.grow
            self.log_loss = float(log_loss)
        else:
            self.alpha /= self.cfg.shrink
        return accepted

    def state_dict(self) -> dict[str, float]:
        return {"alpha": self.alpha, "log_loss": self.log_loss}

    def load_state_dict(self, state: dict[str, float]) -> None:
        self.alpha, self.log_loss = float(state["alpha"]), float(state["log_loss"])
