"""Dataset registry: a ``datasets`` config entry + a seed -> the arrays of a dataset file.

Every kind returns arrays in the common layout of :mod:`ibrobust.data.dataset` plus a
JSON-able ``meta`` dict (class counts, checks, provenance). Kinds:

* ``clusters``: the synthetic orthogonal clusters of Study FA / PRELU (no files needed);
* ``image``: MNIST / CIFAR-10 / an ``.npz`` / an image folder under ``data_root``, with a
  binary split of its classes (:mod:`ibrobust.data.images`).

(The linear-teacher data of Study PRICE-LIN has its own draws-per-n layout:
:mod:`ibrobust.experiments.price_linear`.)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from ibrobust.data.clusters import config_from_dict, make_cluster_data

Maker = Callable[[dict, int, Path | None], tuple[dict[str, np.ndarray], dict]]


def _clusters(spec: dict, seed: int, data_root: Path | None) -> tuple[dict, dict]:
    cfg = config_from_dict(spec)
    data = make_cluster_data(cfg, seed)
    gram = data.means.double() @ data.means.double().T
    meta = {
        "train_class_counts": data.train.fine.bincount(minlength=cfg.k).tolist(),
        "test_class_counts": data.test.fine.bincount(minlength=cfg.k).tolist(),
        "train_positive_fraction": float((data.train.y > 0).float().mean()),
        # orthogonality check: max |<mu_i, mu_j> - norm^2 [i == j]|
        "max_abs_mean_inner": float((gram - cfg.norm**2 * torch.eye(cfg.k)).abs().max()),
    }
    return data.arrays(), meta


def _image(spec: dict, seed: int, data_root: Path | None) -> tuple[dict, dict]:
    from ibrobust.data import images  # torchvision / PIL only when images are used

    if data_root is None:
        raise ValueError("image datasets need a data_root (config key data_root)")
    fields = dict(spec)
    if fields.get("source") not in images.TORCHVISION_SOURCES:
        fields.pop("download", None)  # a torchvision-only setting (filled in by the schema)
    data = images.make_image_data(images.config_from_dict(fields), seed, data_root)
    counts = data.class_counts()
    meta = {
        "checksum": data.checksum,
        "location": str(data.location),
        "classes": data.classes.tolist(),
        "class_names": list(data.class_names),
        "train_class_counts": counts["train"].tolist(),
        "test_class_counts": counts["test"].tolist(),
        "train_positive_fraction": float((data.train.y > 0).mean()),
    }
    return data.arrays(), meta


MAKERS: dict[str, Maker] = {"clusters": _clusters, "image": _image}


def make_dataset(
    spec: dict, seed: int, data_root: str | Path | None = None
) -> tuple[dict[str, np.ndarray], dict]:
    """Arrays and meta of dataset ``spec`` for ``seed`` (deterministic)."""
    kind = spec.get("kind")
    if kind not in MAKERS:
        raise ValueError(f"unknown dataset kind {kind!r}; known: {sorted(MAKERS)}")
    root = None if data_root is None else Path(data_root).expanduser()
    return MAKERS[kind](spec, seed, root)
