"""The attack suite: kinds registry, spec validation, task and box through the context,
radii in increasing order on the survivors, worst case over attacks."""

from __future__ import annotations

import pytest
import torch

from ibrobust import kinds
from ibrobust.attacks.pgd import PGDConfig, pgd
from ibrobust.attacks.policy import attack_applies, attack_norm, needs
from ibrobust.attacks.suite import (
    AttackContext,
    correctness_over_radii,
    evaluate_attacks,
    parse_attack,
)
from ibrobust.attacks.tasks import get_task
from ibrobust.data.clusters import ClusterDataConfig, make_cluster_data
from ibrobust.models.two_layer import TwoLayerConfig, TwoLayerFixed, init_two_layer
from ibrobust.seeding import torch_generator

torch.set_num_threads(1)

PGD_L2 = {"kind": "pgd", "norm": "l2", "loss": "ce", "steps": 10, "restarts": 1, "step_size": 0.2}
AA_CE = {
    "kind": "autoattack",
    "norm": "l2",
    "version": "standard",
    "attacks": ["apgd-ce"],
    "n_iter": 20,
}


def gen(*keys):
    return torch_generator(0, "test_attacks_suite", *keys)


def test_every_attack_kind_has_the_interface_and_a_policy():
    """Each registered kind: parse_spec / describe / run_spec, a schema fragment and a policy."""
    assert {"pgd", "universal", "autoattack"} <= set(kinds.ATTACKS.kinds())
    for kind in kinds.ATTACKS.kinds():
        module = kinds.ATTACKS.load(kind)
        assert all(
            callable(getattr(module, f, None)) for f in ("parse_spec", "describe", "run_spec")
        )
        assert kinds.ATTACKS.schema(kind)["properties"]["kind"]["enum"] == [kind]
        caps = kinds.ATTACKS.capabilities(kind)
        assert set(caps["needs"]) <= {"box", "cluster_means"}
        assert caps["aims"] in ("binary", "task")


def test_policy_norm_aims_and_needs():
    assert attack_norm({"kind": "universal", "norm": "linf"}) == "l2"  # a fixed l2 direction
    assert attack_norm(PGD_L2) == "l2" and needs(AA_CE) == {"box"}
    assert needs({"kind": "universal"}) == {"cluster_means"}
    assert attack_applies(PGD_L2, "multiclass", "fine") and not attack_applies(
        PGD_L2, "binary", "binary"
    )
    margin = {**PGD_L2, "loss": "margin"}
    assert attack_applies(margin, "binary", "binary") and not attack_applies(
        margin, "multiclass", "fine"
    )
    assert attack_applies(AA_CE, "multiclass", "fine") and attack_applies(AA_CE, "binary", "binary")


def test_registry_and_spec_validation():
    _, cfg = parse_attack(PGD_L2)
    assert cfg.loss == "ce" and cfg.cfg.steps == 10 and cfg.cfg.norm == "l2"
    _, aa = parse_attack(AA_CE)
    assert aa.attacks == ("apgd-ce",) and aa.n_iter == 20
    for spec, match in [
        ({"kind": "cw"}, r"'cw' is not an attack kind \(known: \["),
        ({"norm": "l2"}, "None is not an attack kind"),
        ({**PGD_L2, "stepz": 3}, r"unknown key\(s\) \['stepz'\] for attack kind 'pgd'"),
        ({**PGD_L2, "loss": "hinge"}, "unknown attack loss"),
        ({**PGD_L2, "norm": "l3"}, "norm"),
        ({**AA_CE, "steps": 10}, r"unknown key\(s\) \['steps'\] for attack kind 'autoattack'"),
        ({**AA_CE, "version": "custom", "attacks": None}, "attacks list"),
    ]:
        with pytest.raises(ValueError, match=match):
            parse_attack(spec)
    # universal has no keys and ignores the PGD defaults a flat schema fills in
    parse_attack({"kind": "universal", "norm": "l2", "steps": 50, "loss": "margin"})


def test_context_resolves_task_and_box():
    ctx = AttackContext(None, None, "fine", (0, 1))
    assert ctx.task is get_task("fine") and ctx.box == (0.0, 1.0)
    assert AttackContext().task is get_task("binary") and AttackContext().box is None
    with pytest.raises(ValueError, match="box"):
        AttackContext(box=(1.0, 0.0))
    with pytest.raises(ValueError, match="unknown task"):
        AttackContext(task="parity")


def test_images_fine_task_pgd_and_autoattack(toy_fine_net, toy_test):
    net, te = toy_fine_net, toy_test
    radii = [0.8, 0.0, 0.4]  # deliberately unsorted
    specs = {
        "pgd_ce": PGD_L2,
        "pgd_linf": {**PGD_L2, "norm": "linf", "loss": "fine_margin"},
        "aa_apgd_ce": AA_CE,
    }
    ctx = AttackContext(task="fine", box=(0.0, 1.0))
    table, masks = evaluate_attacks(net, te.x, te.y, te.fine, radii, specs, ctx, gen("img"))
    with torch.no_grad():
        clean = get_task("fine").correct(net, te.x, te.y, te.fine)
    for m in masks.values():
        assert m.shape == (3, 40)
        assert torch.equal(m[1], clean)  # radius 0 = clean accuracy under the fine task
        assert (m[2] <= m[1]).all() and (m[0] <= m[2]).all()  # monotone in the radius
    worst = table[table.attack == "worst"].set_index("eps").robust_acc
    for name in specs:
        acc = table[table.attack == name].set_index("eps").robust_acc
        assert (worst <= acc + 1e-12).all()
    assert worst[0.8] < worst[0.0]
    # attacking the binary readout of the same model gives a different clean accuracy
    ctx_bin = AttackContext(task="binary", box=(0.0, 1.0))
    m_bin = correctness_over_radii(
        net, te.x, te.y, te.fine, [0.0], {**PGD_L2, "loss": "margin"}, ctx_bin, gen("bin")
    )
    with torch.no_grad():
        assert torch.equal(m_bin[0], get_task("binary").correct(net, te.x, te.y, te.fine))
    assert not torch.equal(m_bin[0], clean)


def test_pgd_in_the_suite_respects_the_box(toy_fine_net, toy_test):
    """A suite run with box (0, 1) equals PGD with the box; without it PGD leaves the box."""
    net, te = toy_fine_net, toy_test
    spec = {**PGD_L2, "norm": "linf", "restarts": 1}
    boxed = correctness_over_radii(
        net, te.x, te.y, te.fine, [0.3], spec, AttackContext(task="fine", box=(0, 1)), gen("b")
    )
    adv = pgd(
        net, te.x, te.y, te.fine, [0.3], "ce", PGDConfig(norm="linf", steps=10, restarts=1, step_size=0.2),
        gen("b"), (0.0, 1.0), task="fine",
    )[0]  # fmt: skip
    with torch.no_grad():
        assert torch.equal(boxed[0], get_task("fine").correct(net, adv, te.y, te.fine))
    assert adv.min() >= 0 and adv.max() <= 1
    unboxed = pgd(
        net, te.x, te.y, te.fine, [0.3], "ce", PGDConfig(norm="linf", steps=10, restarts=1, step_size=0.2),
        gen("b"), None, task="fine",
    )[0]  # fmt: skip
    assert unboxed.min() < 0 or unboxed.max() > 1


@pytest.fixture(scope="module")
def clusters():
    cfg = ClusterDataConfig(d=30, k=4, n_train=10, n_test=30, sigma=1.0)
    data = make_cluster_data(cfg, 0)
    w0, b0 = init_two_layer(cfg.d, 2, TwoLayerConfig(m=4), 0)
    return TwoLayerFixed(w0, b0, torch.tensor([1.0, -1.0])), data  # binary heads (+, -)


def test_cluster_data_binary_default_unchanged(clusters):
    """The FA path: default context (binary task, no box) with pgd and universal."""
    net, data = clusters
    te = data.test
    specs = {
        "pgd_margin": {"kind": "pgd", "norm": "l2", "loss": "margin", "steps": 5, "restarts": 1},
        "universal": {"kind": "universal", "norm": "l2", "steps": 50},
    }
    ctx = AttackContext(data.means, data.sign)
    table, masks = evaluate_attacks(net, te.x, te.y, te.fine, [0.0, 2.0], specs, ctx, gen("fa"))
    with torch.no_grad():
        clean = te.y * net.binary_score(te.x) > 0
    for m in masks.values():
        assert torch.equal(m[0], clean) and (m[1] <= m[0]).all()
    assert set(table.attack) == {"pgd_margin", "universal", "worst"}


def test_autoattack_and_universal_refuse_the_wrong_data(clusters, toy_fine_net, toy_test):
    net, data = clusters
    te = data.test
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        evaluate_attacks(
            net, te.x, te.y, te.fine, [1.0], {"aa": AA_CE}, AttackContext(data.means, data.sign),
            gen("aa"),
        )  # fmt: skip
    with pytest.raises(ValueError, match="cluster"):
        correctness_over_radii(
            toy_fine_net, toy_test.x, toy_test.y, toy_test.fine, [0.5], {"kind": "universal"},
            AttackContext(task="fine", box=(0, 1)), gen("u"),
        )  # fmt: skip


def test_bad_spec_fails_before_any_attack_runs(clusters):
    net, data = clusters
    te = data.test
    calls = []
    specs = {"ok": {"kind": "pgd", "steps": 1, "restarts": 1}, "bad": {"kind": "pgd", "nrom": "l2"}}
    with pytest.raises(ValueError, match="nrom"):
        evaluate_attacks(
            net, te.x, te.y, te.fine, [1.0], specs, AttackContext(data.means, data.sign),
            gen("bad"), on_attack=calls.append,
        )  # fmt: skip
    assert calls == []
