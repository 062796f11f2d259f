"""Synthetic cluster data of the feature-averaging paper (Li, Pan, Lyu, Li, ICLR 2025).

k mutually orthogonal cluster means mu_j with ||mu_j|| = mean_norm (default sqrt(d));
x = mu_j + xi with xi ~ N(0, sigma^2 I_d), cluster j uniform; the binary label is +1
for j in J+ (the first k/2 clusters unless ``positive`` says otherwise) and -1 else.
Min & Vidal (ICML 2024) use unit-norm standard-basis means and give the noise as
alpha / sqrt(d) per coordinate: set ``alpha`` and it replaces sigma.
The fine label j, the binary label y and the noise xi are kept with every point: the
lambda decomposition needs xi for the training points.

The dataset kind ``clusters`` (:data:`ibrobust.kinds.DATASETS`; ``clusters.schema.yaml``):
:func:`make_dataset`, and :func:`check` of a config entry. The module imports without
torch (the config validation calls :func:`check` while the Snakefile parses).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ibrobust.errors import SettingError

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class ClusterDataConfig:
    d: int = 1000
    k: int = 10
    n_train: int = 1000
    n_test: int = 2000
    sigma: float = 1.0
    basis: str = "random"  # "random" orthonormal basis or "standard" basis vectors
    mean_norm: float | None = None  # None -> sqrt(d), the paper's choice
    positive: tuple[int, ...] | None = None  # J+ (any 1..k-1 clusters); None -> first k/2
    # Min & Vidal's noise level: std alpha / sqrt(d) per coordinate (E||xi|| ~ alpha); when
    # set it replaces sigma
    alpha: float | None = None

    def __post_init__(self) -> None:
        if self.d < 1:
            raise SettingError("d", f"d must be >= 1, got {self.d}")
        if self.k < 2 or self.k > self.d:
            raise SettingError("k", f"k must satisfy 2 <= k <= d={self.d}, got {self.k}")
        if self.basis not in ("random", "standard"):
            raise SettingError("basis", f"basis must be 'random' or 'standard', got {self.basis!r}")
        if not (math.isfinite(self.sigma) and self.sigma >= 0):  # NaN noise: an all-NaN set
            raise SettingError("sigma", f"sigma must be finite and >= 0, got {self.sigma}")
        if self.mean_norm is not None and not (
            math.isfinite(self.mean_norm) and self.mean_norm > 0
        ):
            raise SettingError(
                "mean_norm", f"mean_norm must be finite and > 0, got {self.mean_norm}"
            )
        if self.alpha is not None and not (math.isfinite(self.alpha) and self.alpha >= 0):
            raise SettingError("alpha", f"alpha must be finite and >= 0, got {self.alpha}")
        if self.n_train < 1 or self.n_test < 1:
            raise SettingError(
                "n_train", f"n_train and n_test must be >= 1, got {self.n_train}, {self.n_test}"
            )
        pos = self.positive_clusters
        if (
            not 1 <= len(pos) < self.k
            or len(set(pos)) != len(pos)
            or not all(0 <= j < self.k for j in pos)
        ):
            raise SettingError(
                "positive",
                f"positive must list 1 to k-1={self.k - 1} distinct clusters in [0, {self.k}), "
                f"got {pos}",
            )

    @property
    def positive_clusters(self) -> tuple[int, ...]:
        if self.positive is None:
            if self.k % 2:
                raise SettingError("k", f"k must be even for a balanced split, got {self.k}")
            return tuple(range(self.k // 2))
        return tuple(int(j) for j in self.positive)

    @property
    def noise_std(self) -> float:
        """Noise standard deviation per coordinate: alpha / sqrt(d) when alpha is set, else sigma."""
        return self.sigma if self.alpha is None else float(self.alpha) / math.sqrt(self.d)

    @property
    def norm(self) -> float:
        return math.sqrt(self.d) if self.mean_norm is None else float(self.mean_norm)


def config_from_dict(d: dict) -> ClusterDataConfig:
    """Typed config from a workflow dict (the ``kind`` key is dropped; lists become tuples)."""
    fields = {k: v for k, v in d.items() if k != "kind"}
    if fields.get("positive") is not None:
        fields["positive"] = tuple(fields["positive"])
    return ClusterDataConfig(**fields)


def check(entry: dict, where: str) -> None:
    """A ``datasets`` entry's values as :class:`ClusterDataConfig` checks them (k <= d, a
    balanced split needs an even k, ``positive`` within [0, k), ...): a SettingError naming
    the setting (the registry adds ``where``, the entry's key path)."""
    config_from_dict(entry).positive_clusters  # noqa: B018  (raises for an odd k)


@dataclass
class ClusterSplit:
    x: torch.Tensor  # (n, d) inputs
    fine: torch.Tensor  # (n,) cluster index j in [0, k)
    y: torch.Tensor  # (n,) binary label in {-1, +1} (float)
    noise: torch.Tensor  # (n, d) xi, with x = mu[fine] + xi


@dataclass
class ClusterData:
    config: ClusterDataConfig
    means: torch.Tensor  # (k, d) mu_j, mutually orthogonal with norm config.norm
    sign: torch.Tensor  # (k,) +1 for j in J+, -1 for j in J-
    train: ClusterSplit
    test: ClusterSplit = field(repr=False)

    def arrays(self) -> dict[str, np.ndarray]:
        """Flat arrays for an ``.npz`` file (see :func:`from_arrays`)."""
        out = {"means": self.means, "sign": self.sign}
        for name, split in (("train", self.train), ("test", self.test)):
            for key in ("x", "fine", "y", "noise"):
                out[f"{name}_{key}"] = getattr(split, key)
        return {k: v.numpy() for k, v in out.items()}


def cluster_means(cfg: ClusterDataConfig, gen: torch.Generator) -> torch.Tensor:
    """(k, d) orthogonal means of norm ``cfg.norm``."""
    import torch

    if cfg.basis == "standard":
        basis = torch.eye(cfg.d, dtype=torch.float64)[: cfg.k]
    else:
        g = torch.randn(cfg.d, cfg.k, generator=gen, dtype=torch.float64)
        q, r = torch.linalg.qr(g)  # (d, k) orthonormal columns
        q = q * torch.sign(torch.diagonal(r))  # unique QR: Haar-distributed basis
        basis = q.T
    return (basis * cfg.norm).to(torch.float32)


def _sample(
    cfg: ClusterDataConfig, means: torch.Tensor, sign: torch.Tensor, n: int, gen: torch.Generator
) -> ClusterSplit:
    import torch

    fine = torch.randint(cfg.k, (n,), generator=gen)
    noise = cfg.noise_std * torch.randn(n, cfg.d, generator=gen)
    x = means[fine] + noise
    return ClusterSplit(x=x, fine=fine, y=sign[fine].clone(), noise=noise)


def make_cluster_data(cfg: ClusterDataConfig, seed: int) -> ClusterData:
    """Draw means, train and test split for ``seed`` (independent generator streams)."""
    import torch

    from ibrobust.seeding import torch_generator

    means = cluster_means(cfg, torch_generator(seed, "clusters", "means"))
    sign = -torch.ones(cfg.k)
    sign[list(cfg.positive_clusters)] = 1.0
    train = _sample(cfg, means, sign, cfg.n_train, torch_generator(seed, "clusters", "train"))
    test = _sample(cfg, means, sign, cfg.n_test, torch_generator(seed, "clusters", "test"))
    return ClusterData(cfg, means, sign, train, test)


def from_arrays(cfg: ClusterDataConfig, arrays: dict[str, np.ndarray]) -> ClusterData:
    """Inverse of :meth:`ClusterData.arrays` (checks the shapes against ``cfg``)."""
    import torch

    t = {k: torch.from_numpy(np.asarray(v)) for k, v in arrays.items()}
    if tuple(t["means"].shape) != (cfg.k, cfg.d):
        raise ValueError(
            f"means have shape {tuple(t['means'].shape)}, config says ({cfg.k}, {cfg.d})"
        )
    splits = {
        name: ClusterSplit(*(t[f"{name}_{key}"] for key in ("x", "fine", "y", "noise")))
        for name in ("train", "test")
    }
    return ClusterData(cfg, t["means"], t["sign"], splits["train"], splits["test"])


def make_dataset(spec: dict, seed: int, data_root=None) -> tuple[dict[str, np.ndarray], dict]:
    """The ``clusters`` kind of :mod:`ibrobust.data.registry`: arrays and meta of one draw."""
    import torch

    cfg = config_from_dict(spec)
    data = make_cluster_data(cfg, seed)
    gram = data.means.double() @ data.means.double().T
    meta = {
        "train_class_counts": data.train.fine.bincount(minlength=cfg.k).tolist(),
        "test_class_counts": data.test.fine.bincount(minlength=cfg.k).tolist(),
        "train_positive_fraction": float((data.train.y > 0).float().mean()),
        # orthogonality check: max |<mu_i, mu_j> - norm^2 [i == j]|
        "max_abs_mean_inner": float((gram - cfg.norm**2 * torch.eye(cfg.k)).abs().max()),
        "noise_std": cfg.noise_std,
    }
    return data.arrays(), meta
