"""The universal cluster direction (Frei et al., 2023) for the synthetic cluster data.

z = -y * (sum_{J+} mu_j - sum_{J-} mu_j) / ||.||, scaled to radius eps: one fixed
direction per class that lowers every positive feature and raises every negative one.
"""

from __future__ import annotations

import torch

from ibrobust.attacks.tasks import correct_in_batches


def universal_direction(means: torch.Tensor, sign: torch.Tensor) -> torch.Tensor:
    """(d,) unit vector (sum_{J+} mu_j - sum_{J-} mu_j) / ||.||."""
    v = sign.to(means.dtype) @ means
    return v / v.norm()


def universal_perturbation(
    x: torch.Tensor,
    y: torch.Tensor,
    means: torch.Tensor,
    sign: torch.Tensor,
    eps: torch.Tensor | list[float],
) -> torch.Tensor:
    """Adversarial examples (R, n, d): x - eps * y * z for each radius."""
    eps_t = torch.as_tensor(eps, dtype=x.dtype, device=x.device).reshape(-1, 1, 1)
    z = universal_direction(means, sign)
    return x[None] - eps_t * y[None, :, None] * z[None, None, :]


# ---- the ``universal`` kind of the attack suite (ibrobust.attacks.suite, ibrobust.kinds) ---
def parse_spec(spec: dict) -> None:
    """No settings; other keys are ignored (a flat attack schema may fill PGD defaults)."""
    return None


def describe(_cfg: None) -> dict:
    """No settings."""
    return {}


def run_spec(model, x, y, fine, eps: float, _cfg, ctx, gen) -> torch.Tensor:
    """(n,) bool: still correct after the universal perturbation at ``eps``."""
    if ctx.means is None or ctx.sign is None:
        raise ValueError("the universal attack needs cluster means and signs (cluster data only)")
    x_adv = universal_perturbation(x, y, ctx.means, ctx.sign, [eps])[0]
    return correct_in_batches(ctx.task, model, x_adv, y, fine, ctx.eval_batch_size)
