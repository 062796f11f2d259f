"""The training paths' one call signature (ibrobust.training.protocol): every path of
ibrobust.kinds.TRAINERS that trains returns history rows named epoch / loss / acc, one
full-batch step is one epoch, and the loss names are the shared ones."""

from __future__ import annotations

import math

import pytest
import torch

from ibrobust import kinds
from ibrobust.data.clusters import ClusterDataConfig, make_cluster_data
from ibrobust.data.dataset import dataset_from_arrays
from ibrobust.models.registry import BuildContext, build_model, model_readout
from ibrobust.stages.networks import fit
from ibrobust.training import full_batch, prelu
from ibrobust.training.losses import TRAINING_LOSSES, supervised_loss, training_loss
from ibrobust.training.protocol import HISTORY_KEYS, check_history


def _data():
    cfg = ClusterDataConfig(
        d=12, k=4, n_train=16, n_test=8, basis="standard", mean_norm=1.0, positive=(0, 1)
    )
    return dataset_from_arrays(make_cluster_data(cfg, 0).arrays())


GD = {"kind": "gd", "lr": 0.3, "max_steps": 4, "stop_loss": 1e-12, "log_every": 1}
SGD = {"kind": "sgd", "lr": 0.1, "epochs": 3, "batch_size": 8, "loss": "exponential"}
PATHS = [
    ("gram_gd", {"kind": "two_layer", "m": 2}, GD),
    ("prelu", {"kind": "prelu", "width": 8, "p": 2.0, "init_scale": 0.1}, SGD),
]


@pytest.mark.parametrize(("path", "model", "opt"), PATHS)
def test_fit_path_returns_epoch_rows(path, model, opt):
    assert kinds.trainer(model, opt) == path
    data = _data()
    net = build_model(model, BuildContext((12,), model_readout(model, "binary", data.sign), 0))
    trainer = kinds.load_trainer(path)
    seen = []
    fitted = trainer.fit_path(net, data, "binary", opt, 0, on_log=seen.append)
    assert fitted.history == seen and check_history(fitted.history) == seen
    assert [r["epoch"] for r in seen][-1] == fitted.epochs
    assert set(fitted.state) == set(net.state_dict())
    # what fit saves is the same history, with the shared columns first
    res = fit(model, opt, data, "binary", 0)
    assert list(res.history.columns[:3]) == list(HISTORY_KEYS)


def test_full_batch_steps_are_epochs():
    data = _data()
    model = PATHS[0][1]
    net = build_model(model, BuildContext((12,), model_readout(model, "binary", data.sign), 0))
    fitted = full_batch.fit_path(net, data, "binary", GD, 0)
    assert [r["epoch"] for r in fitted.history] == [0, 1, 2, 3, 4] and fitted.epochs == 4
    assert sorted(fitted.checkpoints)[0] == 0 and 4 in fitted.checkpoints


def test_check_history_names_the_missing_key():
    with pytest.raises(ValueError, match=r"row 1 lacks \['epoch'\]"):
        check_history([{"epoch": 0, "loss": 1.0, "acc": 0.5}, {"step": 1, "loss": 1, "acc": 1}])


def test_one_set_of_loss_names():
    assert TRAINING_LOSSES == ("logistic", "exponential", "cross_entropy")
    assert training_loss("binary") == "logistic"
    assert training_loss("binary", "exponential") == "exponential"
    assert training_loss("multiclass") == "cross_entropy"
    with pytest.raises(ValueError, match="not 'exponential'"):
        training_loss("multiclass", "exponential")
    assert prelu.LOSSES == TRAINING_LOSSES
    assert prelu.prelu_train_fields(SGD, "binary")["loss"] == "exponential"
    # hand-computed: margins y f = (1, -1): exponential mean (e^-1 + e^1) / 2
    heads, readout = torch.tensor([[1.0, 0.0], [0.0, 1.0]]), torch.tensor([1.0, -1.0])
    y, fine = torch.tensor([1.0, 1.0]), torch.tensor([0, 1])
    got = supervised_loss("binary", heads, readout, y, fine, "exponential")
    assert float(got) == pytest.approx((math.exp(-1) + math.exp(1)) / 2, rel=1e-6)
