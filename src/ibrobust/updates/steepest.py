"""Steepest descent w.r.t. the l2, l1 or l_inf norm (Tsilivis et al., NeurIPS 2024, Sec. 4.1).

The normalised steepest-descent direction of a gradient g w.r.t. a norm ||.|| is
``u = argmax_{||v|| <= 1} <g, v>`` (Boyd & Vandenberghe, Sec. 9.4); the *unnormalised*
step, the one Theorem 4.3 analyses and the one the paper's linear experiments use,
scales it by the dual norm: ``Delta = ||g||_* u`` (so that ``<g, Delta> = ||g||_*^2``).
With ``x <- x - lr * Delta``:

======  ==============================  =====================================  =================
norm    ``scale="dual"`` (the paper's)  ``scale="unit"`` (normalised)          name
======  ==============================  =====================================  =================
l2      ``g``                           ``g / ||g||_2``                        gradient descent
l1      ``||g||_inf sign(g_i*) e_i*``   ``sign(g_i*) e_i*``                    coordinate desc.
linf    ``||g||_1 sign(g)``             ``sign(g)``                            sign descent
======  ==============================  =====================================  =================

``i*`` is the coordinate of largest ``|g_i|``. The paper's Sec. 5.1 (linear models) uses
the dual-scaled step with the loss-adaptive step size ``eta_t = min(eta_max, c / L(w_t))``;
its Sec. 5.2 sign descent on networks (App. D, eq. 50) is ``x <- x - lr * sign(g)``, i.e.
``norm="linf", scale="unit"`` with a constant ``lr``.

Design decisions (the tests pin each of them):

* **One vector.** The l1 / l_inf geometry is over the concatenation of *all* parameters
  the optimizer holds (every param group), so coordinate descent moves the coordinate
  of largest ``|g|`` across all tensors, and sign descent scales by the l1 norm of the
  whole gradient.
* **Ties in coordinate descent** (``tie``): ``"split"`` (default) moves every tied
  coordinate by an equal share -- the barycentre of the face ``conv{sign(g_i) e_i : i
  tied}``, which is still a steepest direction, has l1 norm 1 before scaling, does not
  depend on the order of the coordinates, and is what the continuous-time flow does.
  ``"first"`` moves only the lowest flat index (parameters in optimizer order, each
  flattened row-major), i.e. ``torch.argmax``. Ties are exact float equality.
* **Zero gradients.** A zero gradient gives a zero step in every norm; in sign descent
  a coordinate with ``g_i = 0`` does not move (``sign(0) = 0``, the minimum-norm element of
  the steepest set).
* **Adaptive step size.** ``eta_t = min(lr_max, c / L(w_t))`` from the loss passed to
  :meth:`SteepestDescent.step` (``loss=``, ``log_loss=`` or a closure), computed in log
  space so ``L`` may be far below 1e-300 when given as ``log_loss``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch

from ibrobust.norms import NORMS  # noqa: E402  (the one list)

SCALES = ("dual", "unit")
TIES = ("split", "first")


def check_choice(key: str, value: Any, allowed: tuple[str, ...]) -> None:
    """ValueError naming ``key`` unless ``value`` is one of ``allowed``."""
    if value not in allowed:
        raise ValueError(f"{key} must be one of {allowed}, got {value!r}")


def dual_norm(g: torch.Tensor, norm: str) -> torch.Tensor:
    """(...,) dual norm ||g||_* over the last dim of g (...,P): l2->l2, l1->linf, linf->l1."""
    check_choice("norm", norm, NORMS)
    if norm == "l2":
        return torch.linalg.vector_norm(g, 2, dim=-1)
    if norm == "l1":
        return g.abs().amax(dim=-1)
    return g.abs().sum(dim=-1)


def steepest_direction(
    g: torch.Tensor, norm: str, *, scale: str = "dual", tie: str = "split"
) -> torch.Tensor:
    """Steepest-descent step direction for gradient(s) g (..., P); the update is ``x -= lr * out``.

    The last dimension is one parameter vector; leading dimensions are independent
    problems (a batch). See the module docstring for the table of directions and the tie
    rule. The map is positively homogeneous: degree 1 in g for ``scale="dual"`` and
    degree 0 for ``scale="unit"`` -- :mod:`ibrobust.training.robust_erm` relies on this to
    work with the loss-normalised gradient ``grad L / L``.
    """
    check_choice("norm", norm, NORMS)
    check_choice("scale", scale, SCALES)
    check_choice("tie", tie, TIES)
    if norm == "l2":
        if scale == "dual":
            return g.clone()
        nrm = torch.linalg.vector_norm(g, 2, dim=-1, keepdim=True)  # (..., 1)
        return torch.where(nrm > 0, g / nrm.clamp_min(torch.finfo(g.dtype).tiny), 0.0)
    if norm == "linf":
        s = torch.sign(g)  # (..., P); sign(0) = 0
        return s * g.abs().sum(dim=-1, keepdim=True) if scale == "dual" else s
    # l1: coordinate descent
    a = g.abs()  # (..., P)
    top = a.amax(dim=-1, keepdim=True)  # (..., 1)
    mask = (a == top) & (top > 0)  # (..., P) tied maximisers
    if tie == "first":
        mask = mask & (mask.cumsum(dim=-1) == 1)
    share = mask.to(g.dtype) / mask.sum(dim=-1, keepdim=True).clamp_min(1).to(g.dtype)
    u = torch.sign(g) * share  # (..., P), ||u||_1 = 1 (or 0 if g = 0)
    return u * top if scale == "dual" else u


def adaptive_log_lr(
    log_loss: float | torch.Tensor, c: float | torch.Tensor, lr_max: float
) -> torch.Tensor:
    """log eta_t for eta_t = min(lr_max, c / L), from log L; c a float or a tensor broadcasting
    with log L (one c per problem). Formed in log space: no overflow for L far below 1e-300.
    """
    c = torch.as_tensor(c, dtype=torch.float64)
    if not bool((c > 0).all()):
        raise ValueError(f"c must be > 0, got {c}")
    if not lr_max > 0:
        raise ValueError(f"lr_max must be > 0, got {lr_max}")
    log_loss = torch.as_tensor(log_loss, dtype=torch.float64)
    return torch.clamp(torch.log(c) - log_loss, max=math.log(lr_max))


# (norm, scale) whose direction is coordinate-wise: no joint vector is needed for the step
SEPARABLE: dict[tuple[str, str], Callable[[torch.Tensor], torch.Tensor]] = {
    ("l2", "dual"): lambda g: g,
    ("linf", "unit"): torch.sign,
}


class SteepestDescent(torch.optim.Optimizer):
    """Steepest descent w.r.t. ``norm`` over the concatenation of all parameters.

    Args:
        params: parameters or param groups. ``lr`` (and ``lr_max``) may differ per group
            and scale that group's slice of the joint direction; ``norm``, ``scale``,
            ``tie``, ``adaptive`` and ``c`` are optimizer-wide (the direction is joint).
        lr: constant step size (used when ``adaptive=False``).
        norm: ``"l2"`` (GD), ``"l1"`` (coordinate descent) or ``"linf"`` (sign descent).
        scale: ``"dual"`` (unnormalised steepest descent, the paper's Sec. 5.1) or
            ``"unit"`` (normalised; ``linf`` + ``unit`` is plain sign descent, Sec. 5.2).
        tie: coordinate-descent tie rule, ``"split"`` or ``"first"`` (module docstring).
        adaptive: use ``eta_t = min(lr_max, c / L(w_t))`` instead of ``lr``; the loss must
            then reach :meth:`step` (closure, ``loss=`` or ``log_loss=``).
        c: numerator of the adaptive step size.
        lr_max: cap of the adaptive step size; ``None`` -> the group's ``lr``.
    """

    def __init__(
        self,
        params: Iterable[torch.Tensor] | Iterable[dict[str, Any]],
        lr: float,
        norm: str = "l2",
        *,
        scale: str = "dual",
        tie: str = "split",
        adaptive: bool = False,
        c: float = 1.0,
        lr_max: float | None = None,
    ) -> None:
        if not lr > 0:
            raise ValueError(f"lr must be > 0, got {lr}")
        check_choice("norm", norm, NORMS)
        check_choice("scale", scale, SCALES)
        check_choice("tie", tie, TIES)
        if not c > 0:
            raise ValueError(f"c must be > 0, got {c}")
        if lr_max is not None and not lr_max > 0:
            raise ValueError(f"lr_max must be > 0, got {lr_max}")
        defaults = dict(
            lr=lr, lr_max=lr_max, norm=norm, scale=scale, tie=tie, adaptive=adaptive, c=c
        )
        super().__init__(params, defaults)
        for key in ("norm", "scale", "tie", "adaptive", "c"):
            values = {group[key] for group in self.param_groups}
            if len(values) > 1:
                raise ValueError(
                    f"{key} must be the same in every param group, got {sorted(map(str, values))}"
                )

    @torch.no_grad()
    def step(  # type: ignore[override]
        self,
        closure: Callable[[], torch.Tensor] | None = None,
        *,
        loss: float | torch.Tensor | None = None,
        log_loss: float | torch.Tensor | None = None,
    ) -> torch.Tensor | None:
        """One step from the parameters' ``.grad``; returns the closure's loss (or ``loss``)."""
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        grads = [p.grad for group in self.param_groups for p in group["params"]]
        self.apply_gradients(grads, loss=loss, log_loss=log_loss)
        return loss

    def apply_gradients(
        self,
        grads: Sequence[torch.Tensor | None],
        *,
        loss: float | torch.Tensor | None = None,
        log_loss: float | torch.Tensor | None = None,
    ) -> None:
        """The step of :meth:`step` from explicit gradients, one per parameter in optimizer
        order (None: that parameter has none and does not move), e.g. those of
        ``torch.autograd.grad``. The same update, without ``torch.optim.Optimizer``'s step
        machinery (profiler record, hooks) or a ``zero_grad`` between steps: what a
        training loop that owns its gradients calls (:mod:`ibrobust.training.network`)."""
        pairs = [(group, p) for group in self.param_groups for p in group["params"]]
        if len(grads) != len(pairs):
            raise ValueError(
                f"expected {len(pairs)} gradients (one per parameter), got {len(grads)}"
            )
        g0 = self.param_groups[0]
        if g0["adaptive"]:
            if log_loss is None:
                if loss is None:
                    raise ValueError(
                        "adaptive=True needs the current loss: pass closure, loss= or log_loss="
                    )
                log_loss = torch.log(torch.as_tensor(loss, dtype=torch.float64).detach())
            log_loss = torch.as_tensor(log_loss, dtype=torch.float64).detach()
            if not torch.isfinite(log_loss):
                raise ValueError(
                    f"log_loss must be finite for the adaptive step, got {float(log_loss)}"
                )

        entries = []  # (group, param, gradient) with a gradient, in optimizer order
        for (group, p), g in zip(pairs, grads, strict=True):
            if g is None:
                continue
            if g.is_sparse:
                raise ValueError("SteepestDescent does not support sparse gradients")
            entries.append((group, p, g))
        if not entries:
            return
        dtype = entries[0][2].dtype
        for _, _, g in entries[1:]:
            dtype = torch.promote_types(dtype, g.dtype)
        with torch.no_grad():
            coordinatewise = SEPARABLE.get((g0["norm"], g0["scale"]))
            if coordinatewise is not None and all(g.dtype == dtype for _, _, g in entries):
                # g or sign(g): each parameter's slice of the joint direction is its own
                parts = [coordinatewise(g) for _, _, g in entries]
            else:
                flat = torch.cat([g.reshape(-1).to(dtype) for _, _, g in entries])  # (P,)
                direction = steepest_direction(flat, g0["norm"], scale=g0["scale"], tie=g0["tie"])
                parts = list(direction.split([p.numel() for _, p, _ in entries]))

            for (group, p, _), part in zip(entries, parts, strict=True):
                if group["adaptive"]:
                    lr_max = group["lr"] if group["lr_max"] is None else group["lr_max"]
                    eta = float(torch.exp(adaptive_log_lr(log_loss, group["c"], lr_max)))
                else:
                    eta = group["lr"]
                p.sub_(part.view_as(p).to(p.dtype), alpha=eta)
