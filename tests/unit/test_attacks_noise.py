"""The random-noise baseline (attack kind ``noise``) on a hand-computed linear score."""

from __future__ import annotations

import pytest
import torch

from ibrobust.attacks.noise import unit_noise
from ibrobust.attacks.policy import attack_applies, attack_norm
from ibrobust.attacks.suite import AttackContext, evaluate_attacks, parse_attack


class Linear(torch.nn.Module):
    """Binary score s(x) = x_0 (two heads (x_0/2, -x_0/2) read (+1, -1))."""

    def forward(self, x):
        return torch.stack([x[:, 0] / 2, -x[:, 0] / 2], 1)

    def binary_score(self, x):
        return x[:, 0]


def gen():
    return torch.Generator().manual_seed(0)


def test_unit_noise_has_unit_norm():
    u2, ui = unit_noise((50, 7), "l2", gen()), unit_noise((50, 7), "linf", gen())
    torch.testing.assert_close(u2.norm(dim=1), torch.ones(50))
    assert torch.equal(ui.abs(), torch.ones(50, 7))


def test_by_hand_on_a_linear_score():
    """x_0 = 0.5, y = +1: l2 noise moves x_0 by at most eps, linf noise by exactly +-eps.
    Below 0.5 nothing breaks; at 0.6 a linf vertex with u_0 = -1 breaks the point (every
    draw has probability 1/2; 20 draws miss it with probability 1e-6)."""
    x = torch.tensor([[0.5, 0.0, 0.0, 0.0]]).repeat(8, 1)
    y, fine = torch.ones(8), torch.zeros(8, dtype=torch.long)
    ctx = AttackContext(task="binary")
    specs = {"l2": {"kind": "noise", "norm": "l2", "draws": 20},
             "linf": {"kind": "noise", "norm": "linf", "draws": 20}}  # fmt: skip
    table, masks = evaluate_attacks(Linear(), x, y, fine, [0.0, 0.4, 0.6], specs, ctx, gen())
    assert masks["l2"][:2].all() and masks["linf"][:2].all()
    assert not masks["linf"][2].any()
    worst = table[table.attack == "worst"].set_index("eps").robust_acc
    assert worst[0.4] == 1.0 and worst[0.6] == 0.0


def test_spec_and_policy():
    _, cfg = parse_attack({"kind": "noise", "norm": "linf"})
    assert cfg.draws == 10
    with pytest.raises(ValueError, match="norm"):
        parse_attack({"kind": "noise", "norm": "l1"})
    with pytest.raises(ValueError, match="unknown key"):
        parse_attack({"kind": "noise", "steps": 3})
    spec = {"kind": "noise", "norm": "linf", "draws": 3}
    assert attack_norm(spec) == "linf"
    assert attack_applies(spec, "binary", "binary") and attack_applies(spec, "multiclass", "fine")
