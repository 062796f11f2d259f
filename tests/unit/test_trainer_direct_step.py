"""The network trainer's steepest-descent step from explicit gradients (issue 28, lead 4).

``train_network`` with ``algorithm="gd"`` now takes ``torch.autograd.grad`` of the loss and
``SteepestDescent.apply_gradients`` instead of ``zero_grad`` + ``backward`` + ``step``, and
reads the loss once. What it computes must not change: its iterates (every epoch's
weights) and its logged losses are bit-identical to the loop it replaced, copied below
(``_old_loop``), with and without robust ERM, for the FC net and a CNN, under every
steepest-descent geometry (the separable l2 / sign steps and the joint l1 one).
"""

from __future__ import annotations

import pytest
import torch

from ibrobust.models.fc import FCConfig, build_fc
from ibrobust.models.image import ImageModelConfig, build_image_model
from ibrobust.seeding import torch_generator
from ibrobust.training.adversarial import batch_perturbation
from ibrobust.training.losses import supervised_correct, supervised_loss
from ibrobust.training.network import NetTrainConfig, net_train_fields, train_network
from ibrobust.updates.steepest import SteepestDescent

torch.set_num_threads(1)
EPOCHS = 4


def _old_loop(net, x, y, fine, supervision, cfg: NetTrainConfig, seed: int):
    """The trainer's full-batch steepest descent before the change: per epoch the weights
    and the mean loss (zero_grad, backward, the Optimizer's step, then float(loss))."""
    net.train()
    opt = SteepestDescent(
        [p for p in net.parameters() if p.requires_grad], lr=cfg.lr, norm=cfg.norm,
        scale=cfg.scale,
    )  # fmt: skip
    perturb = batch_perturbation(cfg.adversarial, supervision, seed)
    weights, losses, accs = [], [], []
    for _ in range(cfg.max_epochs):
        xb = perturb(net, x, y, fine) if perturb is not None else x
        logits = net(xb)
        loss = supervised_loss(supervision, logits, net.readout, y, fine, cfg.loss)
        assert torch.isfinite(loss)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()) * len(x) / len(x))
        accs.append(
            int(supervised_correct(supervision, logits.detach(), net.readout, y, fine).sum())
        )
        weights.append({k: v.detach().clone() for k, v in net.state_dict().items()})
    return weights, losses, accs


def _data(arch: str, supervision: str, n: int = 24):
    g = torch_generator(0, "test_trainer_direct_step", "data")
    shape = (12,) if arch == "fc" else (1, 8, 8)
    x = torch.rand(n, *shape, generator=g)  # in [0, 1]: the robust-ERM box
    fine = torch.randint(0, 4, (n,), generator=g)
    sign = torch.tensor([1.0, -1.0, 1.0, -1.0])
    y = sign[fine]
    if supervision == "binary":
        readout = torch.ones(1) if arch == "fc" else torch.tensor([1.0, -1.0])
    else:
        readout = sign
    return x, y, fine, shape, readout


def _net(arch: str, shape, readout):
    gen = torch_generator(0, "test_trainer_direct_step", arch)
    if arch == "fc":
        return build_fc(FCConfig(width=16, init_scale=0.5), shape, readout, gen)
    cfg = ImageModelConfig(kind="cnn", channels=(3,), kernel=3, hidden=(8,),
                           channels_last=arch == "cnn_nhwc")  # fmt: skip
    return build_image_model(cfg, shape, readout, gen, train_x=torch.zeros(2, *shape))


GEOMETRIES = [  # (norm, scale, lr): GD, sign descent, coordinate descent (joint step)
    ("l2", "dual", 0.5),
    ("linf", "unit", 1e-2),
    ("l1", "dual", 0.5),
]


@pytest.mark.parametrize("arch", ["fc", "cnn", "cnn_nhwc"])
@pytest.mark.parametrize(("norm", "scale", "lr"), GEOMETRIES)
@pytest.mark.parametrize("eps", [0.0, 0.1])
@pytest.mark.parametrize("supervision", ["binary", "multiclass"])
def test_trainer_iterates_bit_identical_to_the_backward_step_loop(
    arch, norm, scale, lr, eps, supervision
):
    if arch == "fc" and supervision == "multiclass":
        pytest.skip("the FC net of Study PRICE-NN is a one-head binary net")
    x, y, fine, shape, readout = _data(arch, supervision)
    entry = {"kind": "gd", "lr": lr, "max_steps": EPOCHS, "norm": norm, "scale": scale,
             "log_every": 1, "n_checkpoints": EPOCHS,
             "loss": "exponential" if arch == "fc" else "auto",
             "adversarial": {"norm": "linf", "eps": eps, "steps": 3}}  # fmt: skip
    cfg = NetTrainConfig(**net_train_fields(entry))
    new_net = _net(arch, shape, readout)
    old_net = _net(arch, shape, readout)
    res = train_network(new_net, x, y, fine, supervision, cfg, 7, "cpu")
    weights, losses, accs = _old_loop(old_net, x, y, fine, supervision, cfg, 7)
    assert res.epochs == EPOCHS and sorted(res.checkpoints) == list(range(1, EPOCHS + 1))
    for epoch in range(1, EPOCHS + 1):
        for k, v in weights[epoch - 1].items():
            assert torch.equal(res.checkpoints[epoch][k], v), (epoch, k)
    assert [r["loss"] for r in res.history] == losses
    assert [r["acc"] * len(x) for r in res.history] == accs
    # the weights moved (else the comparison could not tell)
    assert any(not torch.equal(weights[0][k], weights[-1][k]) for k in weights[0])


@pytest.mark.parametrize(("norm", "scale"), [("l2", "dual"), ("l2", "unit"), ("linf", "unit"),
                                             ("linf", "dual"), ("l1", "dual"), ("l1", "unit")])  # fmt: skip
@pytest.mark.parametrize("adaptive", [False, True])
def test_apply_gradients_is_step_with_those_grads(norm, scale, adaptive):
    g = torch_generator(1, "apply")
    a = [torch.randn(3, 4, generator=g), torch.randn(5, generator=g), torch.randn(2, generator=g)]
    grads = [torch.randn(3, 4, generator=g), None, torch.randn(2, generator=g)]
    ps_step = [torch.nn.Parameter(t.clone()) for t in a]
    ps_apply = [torch.nn.Parameter(t.clone()) for t in a]
    kw = dict(lr=0.3, norm=norm, scale=scale, adaptive=adaptive, c=2.0, lr_max=5.0)
    opt_step = SteepestDescent([{"params": ps_step[:2]}, {"params": ps_step[2:], "lr": 0.1}], **kw)
    opt_apply = SteepestDescent(
        [{"params": ps_apply[:2]}, {"params": ps_apply[2:], "lr": 0.1}], **kw
    )
    for p, gr in zip(ps_step, grads, strict=True):
        p.grad = None if gr is None else gr.clone()
    opt_step.step(loss=0.7)
    opt_apply.apply_gradients(grads, loss=0.7)
    for p, q in zip(ps_step, ps_apply, strict=True):
        assert torch.equal(p.detach(), q.detach())
    assert not torch.equal(ps_apply[0].detach(), a[0]) and torch.equal(ps_apply[1].detach(), a[1])
    with pytest.raises(ValueError, match="3 gradients"):
        opt_apply.apply_gradients(grads[:2])
