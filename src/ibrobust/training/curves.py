"""Evaluation during training: the curve point of :func:`ibrobust.training.network.train_network`.

:class:`CurveRecorder` is the trainer's ``on_eval`` hook. Every ``eval_every`` epochs (and
at the last one) it measures the model being trained, in place:

* ``train_acc`` / ``test_acc``: clean accuracy on the training set and on the first
  ``points`` test points (None: all), under the supervision trained on (binary: the sign
  of the binary score; k-class: the fine classes);
* ``robust_train_acc`` / ``robust_test_acc``: accuracy at the batch's perturbation by the
  *training* attack (:func:`ibrobust.training.adversarial.perturb_batch`: the same PGD,
  radius, steps and step size as robust ERM; its own random-start stream). Plain ERM
  (no adversarial option or eps = 0) has robust = clean.

These are the curves of Study PRICE-NN (Tsilivis et al., Sec. 5.2); the final numbers with
stronger attacks come from the attack suite, not from here.
"""

from __future__ import annotations

import torch
from torch import nn

from ibrobust.seeding import torch_generator
from ibrobust.training.adversarial import AdversarialConfig, perturb_batch
from ibrobust.training.losses import supervised_correct
from ibrobust.training.protocol import CURVE_KEYS  # noqa: F401  (re-exported)


class CurveRecorder:
    """``on_eval(model) -> {train_acc, test_acc, robust_train_acc, robust_test_acc}``."""

    def __init__(
        self,
        train: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
        test: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
        supervision: str,
        adversarial: AdversarialConfig | None,
        seed: int,
        points: int | None = None,
        batch: int = 2048,
    ):
        """``train`` / ``test``: (x, y, fine) of each split; ``points``: test points used."""
        k = test[0].shape[0] if points is None else min(points, test[0].shape[0])
        self.splits = {"train": train, "test": tuple(t[:k] for t in test)}
        self.supervision, self.batch = supervision, batch
        self.adversarial = adversarial if adversarial is not None and adversarial.active else None
        self.gen = torch_generator(seed, "train", "curves")

    def _correct(self, model: nn.Module, x, y, fine) -> int:
        with torch.no_grad():
            z = model(x)
        return int(supervised_correct(self.supervision, z, model.readout, y, fine).sum())

    def __call__(self, model: nn.Module) -> dict[str, float]:
        dev = next(model.parameters()).device
        out = {}
        for split, tensors in self.splits.items():
            x, y, fine = (t.to(dev) for t in tensors)
            clean = robust = 0
            for lo in range(0, x.shape[0], self.batch):
                xb, yb, fb = (
                    x[lo : lo + self.batch],
                    y[lo : lo + self.batch],
                    fine[lo : lo + self.batch],
                )
                c = self._correct(model, xb, yb, fb)
                clean += c
                if self.adversarial is None:
                    robust += c
                    continue
                xa = perturb_batch(model, xb, yb, fb, self.adversarial, self.supervision, self.gen)
                robust += self._correct(model, xa, yb, fb)
            out[f"{split}_acc"] = clean / x.shape[0]
            out[f"robust_{split}_acc"] = robust / x.shape[0]
        return out
