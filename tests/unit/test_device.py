"""The config key ``device`` (ibrobust.device) in every job that computes: on a machine
without CUDA, ``device: auto`` gives byte-identical outputs to ``device: cpu`` (training on
each training path, the attack job's evaluation, a MARGIN epoch and its robustness job), and
the planning-time reading of the key (the ``gpu`` resource) decides without importing torch."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import torch

import ibrobust.device as device_mod
from ibrobust.data.clusters import ClusterDataConfig, make_cluster_data
from ibrobust.data.dataset import dataset_from_arrays
from ibrobust.device import cuda_build_problem, planned_cuda, resolve_device
from ibrobust.models.homogeneous_cnn import HomogeneousCNNConfig, build_homogeneous_cnn
from ibrobust.seeding import torch_generator
from ibrobust.stages.networks import fit
from ibrobust.stages.robustness import evaluate_robustness
from ibrobust.studies.margin import experiment
from ibrobust.training.flow import FlowConfig, train_flow
from ibrobust.training.margin import MarginTrainConfig, train_margin

torch.set_num_threads(1)
NO_CUDA = pytest.mark.skipif(torch.cuda.is_available(), reason="auto is CUDA here, not the CPU")


def _data():
    cfg = ClusterDataConfig(d=12, k=4, n_train=16, n_test=12, sigma=0.5)
    return dataset_from_arrays(make_cluster_data(cfg, 0).arrays())


def _state_bytes(state: dict) -> dict:
    """Every tensor of a saved state as raw bytes (the other entries as they are)."""
    out = {}
    for k, v in state.items():
        if isinstance(v, dict):
            out[k] = _state_bytes(v)
        elif isinstance(v, torch.Tensor):
            out[k] = (v.device.type, v.dtype, tuple(v.shape), v.numpy().tobytes())
        else:
            out[k] = v
    return out


def _fit_outputs(model, opt, data, dev):
    res = fit(model, opt, data, "multiclass" if model["kind"] == "mlp" else "binary", 0, device=dev)
    hist = res.history.drop(columns=[c for c in ("seconds",) if c in res.history])
    return _state_bytes(res.state), hist.to_csv(), json.dumps(res.metrics)


TRAIN_PATHS = [  # one per training path: network (Adam, minibatches), gram_gd, prelu
    ({"kind": "mlp", "hidden": [8]}, {"kind": "adam", "lr": 0.05, "epochs": 2, "batch_size": 8}),
    ({"kind": "two_layer", "m": 2}, {"kind": "gd", "lr": 0.3, "max_steps": 3, "log_every": 1}),
    (
        {"kind": "prelu", "width": 8, "p": 2.0, "init_scale": 0.1},
        {"kind": "sgd", "lr": 0.1, "epochs": 2, "batch_size": 8, "loss": "exponential"},
    ),
]


@NO_CUDA
@pytest.mark.parametrize(("model", "opt"), TRAIN_PATHS, ids=["network", "gram_gd", "prelu"])
def test_auto_trains_byte_identically_to_cpu_without_cuda(model, opt):
    data = _data()
    auto, cpu = (_fit_outputs(model, opt, data, dev) for dev in ("auto", "cpu"))
    assert auto == cpu
    assert _devices(auto[0]) == {"cpu"}  # every saved tensor comes from the CPU


def _devices(state: dict) -> set[str]:
    out = set()
    for v in state.values():
        if isinstance(v, dict):
            out |= _devices(v)
        elif isinstance(v, tuple):
            out.add(v[0])
    return out


@NO_CUDA
def test_auto_attacks_byte_identically_to_cpu_without_cuda():
    """The attack job's evaluation (PGD with restarts and the universal direction, which
    reads the cluster means), under two readouts: the tables and summaries as written."""
    data = _data()
    state = fit(*TRAIN_PATHS[0], data, "multiclass", 0, device="cpu").state
    specs = {
        "pgd": {"kind": "pgd", "loss": "ce", "norm": "l2", "steps": 3, "restarts": 2},
        "universal": {"kind": "universal"},
    }

    def run(dev):
        out = evaluate_robustness(state, data, specs, [0.0, 0.5, 2.0], 12, "binary",
                                  ["sum", "argmax"], torch_generator(0, "attack"), device=dev)  # fmt: skip
        return {ro: (t.to_csv(), json.dumps(s)) for ro, (t, s) in out.items()}

    assert run("auto") == run("cpu")


@NO_CUDA
def test_auto_runs_margin_training_and_robustness_byte_identically_to_cpu_without_cuda():
    """A loss-based epoch, two constant-step (flow) steps and the robustness rows."""
    g = torch.Generator().manual_seed(0)
    x = torch.rand(6, 1, 8, 8, generator=g, dtype=torch.float64)
    y = torch.tensor([0, 1, 2, 0, 1, 2])
    tiny = HomogeneousCNNConfig(channels=(2, 2), kernels=(3, 3), hidden=4)
    cfg = MarginTrainConfig(epochs=1, batch_size=3)
    rob = experiment.MarginRobustConfig(attack_points=3, bisection_points=2, fab_iter=2)

    def run(dev):
        net = build_homogeneous_cnn((1, 8, 8), 3, tiny, seed=0, dtype=torch.float64)
        res = train_margin(net, x, y, cfg, seed=0, device=dev)
        assert next(net.parameters()).device.type == "cpu"  # the net ends on the CPU
        hist = pd.DataFrame(res.history).drop(columns=["seconds"]).to_csv()
        cks = [(c.name, c.epoch, _state_bytes(c.state_dict)) for c in res.checkpoints]
        flow_net = build_homogeneous_cnn((1, 8, 8), 3, tiny, seed=0, dtype=torch.float64)
        flow = train_flow(flow_net, x, y, FlowConfig(lr=0.5, epochs=2, log_every=1), device=dev)
        hist += pd.DataFrame(flow.history).drop(columns=["seconds"]).to_csv()
        cks += [(c.name, c.epoch, _state_bytes(c.state_dict)) for c in flow.checkpoints]
        data = experiment.RunData(x, y, x, y, torch.ones(3), True)
        pts = experiment.checkpoint_robustness({"final": net}, data, rob, 0, device=dev)
        return hist, cks, pts.to_csv()

    assert run("auto") == run("cpu")


# ---- the key itself: resolved in the job, read at planning time, checked at validation ----
def test_cuda_without_cuda_is_an_error_naming_the_key(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="config key device: 'cuda'"):
        resolve_device("cuda")
    assert resolve_device("auto") == torch.device("cpu")


def test_planning_reads_the_key_without_torch(monkeypatch):
    """cuda -> a GPU job, cpu -> never; auto -> a CUDA build of torch and a device node, not
    hidden by CUDA_VISIBLE_DEVICES."""
    monkeypatch.setattr(device_mod, "torch_cuda_version", lambda: "12.4")
    monkeypatch.setattr(device_mod.glob, "glob", lambda pattern: ["/dev/nvidia0"])
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert planned_cuda("cuda") and planned_cuda("auto") and not planned_cuda("cpu")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert not planned_cuda("auto") and planned_cuda("cuda")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert planned_cuda("auto")
    monkeypatch.setattr(device_mod.glob, "glob", lambda pattern: [])  # no device node
    assert not planned_cuda("auto")
    monkeypatch.setattr(device_mod, "torch_cuda_version", lambda: None)  # a CPU-only torch
    monkeypatch.setattr(device_mod.glob, "glob", lambda pattern: ["/dev/nvidia0"])
    assert not planned_cuda("auto")


def test_torch_cuda_version_is_read_without_importing_torch():
    """The text of torch/version.py gives what torch.version.cuda says."""
    assert device_mod.torch_cuda_version() == torch.version.cuda


def test_validation_refuses_cuda_on_a_torch_without_cuda(monkeypatch):
    """device: cuda can never run on a CPU-only build of torch: a ConfigError at validation,
    naming the key; auto and cpu pass (the job falls back or stays on the CPU)."""
    import yaml

    from ibrobust.config import ConfigError, load_schema, validate_config

    repo = Path(__file__).resolve().parents[2]
    schema = load_schema(repo / "schemas" / "config.schema.yaml")
    base = yaml.safe_load((repo / "config.yaml").read_text())
    monkeypatch.setattr(device_mod, "torch_cuda_version", lambda: None)
    assert cuda_build_problem("auto") is None and cuda_build_problem("cpu") is None
    with pytest.raises(ConfigError, match="device: 'cuda'.*built without CUDA"):
        validate_config({**base, "device": "cuda"}, schema)
    assert validate_config({**base, "device": "cpu"}, schema)["device"] == "cpu"
