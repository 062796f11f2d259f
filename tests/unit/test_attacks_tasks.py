"""Tasks (binary / fine correctness, the two-logit wrapper), the fine margin loss and the
attack mode (eval + frozen parameters, restored)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from ibrobust.attacks.losses import fine_margin, get_attack_loss
from ibrobust.attacks.mode import attack_mode
from ibrobust.attacks.tasks import TASKS, BinaryLogits, BinaryTask, FineTask, get_task
from ibrobust.seeding import torch_generator

torch.set_num_threads(1)


class FixedHeads(nn.Module):
    """Logits = x @ W (rows of x are one-hot: logits are W's rows), readout +-1."""

    def __init__(self, w: torch.Tensor, readout: torch.Tensor):
        super().__init__()
        self.w = nn.Parameter(w.clone())  # (d, H)
        self.register_buffer("readout", readout.clone())

    def forward(self, x):
        return x.flatten(1) @ self.w

    def binary_score(self, x):
        return self(x) @ self.readout


def hand_model():
    # readout (+, +, -, -); logits per one-hot input row
    logits = torch.tensor(
        [
            [0.40, 0.35, 0.50, 0.00],  # argmax 2 (a J- class), s = +0.25
            [1.00, -0.90, 0.20, 0.20],  # argmax 0, s = -0.30
            [0.90, 0.10, 0.00, 0.00],  # argmax 0, s = +1.00
            [0.00, 0.00, 0.30, 0.10],  # argmax 2, s = -0.40
        ]
    )
    return FixedHeads(logits, torch.tensor([1.0, 1.0, -1.0, -1.0])), torch.eye(4)


def test_binary_and_fine_tasks_differ_on_hand_model():
    net, x = hand_model()
    fine = torch.tensor([0, 0, 0, 2])
    y = torch.tensor([1.0, 1.0, 1.0, -1.0])
    with torch.no_grad():
        binary = get_task("binary").correct(net, x, y, fine)
        fine_ok = get_task("fine").correct(net, x, y, fine)
    assert binary.tolist() == [True, False, True, True]
    assert fine_ok.tolist() == [False, True, True, True]


def test_task_registry_and_labels():
    assert isinstance(get_task("binary"), BinaryTask) and isinstance(get_task("fine"), FineTask)
    assert get_task(TASKS["fine"]) is TASKS["fine"]
    for bad in ("multiclass", None):
        with pytest.raises(ValueError, match="unknown task"):
            get_task(bad)
    y = torch.tensor([1.0, -1.0, -1.0])
    fine = torch.tensor([3, 7, 1])
    assert get_task("binary").labels(y, fine).tolist() == [1, 0, 0]
    assert get_task("binary").labels(y, fine).dtype == torch.int64
    assert get_task("fine").labels(y, fine).tolist() == [3, 7, 1]
    net, _ = hand_model()
    assert get_task("fine").logits(net) is net


def test_binary_logits_cross_entropy_is_logistic_loss_of_margin():
    net, _ = hand_model()
    g = torch_generator(0, "tasks", "wrapper")
    x = torch.randn(50, 4, generator=g)
    y = torch.where(torch.rand(50, generator=g) < 0.5, -1.0, 1.0)
    task = get_task("binary")
    with torch.no_grad():
        z = task.logits(net)(x)
        s = net.binary_score(x)
    assert isinstance(task.logits(net), BinaryLogits) and z.shape == (50, 2)
    torch.testing.assert_close(z, torch.stack((-s / 2, s / 2), 1))
    ce = F.cross_entropy(z, task.labels(y, None), reduction="none")
    torch.testing.assert_close(ce, F.softplus(-y * s))
    # argmax of the wrapper is the sign of the score, so it agrees with the binary rule
    agree = (z.argmax(1) == task.labels(y, None)) == task.correct(net, x, y, None)
    assert agree.all()


def test_fine_margin_hand_case():
    net, x = hand_model()
    fine = torch.tensor([0, 0, 1, 3])
    got = fine_margin(net, x, torch.ones(4), fine)
    # max over the other classes minus the true class
    torch.testing.assert_close(
        got, torch.tensor([0.50 - 0.40, 0.20 - 1.00, 0.90 - 0.10, 0.30 - 0.10])
    )
    assert get_attack_loss("fine_margin") is fine_margin
    # positive exactly where the fine task is wrong (no ties here)
    with torch.no_grad():
        wrong = ~get_task("fine").correct(net, x, torch.ones(4), fine)
    assert ((got > 0) == wrong).all()


def test_attack_mode_restores_modes_and_grads_also_on_error():
    net = nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.5), nn.Linear(4, 2))
    net.train()
    net[1].eval()  # mixed modes must come back as they were
    net[2].weight.requires_grad_(False)
    with pytest.raises(RuntimeError, match="boom"):
        with attack_mode(net):
            assert not any(m.training for m in net.modules())
            assert not any(p.requires_grad for p in net.parameters())
            raise RuntimeError("boom")
    assert [m.training for m in net.modules()] == [True, True, False, True]
    assert [p.requires_grad for p in net.parameters()] == [True, True, False, True]
