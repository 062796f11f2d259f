"""Study MARGIN end to end as library calls (the workflow's margin rules and
``benchmarks/check_margin.py`` both use these): the data of a run, its homogeneous net,
the per-point robustness of a checkpoint, the robust-accuracy curves, the checkpoint table
and the numbers the study reports (separation, monotonicity of the smoothed margin, the
attack-versus-bounds cross-check).

Robustness of a point x (the seeds' R(x): distance to the nearest misclassified point).
Per checkpoint and split: FAB's minimal l2 and l_inf distances (data in the [0, 1] box),
the l2 PGD-bisection upper bound on the first ``bisection_points`` (on every attacked
point when the data has no box: FAB does not apply there) and, for the homogeneous CNN,
the certified lower bound q / beta. The distance a robust accuracy is read from is the
smallest upper bound found (the worst case over the attacks).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch
from torch import nn

from ibrobust.analysis.margin import eval_logits, margins, param_norm, require_homogeneous
from ibrobust.attacks.minimal_norm import (
    BisectionConfig,
    FABConfig,
    fab_distances,
    pgd_bisection,
)
from ibrobust.device import resolve_device
from ibrobust.models.registry import BuildContext, build_model, model_readout
from ibrobust.progress import Progress, ticker
from ibrobust.seeding import torch_generator
from ibrobust.training.margin import Checkpoint, MarginTrainConfig, config_from_dict

NORMS = ("l2", "linf")
DEFAULT_RADII = {
    "l2": (0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 4.0),
    "linf": (0.0, 0.025, 0.05, 0.075, 0.1, 0.125, 0.15, 0.2, 0.3),
}


@dataclass(frozen=True)
class MarginRobustConfig:
    attack_points: int = 100  # per split, the first N points
    bisection_points: int = 20  # of them, the PGD-bisection cross-check sample
    fab_iter: int = 100
    radii: dict = field(default_factory=lambda: {k: list(v) for k, v in DEFAULT_RADII.items()})

    def __post_init__(self) -> None:
        if not 0 <= self.bisection_points <= self.attack_points:
            raise ValueError(
                f"bisection_points must be in [0, attack_points={self.attack_points}], "
                f"got {self.bisection_points!r}"
            )


@dataclass
class RunData:
    x: torch.Tensor  # (n, *s) float64 train inputs
    y: torch.Tensor  # (n,) int64 classes
    x_test: torch.Tensor
    y_test: torch.Tensor
    sign: torch.Tensor  # (k,) +-1 of the fine classes
    boxed: bool  # inputs in [0, 1] (images): FAB and the l_inf curves apply


def run_data(arrays: dict[str, np.ndarray], supervision: str) -> RunData:
    """Tensors of a generic dataset file (``results/datasets/<d>/seed<s>/data.npz``): uint8
    images scaled to [0, 1], float features as they are; classes = the fine labels
    (multiclass) or the +-1 labels as classes 0 (+1) and 1 (-1) (binary)."""

    def x_of(a: np.ndarray) -> torch.Tensor:
        t = torch.from_numpy(np.asarray(a))
        return t.double() / 255.0 if a.dtype == np.uint8 else t.double()

    def y_of(split: str) -> torch.Tensor:
        if supervision == "multiclass":
            return torch.from_numpy(np.asarray(arrays[f"{split}_fine"])).long()
        return (torch.from_numpy(np.asarray(arrays[f"{split}_y"])) < 0).long()

    return RunData(
        x_of(arrays["train_x"]),
        y_of("train"),
        x_of(arrays["test_x"]),
        y_of("test"),
        torch.from_numpy(np.asarray(arrays["sign"])).double(),
        arrays["train_x"].dtype == np.uint8,
    )


def build_net(
    spec: dict, data: RunData, supervision: str, seed: int, dtype: torch.dtype = torch.float64
) -> nn.Module:
    """The freshly initialised net of a models entry in ``dtype`` (the training config's;
    float64 for the robustness job, which loads any run's checkpoints into float64 nets);
    ValueError naming ``model`` when it is not homogeneous. float32 gets the float64 net's
    values rounded (exactly them for homogeneous_cnn, whose init is drawn in float32).
    ``channels_last`` applies to float32 nets only: NHWC is about 2.5x faster per float32
    pass but 0.85x in float64 (benchmarks/bench_cnn_layout.py), and the layout never changes the
    function."""
    if dtype != torch.float32 and spec.get("channels_last"):
        spec = {**spec, "channels_last": False}
    readout = model_readout(spec, supervision, data.sign)
    ctx = BuildContext(tuple(data.x.shape[1:]), readout, int(seed), data.x.float())
    net = build_model(spec, ctx).double().to(dtype)
    require_homogeneous(net, "model")
    return net


def train_config(training: dict, n: int) -> MarginTrainConfig:
    """The trainer's config from a study's ``training`` block; batch_size null = full batch
    (the n training points every step)."""
    tr = dict(training)
    if tr.get("batch_size") is None:
        tr["batch_size"] = int(n)
    return config_from_dict(tr)


def checkpoint_rows(checkpoints: list[Checkpoint]) -> pd.DataFrame:
    """name, epoch, log10_train_loss, threshold of each checkpoint (NaN threshold: final)."""
    return pd.DataFrame(
        [
            dict(
                name=c.name,
                epoch=c.epoch,
                log10_train_loss=c.log10_loss,
                threshold=math.nan if c.threshold is None else c.threshold,
            )
            for c in checkpoints
        ]  # fmt: skip
    )


def load_checkpoints(saved: dict, spec: dict, data: RunData, supervision: str, seed: int):
    """name -> net of each checkpoint of a ``checkpoints.pt`` (as written by margin_train)."""
    nets = {}
    for name, ck in saved.items():
        net = build_net(spec, data, supervision, seed)
        net.load_state_dict(ck["state_dict"])
        nets[name] = net.eval()
    return nets


def _certified(net: nn.Module, x: torch.Tensor, y: torch.Tensor) -> dict[str, np.ndarray]:
    from ibrobust.analysis.lipschitz import certified_radius
    from ibrobust.models.homogeneous_cnn import HomogeneousCNN

    if not isinstance(net, HomogeneousCNN):  # no Lipschitz bound implemented: NaN
        nan = np.full(len(x), math.nan)
        return {"certified_l2": nan, "certified_l2_pairwise": nan}
    cert = certified_radius(net, x, y)
    return {
        "certified_l2": cert.radius.cpu().numpy(),
        "certified_l2_pairwise": cert.radius_pairwise.cpu().numpy(),
    }


def point_robustness(
    net: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    boxed: bool,
    cfg: MarginRobustConfig,
    gen,
    tick: Callable[[], None] | None = None,
) -> pd.DataFrame:
    """One row per point of (x, y) (the caller's first ``attack_points``): margin q, q / rho^L,
    FAB l2 / l_inf distances (NaN without a box), PGD-bisection upper bound (NaN outside the
    cross-check sample), certificates and ``distance_<norm>`` = the smallest upper bound.
    ``tick()`` (progress): between the attacks' batches."""
    net = net.eval()
    seed = int(torch.randint(0, 2**31 - 1, (1,), generator=gen))
    q = margins(eval_logits(net, x), y)
    rho_l = param_norm(net) ** require_homogeneous(net, "model")
    nan = torch.full((len(x),), math.nan, dtype=torch.float64, device=x.device)
    fab = {n: nan.clone() for n in NORMS}
    if boxed:
        for norm in NORMS:
            fab_cfg = FABConfig(norm=norm, n_iter=cfg.fab_iter)
            fab[norm] = fab_distances(net, x, y, fab_cfg, seed, tick)
    nb = cfg.bisection_points if boxed else len(x)
    pgd = nan.clone()
    if nb:
        box = (0.0, 1.0) if boxed else None
        pgd[:nb] = pgd_bisection(net, x[:nb], y[:nb], BisectionConfig(), gen, box, tick)
    df = pd.DataFrame(
        {
            "index": np.arange(len(x)),
            "margin": q.cpu().numpy(),
            "normalized_margin": (q / rho_l).cpu().numpy(),
            "fab_l2": fab["l2"].cpu().numpy(),
            "fab_linf": fab["linf"].cpu().numpy(),
            "pgd_l2_upper": pgd.cpu().numpy(),
            **_certified(net, x, y),
        }
    )
    df["distance_l2"] = df[["fab_l2", "pgd_l2_upper"]].min(axis=1, skipna=True)
    df["distance_linf"] = df["fab_linf"]
    return df


def checkpoint_robustness(
    nets: dict[str, nn.Module],
    data: RunData,
    cfg: MarginRobustConfig,
    seed: int,
    progress: Progress | None = None,
    device: torch.device | str | None = "cpu",
) -> pd.DataFrame:
    """:func:`point_robustness` of every checkpoint on the first ``attack_points`` train and
    test points, stacked with ``checkpoint`` and ``split`` columns. A checkpoint whose
    parameters equal an earlier one's (``final`` when training stopped at the epoch of the
    last threshold's checkpoint) is the same net: it gets that checkpoint's rows, not a
    second attack. ``progress``: one unit per attacked (checkpoint, split), ticks between
    the attacks' batches. ``device`` (the config key, :func:`ibrobust.device.resolve_device`):
    each net and the points move there once; the random draws stay on the CPU generators."""
    dev = resolve_device(device)
    n = cfg.attack_points
    splits = {
        "train": (data.x[:n].to(dev), data.y[:n].to(dev)),
        "test": (data.x_test[:n].to(dev), data.y_test[:n].to(dev)),
    }
    same = first_with_same_parameters(nets)  # compared before any net moves
    progress = progress or Progress()
    progress.expect(len(splits) * sum(v is None for v in same.values()))
    frames, attacked = [], {}  # attacked: name -> {split: rows}, the distinct nets only
    for name, net in nets.items():
        if same[name] is None:
            net.to(dev)
            attacked[name] = {}
            for split, (xs, ys) in splits.items():
                progress.begin(f"checkpoint {name} {split}")
                gen = torch_generator(seed, "margin", "robustness", name, split)
                attacked[name][split] = point_robustness(
                    net, xs, ys, data.boxed, cfg, gen, ticker(progress)
                )
                progress.advance()
        rows = attacked[same[name] or name]
        frames += [df.assign(checkpoint=name, split=split) for split, df in rows.items()]
    return pd.concat(frames, ignore_index=True)


def first_with_same_parameters(nets: dict[str, nn.Module]) -> dict[str, str | None]:
    """name -> the earliest other net with the same parameters (None: the first of its kind)."""
    same: dict[str, str | None] = {}
    for name, net in nets.items():
        firsts = [k for k, v in same.items() if v is None]
        same[name] = next((k for k in firsts if same_parameters(nets[k], net)), None)
    return same


def same_parameters(a: nn.Module, b: nn.Module) -> bool:
    """Whether two nets hold equal parameters and buffers (the same function)."""
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)
