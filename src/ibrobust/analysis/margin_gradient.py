"""Margin vs input gradient, per point: why averaged features break (issue 11, section 2).

The talks' intuition (seeds): a feature-averaging net has a binary margin q = y F(x)
similar to a robust net's, but a much larger input-gradient norm, because every neuron of
the point's class fires (each carries a share of every same-class feature), so the
first-order distance to the decision boundary, q / ||grad_x q||_2, is small. Per point:

* ``margin`` q = y F(x), F the model's binary score under its readout mode
  (:mod:`ibrobust.models.readout`);
* ``grad_norm`` ||grad_x q||_2 (q of one point depends only on that point, so one
  backward pass of sum(q) gives every point's gradient);
* ``first_order`` q / ||grad_x q||: for a linear score F(x) = <w, x> + b exactly the l2
  distance to the boundary {F = 0}; for a ReLU net the distance to the boundary of the
  linearisation at x (negative for misclassified points, +inf where the gradient is 0);
* ``breaking_radius``: the smallest radius of an attack grid at which the point is no
  longer correct under the worst case over the attacks (0 if wrong at radius 0, +inf if
  correct on the whole grid), from :func:`ibrobust.attacks.suite.correctness_over_radii`.
  It is an upper bound of the true distance within one grid step.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from torch import nn

from ibrobust.attacks.mode import attack_mode
from ibrobust.attacks.suite import AttackContext, correctness_over_radii
from ibrobust.data.dataset import Dataset
from ibrobust.device import resolve_device
from ibrobust.models.readout import with_readout
from ibrobust.progress import Progress
from ibrobust.seeding import torch_generator

POINT_COLUMNS = ("margin", "grad_norm", "first_order", "breaking_radius")


def parameter_norm(model: nn.Module) -> float:
    """||theta||_2 over the trainable parameters: margins and gradient norms of nets that
    are homogeneous of degree 1 in theta (Study FA's two-layer nets with their biases) scale
    with it, so q / ||theta|| compares the margins of different nets (the first-order
    distance needs no such scale: it is invariant)."""
    return float(torch.sqrt(sum((p.detach().double() ** 2).sum() for p in model.parameters())))


def margin_and_gradient(
    model: nn.Module, x: torch.Tensor, y: torch.Tensor, batch_size: int = 1000
) -> tuple[torch.Tensor, torch.Tensor]:
    """(n,) margins q = y * model.binary_score(x) and (n,) l2 norms of grad_x q.

    ``x`` (n, *s), ``y`` (n,) in {-1, +1}. The model is put in eval mode with its
    parameters frozen (and restored)."""
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"x has {x.shape[0]} points, y {y.shape[0]}")
    qs, gs = [], []
    with attack_mode(model):
        for lo in range(0, x.shape[0], batch_size):
            xb = x[lo : lo + batch_size].detach().clone().requires_grad_(True)
            q = y[lo : lo + batch_size].to(xb.dtype) * model.binary_score(xb)  # (b,)
            (g,) = torch.autograd.grad(q.sum(), xb)
            qs.append(q.detach())
            gs.append(g.reshape(g.shape[0], -1).norm(dim=1))
    return torch.cat(qs), torch.cat(gs)


def first_order_distance(margin: torch.Tensor, grad_norm: torch.Tensor) -> torch.Tensor:
    """(n,) q / ||grad_x q|| (+inf where the gradient vanishes and q > 0, -inf where q < 0)."""
    if margin.shape != grad_norm.shape:
        raise ValueError(f"shapes differ: {tuple(margin.shape)} vs {tuple(grad_norm.shape)}")
    if (grad_norm < 0).any():
        raise ValueError("gradient norms must be >= 0")
    return margin / grad_norm


def breaking_radius(correct: torch.Tensor, radii: Sequence[float]) -> torch.Tensor:
    """(n,) smallest radius at which a point is not correct, from (R, n) correctness at
    ``radii`` (monotone: once wrong, wrong at every larger radius); +inf if never wrong."""
    r = torch.as_tensor([float(v) for v in radii], dtype=torch.float64)
    if correct.ndim != 2 or correct.shape[0] != r.numel():
        raise ValueError(f"correct must be (R={r.numel()}, n), got {tuple(correct.shape)}")
    order = torch.argsort(r)
    r, c = r[order], correct[order].bool()
    wrong = ~c  # (R, n)
    first = torch.where(
        wrong.any(0), wrong.float().argmax(0), torch.full_like(c[0], -1, dtype=torch.long)
    )
    out = torch.where(
        first >= 0, r[first.clamp_min(0)], torch.tensor(math.inf, dtype=torch.float64)
    )
    return out


def point_table(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    fine: torch.Tensor,
    radii: Sequence[float],
    specs: Mapping[str, dict],
    ctx: AttackContext,
    gen: torch.Generator,
    progress: Progress | None = None,
    label: str = "",
) -> pd.DataFrame:
    """One row per point: :data:`POINT_COLUMNS` (the breaking radius of the worst case over
    ``specs``, attack configs as in the config's ``attacks``), ``breaking_radius.<name>``
    per attack and the model's ``param_norm``. ``progress`` advances by one unit per attack
    and radius (named ``<label> <attack> eps=..``)."""
    q, g = (t.double().cpu() for t in margin_and_gradient(model, x, y))  # the table's: CPU
    table = {"margin": q.numpy(), "grad_norm": g.numpy()}
    table["first_order"] = first_order_distance(q, g).numpy()
    worst = None
    for name, spec in specs.items():
        correct = correctness_over_radii(
            model, x, y, fine, list(radii), spec, ctx, gen, progress, f"{label} {name}".strip()
        ).cpu()
        table[f"breaking_radius.{name}"] = breaking_radius(correct, radii).numpy()
        worst = correct if worst is None else worst & correct
    if worst is None:
        raise ValueError("no attack to find breaking radii with")
    table["breaking_radius"] = breaking_radius(worst, radii).numpy()
    out = pd.DataFrame(table)[[*POINT_COLUMNS, *(f"breaking_radius.{n}" for n in specs)]]
    out["param_norm"] = parameter_norm(model)
    return out


def summarize(points: pd.DataFrame) -> dict[str, float]:
    """Medians over the points correct at radius 0 (margin > 0) of margin, gradient norm,
    first-order distance and breaking radius, and of margin and gradient norm per unit
    parameter norm (``param_norm`` column); the median ratio breaking radius / first-order
    distance (1 for a linear score), the fraction correct and the fraction of correct points
    never broken on the grid."""
    ok = points[points["margin"] > 0]
    finite = ok[np.isfinite(ok["breaking_radius"]) & np.isfinite(ok["first_order"])]
    out = {
        "points": float(len(points)),
        "frac_correct": float(len(ok) / len(points)) if len(points) else math.nan,
        "frac_unbroken": float((~np.isfinite(ok["breaking_radius"])).mean())
        if len(ok)
        else math.nan,
    }
    for c in POINT_COLUMNS:
        out[f"{c}.median"] = float(ok[c].median()) if len(ok) else math.nan
    for c in ("margin", "grad_norm"):
        scaled = ok[c] / ok["param_norm"]
        out[f"{c}_per_param_norm.median"] = float(scaled.median()) if len(ok) else math.nan
    out["breaking_over_first_order.median"] = (
        float((finite["breaking_radius"] / finite["first_order"]).median())
        if len(finite)
        else math.nan
    )
    return out


def evaluate_readouts(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    fine: torch.Tensor,
    readouts: Sequence[str],
    radii: Sequence[float],
    specs: Mapping[str, dict],
    ctx: AttackContext,
    seed: int,
    progress: Progress | None = None,
    label: str = "",
) -> pd.DataFrame:
    """:func:`point_table` under each binary readout mode (``readout`` column, in order),
    each with its own generator stream (seed, "margin_gradient", readout); the model is
    read through :func:`ibrobust.models.readout.with_readout`, never changed. A model with at most two heads reads every mode as the same score:
    pass one readout for it."""
    frames = []
    for ro in readouts:
        gen = torch_generator(seed, "margin_gradient", ro)
        t = point_table(
            with_readout(model, ro), x, y, fine, radii, specs, ctx, gen, progress, f"{label} {ro}"
        )
        t.insert(0, "readout", ro)
        t.insert(1, "point", np.arange(len(t)))
        frames.append(t)
    return pd.concat(frames, ignore_index=True)


@dataclass(frozen=True)
class MarginGradientConfig:
    """How many test points, and the radius grid the breaking radii are read from (step
    ``radius_step`` up to the study's largest attack radius)."""

    points: int = 200
    radius_step: float = 0.5

    def __post_init__(self) -> None:
        if self.points < 1:
            raise ValueError(f"points must be >= 1, got {self.points}")
        if not self.radius_step > 0:
            raise ValueError(f"radius_step must be > 0, got {self.radius_step}")

    def radii(self, top: float) -> list[float]:
        """0, step, 2 step, ... up to ``top`` (inclusive up to rounding)."""
        n = int(math.floor(top / self.radius_step + 1e-9))
        return [round(i * self.radius_step, 9) for i in range(n + 1)]


def run_points(
    model: nn.Module,
    data: Dataset,
    supervision: str,
    readouts: Sequence[str],
    specs: Mapping[str, dict],
    radii: Sequence[float],
    points: int,
    seed: int,
    progress: Progress | None = None,
    label: str = "",
    device: torch.device | str | None = "cpu",
) -> pd.DataFrame:
    """:func:`evaluate_readouts` on the first ``points`` test points of a cluster dataset:
    every readout for a k-class model, the single score (``sum``) for 2-head models.
    ``progress`` advances by :func:`run_units` units (``label`` names the run). The model,
    the points and the cluster means move to ``device`` (the config key,
    :func:`ibrobust.device.resolve_device`) once; the random draws stay on the CPU."""
    dev = resolve_device(device)
    model = model.to(dev)
    test = data.test.head(points).to(dev)
    means, sign = (None if t is None else t.to(dev) for t in (data.means, data.sign))
    ctx = AttackContext(means, sign, task="binary", box=data.box)
    ros = run_readouts(supervision, readouts)
    return evaluate_readouts(
        model, test.x, test.y, test.fine, ros, radii, specs, ctx, seed, progress, label
    )


def robust_accuracy(breaking: Sequence[float], radii: Sequence[float]) -> dict[float, float]:
    """eps -> the fraction of points still correct at each grid radius, from their breaking
    radii (:func:`breaking_radius` of the worst case: a point is correct at a grid radius
    exactly when its breaking radius is larger)."""
    b = np.asarray(breaking, dtype=np.float64)
    if not b.size:
        return {float(r): math.nan for r in radii}
    return {float(r): float((b > float(r)).mean()) for r in radii}


def run_readouts(supervision: str, readouts: Sequence[str]) -> list[str]:
    """The readouts a run is read through: all for a k-class model, ``sum`` otherwise."""
    return list(readouts) if supervision == "multiclass" else ["sum"]


def run_units(
    supervision: str, readouts: Sequence[str], specs: Mapping[str, dict], radii: Sequence[float]
) -> int:
    """The progress units of one :func:`run_points`: readouts x attacks x radii."""
    return len(run_readouts(supervision, readouts)) * len(specs) * len(radii)
