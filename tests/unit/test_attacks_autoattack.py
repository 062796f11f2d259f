"""The AutoAttack wrapper (official pyautoattack) on toy image models: binary (custom set)
and 10-class (standard APGD-CE, full standard), validation, determinism, side effects."""

from __future__ import annotations

import logging

import pytest
import torch

from ibrobust.attacks.autoattack import BINARY_ATTACKS, AutoAttackConfig, autoattack
from ibrobust.attacks.pgd import PGDConfig, pgd
from ibrobust.attacks.tasks import get_task
from ibrobust.models.registry import BuildContext, build_model
from ibrobust.seeding import torch_generator

torch.set_num_threads(1)

BOX = (0.0, 1.0)
FAST = dict(n_iter=20, n_restarts=1, n_queries=200)  # overrides that keep tests in seconds


def acc(net, x, te, task):
    with torch.no_grad():
        return get_task(task).correct(net, x, te.y, te.fine).float().mean().item()


def pgd_acc(net, te, eps, norm, loss, task):
    adv = pgd(
        net, te.x, te.y, te.fine, [eps], loss, PGDConfig(norm=norm, steps=50, restarts=3),
        torch_generator(0, "aa_vs_pgd", norm), BOX, task=task,
    )[0]  # fmt: skip
    return acc(net, adv, te, task)


def lp(delta, norm):
    flat = delta.flatten(1)
    return {"l2": flat.norm(dim=1), "linf": flat.abs().amax(1), "l1": flat.abs().sum(1)}[norm]


@pytest.mark.parametrize("norm, eps", [("l2", 0.4), ("linf", 0.05)])
def test_binary_model_custom_set(toy_binary_net, toy_test, norm, eps):
    net, te = toy_binary_net, toy_test
    cfg = AutoAttackConfig(norm=norm, version="custom", attacks=list(BINARY_ATTACKS), **FAST)
    res = autoattack(net, te.x, te.y, te.fine, eps, cfg, seed=0, box=BOX, task="binary")
    assert res.correct.shape == (40,) and res.correct.dtype == torch.bool
    assert res.x_adv.shape == te.x.shape
    assert res.x_adv.min() >= 0 and res.x_adv.max() <= 1
    assert (lp(res.x_adv - te.x, norm) <= eps * (1 + 1e-4)).all()
    # the returned mask is the binary task's verdict on the returned points
    with torch.no_grad():
        assert torch.equal(res.correct, get_task("binary").correct(net, res.x_adv, te.y, te.fine))
    robust, clean = res.correct.float().mean().item(), acc(net, te.x, te, "binary")
    assert robust <= clean
    assert 0 < clean - robust  # it does something at this radius
    assert robust <= pgd_acc(net, te, eps, norm, "margin", "binary") + 0.1
    assert res.settings["attacks"] == "apgd-ce,fab,square" and res.settings["n_classes"] == 2


def test_ten_class_model_standard_apgd_ce(toy_fine_net, toy_test):
    """Study PRELU's paper-faithful evaluation: version standard, only apgd-ce (1 x 100)."""
    net, te = toy_fine_net, toy_test
    cfg = AutoAttackConfig(norm="l2", version="standard", attacks=["apgd-ce"])
    res = autoattack(net, te.x, te.y, te.fine, 0.7, cfg, seed=3, box=BOX, task="fine")
    s = res.settings
    assert (s["version"], s["attacks"], s["n_classes"]) == ("standard", "apgd-ce", 10)
    assert (s["apgd-ce.n_iter"], s["apgd-ce.n_restarts"], s["apgd-ce.use_largereps"]) == (
        100,
        1,
        False,
    )
    robust, clean = res.correct.float().mean().item(), acc(net, te.x, te, "fine")
    assert robust <= clean and robust < clean - 0.2
    assert robust <= pgd_acc(net, te, 0.7, "l2", "ce", "fine") + 0.1


def test_full_standard_on_ten_classes_adds_to_apgd_ce(toy_fine_net, toy_test):
    """Full standard = the same apgd-ce run (same seed, points, settings), then apgd-t,
    fab-t and square on the survivors: point-wise never more robust than apgd-ce alone."""
    net, te = toy_fine_net, toy_test
    x, y, fine = te.x[:20], te.y[:20], te.fine[:20]
    eps = 0.6
    full = autoattack(
        net, x, y, fine, eps, AutoAttackConfig(norm="l2", **FAST), seed=1, box=BOX, task="fine"
    )
    ce_only = autoattack(
        net, x, y, fine, eps, AutoAttackConfig(norm="l2", attacks=["apgd-ce"], **FAST),
        seed=1, box=BOX, task="fine",
    )  # fmt: skip
    assert full.settings["attacks"] == "apgd-ce,apgd-t,fab-t,square"
    assert full.settings["apgd-t.n_target_classes"] == 9
    assert full.settings["fab-t.n_target_classes"] == 9
    assert full.settings["square.n_queries"] == 200 and full.settings["apgd-t.n_iter"] == 20
    assert (full.correct <= ce_only.correct).all()
    assert full.correct.sum() < ce_only.correct.sum()  # the targeted attacks found more


def test_l1_standard_apgd_ce_records_largereps(toy_fine_net, toy_test):
    net, te = toy_fine_net, toy_test
    cfg = AutoAttackConfig(norm="l1", attacks=["apgd-ce"], n_iter=10)
    res = autoattack(
        net, te.x[:10], te.y[:10], te.fine[:10], 3.0, cfg, seed=0, box=BOX, task="fine"
    )
    s = res.settings
    assert (s["norm"], s["apgd-ce.n_restarts"], s["apgd-ce.use_largereps"]) == ("L1", 5, True)
    assert (lp(res.x_adv - te.x[:10], "l1") <= 3.0 * (1 + 1e-4)).all()
    assert res.x_adv.min() >= 0 and res.x_adv.max() <= 1


def test_standard_on_a_binary_model_raises_naming_the_custom_set(toy_binary_net, toy_test):
    te = toy_test
    with pytest.raises(ValueError, match=r"apgd-t.*custom.*'apgd-ce', 'fab', 'square'"):
        autoattack(toy_binary_net, te.x, te.y, te.fine, 0.5, AutoAttackConfig(), seed=0, box=BOX)
    # the binary task of a 10-class model is also two logits
    with pytest.raises(ValueError, match="2 logits"):
        autoattack(
            toy_fine_net_stub(), te.x, te.y, te.fine, 0.5, AutoAttackConfig(), seed=0, box=BOX
        )
    # apgd-dlr needs 3 classes
    cfg = AutoAttackConfig(version="custom", attacks=["apgd-dlr"])
    with pytest.raises(ValueError, match="apgd-dlr.*>= 3"):
        autoattack(toy_binary_net, te.x, te.y, te.fine, 0.5, cfg, seed=0, box=BOX)


def toy_fine_net_stub():
    readout = torch.where(torch.arange(10) < 5, 1.0, -1.0)
    return build_model({"kind": "mlp", "hidden": [8]}, BuildContext((1, 8, 8), readout, 0))


def test_fewer_than_ten_classes_needs_fewer_targets(toy_test):
    te = toy_test
    net = build_model(
        {"kind": "mlp", "hidden": [8]}, BuildContext((1, 8, 8), torch.tensor([1.0, 1, -1, -1]), 0)
    )
    fine = te.fine % 4
    with pytest.raises(ValueError, match="n_target_classes=9"):
        autoattack(
            net, te.x, te.y, fine, 0.3, AutoAttackConfig(**FAST), seed=0, box=BOX, task="fine"
        )
    cfg = AutoAttackConfig(n_target_classes=3, **FAST)
    res = autoattack(net, te.x[:8], te.y[:8], fine[:8], 0.3, cfg, seed=0, box=BOX, task="fine")
    assert res.settings["apgd-t.n_target_classes"] == 3 and res.correct.shape == (8,)


def test_needs_the_unit_box(toy_binary_net, toy_test):
    te, cfg = toy_test, AutoAttackConfig(version="custom", attacks=["apgd-ce"])
    for box in (None, (-1.0, 1.0)):
        with pytest.raises(ValueError, match=r"\[0, 1\]"):
            autoattack(toy_binary_net, te.x, te.y, te.fine, 0.5, cfg, seed=0, box=box)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        autoattack(toy_binary_net, te.x + 2.0, te.y, te.fine, 0.5, cfg, seed=0, box=BOX)
    # square needs (n, C, H, W)
    flat = build_model(
        {"kind": "mlp", "hidden": [8]}, BuildContext((1, 8, 8), torch.tensor([1.0, -1]), 0)
    )
    cfg_sq = AutoAttackConfig(version="custom", attacks=["square"])
    with pytest.raises(ValueError, match="square"):
        autoattack(
            flat,
            te.x.flatten(1)[:, None, :, None].squeeze(-1),
            te.y,
            te.fine,
            0.5,
            cfg_sq,
            seed=0,
            box=BOX,
        )


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(version="custom"), "attacks list"),
        (dict(attacks=["fab"]), "not allowed with version='standard'"),
        (dict(version="custom", attacks=["cw"]), "not allowed"),
        (dict(version="custom", attacks=["fab-t", "fab"]), "before"),
        (dict(version="custom", attacks=["fab", "fab"]), "repeat"),
        (dict(version="plus"), "version"),
        (dict(norm="l0"), "norm"),
        (dict(n_iter=0), "n_iter"),
        (dict(batch_size=0), "batch_size"),
        (dict(attacks="apgd-ce"), "list"),
    ],
)
def test_config_validation(kw, match):
    with pytest.raises(ValueError, match=match):
        AutoAttackConfig(**kw)


def test_deterministic_quiet_and_without_side_effects(toy_binary_net, toy_test, capsys, caplog):
    net, te = toy_binary_net, toy_test
    cfg = AutoAttackConfig(version="custom", attacks=["apgd-ce", "fab", "square"], **FAST)
    net.train()
    net.zero_grad(set_to_none=True)  # FAB calls backward(): nothing may reach the weights
    rng = torch.get_rng_state()
    with caplog.at_level(logging.DEBUG, logger="ibrobust.attacks.autoattack"):
        a = autoattack(net, te.x, te.y, te.fine, 0.4, cfg, seed=5, box=BOX)
    b = autoattack(net, te.x, te.y, te.fine, 0.4, cfg, seed=5, box=BOX)
    assert torch.equal(a.x_adv, b.x_adv) and torch.equal(a.correct, b.correct)
    assert torch.equal(torch.get_rng_state(), rng)  # the caller's global RNG is untouched
    assert capsys.readouterr().out == ""  # AutoAttack's progress goes to the logger ...
    assert any("robust accuracy" in r.getMessage() for r in caplog.records)  # ... here
    assert net.training  # mode restored
    assert all(p.requires_grad and p.grad is None for p in net.parameters())
    net.eval()


def test_zero_radius_and_empty_input(toy_binary_net, toy_test):
    te, net = toy_test, toy_binary_net
    cfg = AutoAttackConfig(version="custom", attacks=list(BINARY_ATTACKS))
    res = autoattack(net, te.x, te.y, te.fine, 0.0, cfg, seed=0, box=BOX)
    assert torch.equal(res.x_adv, te.x)
    assert res.correct.float().mean().item() == acc(net, te.x, te, "binary")
    empty = autoattack(net, te.x[:0], te.y[:0], te.fine[:0], 0.5, cfg, seed=0, box=BOX)
    assert empty.correct.shape == (0,)
