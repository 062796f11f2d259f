"""Real image data for Study FA-IMAGES: a source, a binary split of its classes, subsets.

Sources (``ImageDataConfig.source``):

* ``mnist``: ``torchvision.datasets.MNIST(root=data_root)``, i.e. the four uncompressed
  IDX files in ``<data_root>/MNIST/raw/``; we check them first (:mod:`ibrobust.data.idx`).
  With ``download`` torchvision fetches missing files; present files are never re-fetched.
* ``cifar10``: ``torchvision.datasets.CIFAR10(root=data_root)``, i.e. the python batches
  in ``<data_root>/cifar-10-batches-py/`` (torchvision checks their md5 sums).
* ``npz``: one file with ``x_train``, ``y_train``, ``x_test``, ``y_test``: uint8 images
  (N, H, W) or (N, H, W, C) with C in {1, 3}, integer labels (N,); optional ``class_names``.
* ``imagefolder``: ``<path>/train/<class>/*`` and ``<path>/test/<class>/*`` with the
  class order of ``torchvision.datasets.ImageFolder`` (sorted class folder names); rows
  interleave the classes (:func:`round_robin`: file i of every class, then file i + 1),
  so that the subsets and their prefixes are class-mixed. Only the file list is read up
  front; the images of the chosen subset alone are decoded.

Splits (``split``) of the source's classes into J+ (y = +1) and J- (y = -1):

* ``parity``: all classes; even class ids are +1, odd ids -1 (Study FA-IMAGES's "even
  vs odd", docs/studies/fa_images.md: MNIST digits 0, 2, 4, 6, 8 -> +1).
* ``halves``: all classes; the first half of the class ids is +1 (CIFAR-10: airplane,
  automobile, bird, cat, deer), like J+ = the first k/2 clusters of the synthetic data.
* ``explicit``: only the classes in ``positive`` (+1) and ``negative`` (-1) are kept.

Test images (``holdout``): null takes them from the source's test split; N > 0 holds out
the *last* N images of the source's training split as the test set and draws the training
subset from the images before them (Min & Vidal's MNIST protocol: train = MNIST training
images 0..49999, test = 50000..59999; ``holdout: 10000``). Stored indices are always rows
of the source's own split (for held-out test images, rows of its training split).

The kept classes, sorted by id, are the fine classes: ``fine`` = position in that list,
in [0, k), and ``y = sign[fine]``. Subsets are stratified: class c of a split gets its
largest-remainder share of n (:func:`stratified_counts`) and those images are the first
n_c of a permutation of the class's images drawn from ``numpy_generator(seed, "images",
<split>, c)``. The subset therefore depends only on the seed, the source's labels, the
kept classes and n (not on the other split's size, nor on the +1/-1 assignment), and
raising a class's count n_c only adds images of that class. Indices are stored sorted,
as rows of the source split.

Pixels stay uint8 (C, H, W) through :class:`ImageData` and the ``.npz`` file;
:func:`from_arrays` gives float32 tensors in the box [0, 1] (x / 255) for training and
attacks. No source ever falls back to random data: a missing file is a
``FileNotFoundError``, a malformed one a ``ValueError``, each naming the path.

The code is split by concept: :mod:`ibrobust.data.image_config` (the config),
:mod:`ibrobust.data.image_sources` (reading a source), :mod:`ibrobust.data.image_subsets`
(the seed's stratified subsets); this module re-exports them and holds the tensors and the
``image`` dataset kind (:data:`ibrobust.kinds.DATASETS`; ``images.schema.yaml``):
:func:`make_dataset` and :func:`check` of a config entry. It imports without torch (the
config validation calls :func:`check` while the Snakefile parses).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ibrobust.data.image_config import (
    KNOWN_CHANNELS,
    KNOWN_NUM_CLASSES,
    MNIST_FILES,
    NPZ_KEYS,
    SOURCES,
    SPLITS,
    TORCHVISION_SOURCES,
    ImageDataConfig,
    config_from_dict,
    resolve_path,
)
from ibrobust.data.image_sources import (
    RawImages,
    RawSplit,
    decode_images,
    load_source,
    round_robin,
)
from ibrobust.data.image_subsets import (
    ImageData,
    ImageSplit,
    arrays_checksum,
    make_image_data,
    stratified_counts,
    stratified_subset,
    subset_images,
    with_holdout,
)

__all__ = [
    "KNOWN_CHANNELS",
    "KNOWN_NUM_CLASSES",
    "MNIST_FILES",
    "NPZ_KEYS",
    "SOURCES",
    "SPLITS",
    "TORCHVISION_SOURCES",
    "ImageData",
    "ImageDataConfig",
    "ImageSplit",
    "ImageTensorSplit",
    "ImageTensors",
    "RawImages",
    "RawSplit",
    "arrays_checksum",
    "config_from_dict",
    "decode_images",
    "from_arrays",
    "load_source",
    "make_dataset",
    "make_image_data",
    "resolve_path",
    "round_robin",
    "stratified_counts",
    "stratified_subset",
    "subset_images",
    "with_holdout",
]

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class ImageTensorSplit:
    x: torch.Tensor  # (n, C, H, W) float32 in [0, 1]
    fine: torch.Tensor  # (n,) int64 in [0, k)
    y: torch.Tensor  # (n,) float32 in {-1, +1}
    label: torch.Tensor  # (n,) int64 original class id
    index: torch.Tensor  # (n,) int64 row in the source split


@dataclass(frozen=True)
class ImageTensors:
    classes: torch.Tensor  # (k,) int64 original class ids
    class_names: tuple[str, ...]  # (k,)
    sign: torch.Tensor  # (k,) float32
    train: ImageTensorSplit
    test: ImageTensorSplit = field(repr=False)
    box: tuple[float, float] = (0.0, 1.0)  # input range: attacks project onto it

    @property
    def k(self) -> int:
        return len(self.classes)

    @property
    def input_shape(self) -> tuple[int, int, int]:
        return tuple(self.train.x.shape[1:])  # (C, H, W)


def from_arrays(arrays: Mapping[str, np.ndarray]) -> ImageTensors:
    """Inverse of :meth:`ImageData.arrays`: float32 images x / 255 in [0, 1] and the labels
    as tensors, after checking keys, dtypes, lengths and y = sign[fine], label = classes[fine]."""
    import torch

    keys = ["sign", "classes"] + [
        f"{s}_{k}" for s in ("train", "test") for k in ("x", "fine", "y", "label", "index")
    ]
    missing = [k for k in keys if k not in arrays]
    if missing:
        raise ValueError(f"image arrays lack key(s) {missing}")
    a = {k: np.asarray(arrays[k]) for k in keys}
    sign, classes = a["sign"], a["classes"]
    k = len(classes)
    if sign.shape != (k,) or classes.ndim != 1:
        raise ValueError(f"'sign' has shape {sign.shape}, 'classes' {classes.shape}; expected (k,)")
    names = arrays.get("class_names")
    names = tuple(str(s) for s in names) if names is not None else tuple(map(str, classes))
    splits = {}
    for s in ("train", "test"):
        x = a[f"{s}_x"]
        if x.dtype != np.uint8 or x.ndim != 4:
            raise ValueError(f"'{s}_x' is {x.dtype} {x.shape}, expected uint8 (n, C, H, W)")
        n = len(x)
        for key in ("fine", "y", "label", "index"):
            if a[f"{s}_{key}"].shape != (n,):
                raise ValueError(f"'{s}_{key}' has shape {a[f'{s}_{key}'].shape}, expected ({n},)")
            if key != "y" and a[f"{s}_{key}"].dtype.kind not in "iu":
                raise ValueError(
                    f"'{s}_{key}' has dtype {a[f'{s}_{key}'].dtype}, expected integers"
                )
        fine = a[f"{s}_fine"]
        if n and (fine.min() < 0 or fine.max() >= k):
            raise ValueError(f"'{s}_fine' has values outside [0, {k})")
        if not np.array_equal(a[f"{s}_y"], sign[fine]):
            raise ValueError(f"'{s}_y' differs from sign[{s}_fine]")
        if not np.array_equal(a[f"{s}_label"], classes[fine]):
            raise ValueError(f"'{s}_label' differs from classes[{s}_fine]")
        splits[s] = ImageTensorSplit(
            x=torch.from_numpy(x).float().div_(255.0),
            fine=torch.from_numpy(fine.astype(np.int64)),
            y=torch.from_numpy(a[f"{s}_y"].astype(np.float32)),
            label=torch.from_numpy(a[f"{s}_label"].astype(np.int64)),
            index=torch.from_numpy(a[f"{s}_index"].astype(np.int64)),
        )
    if splits["train"].x.shape[1:] != splits["test"].x.shape[1:]:
        raise ValueError(
            f"'train_x' images are {tuple(splits['train'].x.shape[1:])}, "
            f"'test_x' {tuple(splits['test'].x.shape[1:])}"
        )
    return ImageTensors(
        classes=torch.from_numpy(classes.astype(np.int64)),
        class_names=names,
        sign=torch.from_numpy(sign.astype(np.float32)),
        train=splits["train"],
        test=splits["test"],
    )


def entry_config(spec: Mapping) -> ImageDataConfig:
    """The typed config of a ``datasets`` entry (``download`` is torchvision-only: the
    workflow's schema fills it in for every source)."""
    entry = dict(spec)
    if entry.get("source") not in TORCHVISION_SOURCES:
        entry.pop("download", None)
    return config_from_dict(entry)


def check(entry: Mapping, where: str) -> None:
    """A ``datasets`` entry's values as :class:`ImageDataConfig` checks them (a path for npz
    and imagefolder only, an explicit split's classes, subset sizes, ...): a SettingError
    naming the setting (the registry adds ``where``, the entry's key path). Reads no file."""
    entry_config(entry)


def preflight(entries: Mapping[str, Mapping], data_root: str | os.PathLike) -> list[str]:
    """The kind's data preflight (capability ``reads_data_root``): the problems of the
    entries' files under ``data_root``, one line each (headers, not pixels;
    :func:`ibrobust.data.preflight.check_image_sources`)."""
    from ibrobust.data.preflight import check_image_sources

    return check_image_sources(entries, data_root)


def make_dataset(
    spec: Mapping, seed: int, data_root: str | os.PathLike | None
) -> tuple[dict[str, np.ndarray], dict]:
    """The ``image`` kind of :mod:`ibrobust.data.registry`: arrays and meta of one subset."""
    if data_root is None:
        raise ValueError("image datasets need a data_root (config key data_root)")
    data = make_image_data(entry_config(spec), seed, data_root)
    counts = data.class_counts()
    meta = {
        "checksum": data.checksum,
        "location": str(data.location),
        "classes": data.classes.tolist(),
        "class_names": list(data.class_names),
        "train_class_counts": counts["train"].tolist(),
        "test_class_counts": counts["test"].tolist(),
        "train_positive_fraction": float((data.train.y > 0).mean()),
        "test_source": "test" if data.config.holdout is None else f"train[-{data.config.holdout}:]",
    }
    return data.arrays(), meta
