"""The one in-memory form every network study trains and attacks on.

A dataset file (``results/datasets/<name>/seed<s>/data.npz``) holds, whatever its kind,
``train_x``, ``train_y``, ``train_fine``, ``test_x``, ``test_y``, ``test_fine`` and ``sign``
(k,): x are inputs (float for synthetic data, uint8 images (n, C, H, W) for real ones), y
the binary label in {-1, +1} (= sign[fine]), fine the class in [0, k). Kind-specific extras
(cluster means and noises for the lambda decomposition, image provenance indices) ride
along and are exposed in :attr:`Dataset.extras`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

REQUIRED = ("train_x", "train_y", "train_fine", "test_x", "test_y", "test_fine", "sign")


@dataclass
class Split:
    x: torch.Tensor  # (n, *input_shape) float32; images in [0, 1]
    y: torch.Tensor  # (n,) float32 in {-1, +1}
    fine: torch.Tensor  # (n,) int64 in [0, k)

    def __len__(self) -> int:
        return self.x.shape[0]

    def head(self, n: int | None) -> Split:
        """The first ``n`` points (all when ``n`` is None)."""
        sl = slice(None) if n is None else slice(0, n)
        return Split(self.x[sl], self.y[sl], self.fine[sl])

    def to(self, device: torch.device | str) -> Split:
        """The split on ``device`` (the same tensors when they are there already)."""
        return Split(self.x.to(device), self.y.to(device), self.fine.to(device))


@dataclass
class Dataset:
    train: Split
    test: Split
    sign: torch.Tensor  # (k,) +-1 binary label of each fine class
    box: tuple[float, float] | None = None  # valid input range (images: (0, 1))
    extras: dict[str, torch.Tensor] = field(default_factory=dict)

    @property
    def k(self) -> int:
        return self.sign.numel()

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self.train.x.shape[1:])

    @property
    def means(self) -> torch.Tensor | None:
        """(k, d) exact class means of synthetic cluster data (None for images)."""
        return self.extras.get("means")


def dataset_from_arrays(arrays: dict[str, np.ndarray], source: str = "<arrays>") -> Dataset:
    """Typed dataset from the arrays of a dataset file; uint8 inputs become floats in [0, 1]."""
    missing = [k for k in REQUIRED if k not in arrays]
    if missing:
        raise ValueError(f"{source}: not a dataset file, missing arrays {missing}")
    images = arrays["train_x"].dtype == np.uint8

    def split(name: str) -> Split:
        x = torch.from_numpy(np.asarray(arrays[f"{name}_x"]))
        x = x.float() / 255.0 if images else x.float()
        y = torch.from_numpy(np.asarray(arrays[f"{name}_y"])).float()
        fine = torch.from_numpy(np.asarray(arrays[f"{name}_fine"])).long()
        if not len(x) == len(y) == len(fine):
            raise ValueError(
                f"{source}: {name} arrays disagree in length: x {len(x)}, y {len(y)}, fine {len(fine)}"
            )
        return Split(x, y, fine)

    sign = torch.from_numpy(np.asarray(arrays["sign"])).float()
    extras = {
        k: torch.from_numpy(np.asarray(v))
        for k, v in arrays.items()
        if k not in REQUIRED and np.asarray(v).dtype.kind in "biuf"
    }
    return Dataset(split("train"), split("test"), sign, (0.0, 1.0) if images else None, extras)
