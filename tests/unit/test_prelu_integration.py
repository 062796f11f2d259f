"""Study PRELU in the generic network machinery: the prelu model kind in the registry (build,
readout, save/load), its training paths (the fast loop and the generic one), the task each
supervision is judged on, attacks on a one-head net, the alpha noise of the cluster data and
the held-out test images of the image datasets."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from ibrobust import kinds
from ibrobust.attacks.suite import AttackContext, describe_attack, evaluate_attacks
from ibrobust.attacks.tasks import BinaryLogits
from ibrobust.data.clusters import ClusterDataConfig, make_cluster_data
from ibrobust.data.dataset import dataset_from_arrays
from ibrobust.data.images import ImageDataConfig, make_image_data
from ibrobust.models.prelu import PreluNet
from ibrobust.models.registry import BuildContext, build_model, load_model, model_readout
from ibrobust.stages.networks import fit
from ibrobust.studies import study_task
from ibrobust.training.prelu import PreluTrainConfig, prelu_train_fields, train_prelu

SIGN = torch.tensor([1.0, 1.0, 1.0, -1.0, -1.0])
SYN = {"kind": "prelu", "width": 12, "p": 3.0, "init": "normal", "init_std": 1e-3}
MNIST = {
    "kind": "prelu",
    "width": 16,
    "p": 2.0,
    "init": "kaiming",
    "normalize": "center",
    "normalize_input": True,
    "out_bias": True,
    "binary_heads": 2,
}


def clusters(seed=0, alpha=0.1, d=20, n_train=100, n_test=40):
    cfg = ClusterDataConfig(
        d=d, k=5, n_train=n_train, n_test=n_test, basis="standard", mean_norm=1.0,
        positive=(0, 1, 2), alpha=alpha,
    )  # fmt: skip
    return dataset_from_arrays(make_cluster_data(cfg, seed).arrays())


# ---------------------------------------------------------------- registry and readout


def test_readout_per_supervision_and_heads():
    assert model_readout(SYN, "binary", SIGN).tolist() == [1.0]  # official: output_dim 1
    assert model_readout(MNIST, "binary", SIGN).tolist() == [1.0, -1.0]  # two logits
    assert model_readout(SYN, "multiclass", SIGN).tolist() == SIGN.tolist()
    # other kinds keep the generic readout
    assert model_readout({"kind": "two_layer", "m": 2}, "binary", SIGN).tolist() == [1.0, -1.0]


@pytest.mark.parametrize("spec", [SYN, MNIST], ids=["synthetic", "mnist"])
@pytest.mark.parametrize("supervision", ["binary", "multiclass"])
def test_build_save_load_round_trip(spec, supervision):
    data = clusters()
    readout = model_readout(spec, supervision, data.sign)
    net = build_model(spec, BuildContext(data.input_shape, readout, 3, data.train.x))
    assert isinstance(net, PreluNet) and net.width == spec["width"] and net.p == spec["p"]
    assert net.heads == readout.numel()
    if spec.get("normalize") == "center":
        torch.testing.assert_close(net.center, data.train.x.mean(0))
    res = fit(spec, {"kind": "adam", "lr": 1e-2, "epochs": 2, "batch_size": 32}, data,
              supervision, seed=3)  # fmt: skip
    torch.save(res.state, buf := __import__("io").BytesIO())
    buf.seek(0)
    back = load_model(torch.load(buf, weights_only=True))
    assert isinstance(back, PreluNet) and not back.training
    x = data.test.x
    torch.testing.assert_close(back(x), load_model(res.state)(x))
    torch.testing.assert_close(back.binary_score(x), back(x) @ back.readout)
    assert back.normalize_input == spec.get("normalize_input", False)


def test_image_inputs_are_flattened():
    x = torch.rand(6, 1, 4, 4)
    net = build_model(MNIST, BuildContext((1, 4, 4), torch.tensor([1.0, -1.0]), 0, x))
    torch.testing.assert_close(net(x), net(x.flatten(1)))
    assert net.center.shape == (16,) and net.neurons().shape == (16, 16)


def test_neuron_signs_follow_the_second_layer():
    w = torch.eye(3)
    one = PreluNet(w, torch.tensor([[2.0, -1.0, 0.5]]), torch.tensor([1.0]), 2.0)
    assert one.neuron_signs().tolist() == [1.0, -1.0, 1.0]
    v = torch.tensor([[1.0, 0.0, 0.2], [0.0, 3.0, 0.1]])
    two = PreluNet(w, v, torch.tensor([1.0, -1.0]), 2.0)
    assert two.neuron_heads().tolist() == [0, 1, 0] and two.neuron_signs().tolist() == [1, -1, 1]


# ---------------------------------------------------------------- training paths


def test_trainer_paths():
    sgd = {"kind": "sgd", "lr": 0.2, "epochs": 3, "momentum": 0.0, "weight_decay": 0.0,
           "stop_loss": None, "n_checkpoints": 0}  # fmt: skip
    assert kinds.trainer(SYN, sgd) == "prelu"
    assert kinds.trainer(SYN, {**sgd, "kind": "adam"}) == "prelu"
    for extra in ({"momentum": 0.9}, {"weight_decay": 1e-3}, {"stop_loss": 1e-3}):
        assert kinds.trainer(SYN, {**sgd, **extra}) == "network"  # the fast loop has none
    assert kinds.trainer(SYN, {"kind": "gd", "norm": "linf", "scale": "unit"}) == "network"
    assert kinds.trainer({"kind": "two_layer"}, sgd) == "network"
    assert kinds.TRAINERS["prelu"] == "ibrobust.training.prelu"
    assert kinds.MODELS.module_name("prelu") == "ibrobust.models.prelu"


def test_train_fields_map_the_loss():
    opt = {"kind": "sgd", "lr": 0.2, "epochs": 5, "batch_size": 100, "loss": "exponential"}
    assert prelu_train_fields(opt, "binary")["loss"] == "exponential"
    assert prelu_train_fields({**opt, "loss": "auto"}, "binary")["loss"] == "logistic"
    assert prelu_train_fields({**opt, "loss": "auto"}, "multiclass")["loss"] == "cross_entropy"
    with pytest.raises(ValueError, match="exponential"):
        prelu_train_fields(opt, "multiclass")


def test_fast_loop_equals_the_official_loop_through_fit():
    data = clusters(n_train=60)
    opt = {"kind": "sgd", "lr": 0.2, "epochs": 3, "batch_size": 25, "loss": "exponential"}
    res = fit(SYN, opt, data, "binary", seed=1)
    net = build_model(SYN, BuildContext(data.input_shape, torch.ones(1), 1, data.train.x))
    ref = train_prelu(net, data.train.x, data.train.y,
                      PreluTrainConfig(lr=0.2, batch_size=25, epochs=3), seed=1)  # fmt: skip
    torch.testing.assert_close(load_model(res.state).weight, ref.model.weight)
    assert res.metrics["train.steps"] == 3 and list(res.history.epoch) == [1, 2, 3]


@pytest.mark.parametrize("heads", [1, 2])
def test_logistic_loss_of_the_fast_loop_equals_autograd(heads):
    """One SGD step of the logistic loss: the written-out backward pass equals autograd, and
    with two heads (+1, -1) it is the 2-way cross-entropy of the heads."""
    g = torch.Generator().manual_seed(0)
    w = torch.randn(4, 3, generator=g, dtype=torch.float64)
    v = torch.randn(heads, 4, generator=g, dtype=torch.float64)
    readout = torch.tensor([1.0, -1.0][:heads], dtype=torch.float64)
    x = torch.randn(8, 3, generator=g, dtype=torch.float64)
    y = torch.where(torch.arange(8) % 2 == 0, 1.0, -1.0).double()
    net = PreluNet(w, v, readout, 3.0)
    res = train_prelu(
        net, x, y, PreluTrainConfig(lr=0.1, batch_size=8, epochs=1, loss="logistic"), 0
    )
    ref = PreluNet(w, v, readout, 3.0)
    z = ref(x)
    loss = F.softplus(-y * (z @ ref.readout)).mean()
    if heads == 2:  # the same number as CE of the two logits against class (y < 0)
        torch.testing.assert_close(loss, F.cross_entropy(z, (y < 0).long()))
    loss.backward()
    torch.testing.assert_close(res.model.weight.detach(), w - 0.1 * ref.weight.grad)
    torch.testing.assert_close(res.model.out_weight.detach(), v - 0.1 * ref.out_weight.grad)


def test_generic_path_trains_a_prelu_net_by_sign_descent():
    data = clusters(alpha=0.05)
    spec = {**SYN, "init_std": 0.1}
    opt = {"kind": "gd", "lr": 0.01, "max_steps": 200, "norm": "linf", "scale": "unit",
           "loss": "exponential", "stop_loss": 1e-3, "log_every": 50, "n_checkpoints": 2}  # fmt: skip
    assert kinds.trainer(spec, opt) == "network"
    res = fit(spec, opt, data, "binary", seed=0)
    assert res.metrics["train.acc"] == 1.0 and res.metrics["test.binary_acc"] > 0.9
    assert isinstance(load_model(res.state), PreluNet)


# ---------------------------------------------------------------- tasks and attacks


def test_task_per_supervision():
    assert study_task("prelu", "binary") == "binary"
    assert study_task("prelu", "multiclass") == "fine"  # Table 1: the 10 digits
    assert study_task("feature_averaging", "multiclass") == "binary"  # binary readout
    assert study_task("feature_averaging_images", "multiclass") == "binary"


def _one_head_net():
    """f(x) = x_0^2 - x_1^2 on the positive quadrant (p = 2, unit neurons e_0 (+), e_1 (-))."""
    w = torch.eye(2)
    return PreluNet(w, torch.tensor([[1.0, -1.0]]), torch.tensor([1.0]), 2.0).eval()


def test_pgd_margin_on_a_one_head_net():
    net = _one_head_net()
    x = torch.tensor([[1.0, 0.3], [0.3, 1.0]])
    y = torch.tensor([1.0, -1.0])
    fine = torch.tensor([0, 1])
    spec = {"kind": "pgd", "norm": "l2", "loss": "margin", "steps": 30, "restarts": 2,
            "step_size": 0.1}  # fmt: skip
    table, _ = evaluate_attacks(
        net, x, y, fine, [0.0, 0.4, 0.6], {"pgd": spec}, AttackContext(task="binary"),
        torch.Generator().manual_seed(0),
    )  # fmt: skip
    acc = table[table.attack == "worst"].set_index("eps").robust_acc
    # the boundary x_0 = x_1 is at l2 distance 0.7 / sqrt(2) = 0.495 from both points
    assert acc[0.0] == 1.0 and acc[0.4] == 1.0 and acc[0.6] == 0.0


def test_binary_logits_of_a_one_head_net_give_the_logistic_loss():
    net = _one_head_net()
    x = torch.tensor([[1.0, 0.2], [0.3, 0.9]])
    y = torch.tensor([1.0, -1.0])
    z = BinaryLogits(net)(x)
    assert z.shape == (2, 2)
    ce = F.cross_entropy(z, (y > 0).long(), reduction="none")
    torch.testing.assert_close(ce, F.softplus(-y * net.binary_score(x)))


def test_autoattack_apgd_ce_on_a_one_head_image_net():
    x = torch.full((4, 1, 2, 2), 0.5)
    x[:2, 0, 0, 0], x[2:, 0, 0, 1] = 0.9, 0.9
    y = torch.tensor([1.0, 1.0, -1.0, -1.0])
    w = torch.zeros(2, 4)
    w[0, 0], w[1, 1] = 1.0, 1.0
    net = PreluNet(w, torch.tensor([[1.0, -1.0]]), torch.tensor([1.0]), 2.0,
                   center=torch.full((4,), 0.5)).eval()  # fmt: skip
    spec = {"kind": "autoattack", "norm": "linf", "version": "standard", "attacks": ["apgd-ce"],
            "n_iter": 10}  # fmt: skip
    ctx = AttackContext(task="binary", box=(0.0, 1.0))
    table, _ = evaluate_attacks(net, x, y, torch.tensor([0, 0, 1, 1]), [0.0, 0.1, 0.5],
                                {"aa": spec}, ctx, torch.Generator().manual_seed(0))  # fmt: skip
    acc = table[table.attack == "worst"].set_index("eps").robust_acc
    assert acc[0.0] == 1.0 and acc[0.1] == 1.0 and acc[0.5] == 0.0
    s = describe_attack(spec)
    assert s["version"] == "standard" and s["apgd-ce.n_restarts"] == 1
    assert describe_attack({**spec, "norm": "l1", "n_iter": None})["apgd-ce.use_largereps"]


# ---------------------------------------------------------------- data


def test_alpha_sets_the_noise_std():
    cfg = ClusterDataConfig(d=400, k=4, n_train=2000, n_test=10, basis="standard",
                            mean_norm=1.0, alpha=0.2)  # fmt: skip
    assert cfg.noise_std == pytest.approx(0.01)
    data = make_cluster_data(cfg, 0)
    # ||xi|| ~ alpha: the noise norm concentrates at alpha
    norms = data.train.noise.norm(dim=1)
    assert abs(float(norms.mean()) - 0.2) < 0.005
    assert ClusterDataConfig(sigma=0.5).noise_std == 0.5  # alpha null: sigma as before
    with pytest.raises(ValueError, match="alpha"):
        ClusterDataConfig(alpha=-1.0)


def test_holdout_takes_the_test_images_from_the_end_of_the_training_split(tmp_path):
    rng = np.random.default_rng(0)
    y_train = np.arange(30) % 3
    x_train = np.arange(30, dtype=np.uint8)[:, None, None] * np.ones((1, 2, 2), np.uint8)
    np.savez(tmp_path / "d.npz", x_train=x_train, y_train=y_train,
             x_test=rng.integers(0, 255, (6, 2, 2), dtype=np.uint8), y_test=np.arange(6) % 3)  # fmt: skip
    cfg = ImageDataConfig(source="npz", path="d.npz", split="explicit", positive=(0,),
                          negative=(1, 2), holdout=9)  # fmt: skip
    d = make_image_data(cfg, 0, tmp_path)
    assert d.train.index.tolist() == list(range(21)) and d.test.index.tolist() == list(
        range(21, 30)
    )
    # pixels identify the source row: the test images are training rows 21..29
    assert d.test.x[:, 0, 0, 0].tolist() == list(range(21, 30))
    assert d.train.x[:, 0, 0, 0].tolist() == list(range(21))
    sub = make_image_data(
        ImageDataConfig(**{**cfg.__dict__, "n_train": 6, "n_test": 3}), 1, tmp_path
    )
    assert set(sub.train.index) <= set(range(21)) and set(sub.test.index) <= set(range(21, 30))
    with pytest.raises(ValueError, match="holdout=30"):
        make_image_data(ImageDataConfig(**{**cfg.__dict__, "holdout": 30}), 0, tmp_path)
    with pytest.raises(ValueError, match="holdout"):
        ImageDataConfig(source="npz", path="d.npz", holdout=0)
    assert d.test.y.tolist() == [1.0, -1.0, -1.0] * 3  # class 0 positive
