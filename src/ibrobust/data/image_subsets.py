"""Stratified subsets of an image source (:mod:`ibrobust.data.images`): the kept classes,
the seed's train and test images, their content checksum."""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ibrobust.data.image_config import ImageDataConfig
from ibrobust.data.image_sources import RawImages, load_source
from ibrobust.seeding import numpy_generator


def stratified_counts(class_sizes: Sequence[int], n: int) -> np.ndarray:
    """(k,) int64 per-class counts summing to ``n``, proportional to ``class_sizes``.

    Largest-remainder (Hamilton) rounding of the quotas n * N_c / N, in exact integer
    arithmetic: every class gets floor(quota), and the leftover units go to the largest
    remainders, ties to the lower class position. Equal sizes and k | n give n / k each;
    no class gets more than it has."""
    sizes = [int(s) for s in class_sizes]
    total = sum(sizes)
    if any(s < 0 for s in sizes) or total == 0:
        raise ValueError(f"class sizes must be >= 0 with a positive sum, got {sizes}")
    if not 0 <= n <= total:
        raise ValueError(f"n must be in [0, {total}] (the class sizes' sum), got {n}")
    counts = [n * s // total for s in sizes]
    remainders = [n * s % total for s in sizes]  # quota - floor, times total
    leftover = n - sum(counts)
    for c in sorted(range(len(sizes)), key=lambda c: (-remainders[c], c))[:leftover]:
        counts[c] += 1
    return np.array(counts, dtype=np.int64)


def stratified_subset(
    labels: np.ndarray, classes: Sequence[int], n: int | None, seed: int, stream: str
) -> np.ndarray:
    """Sorted (n,) int64 indices into ``labels`` (N,): class c of ``classes`` contributes
    its :func:`stratified_counts` share, the first n_c of a permutation of its indices
    drawn from ``numpy_generator(seed, "images", stream, c)``. ``n=None`` takes all."""
    pools = [np.flatnonzero(labels == c) for c in classes]  # (N_c,) each, ascending
    if n is None:
        return np.sort(np.concatenate(pools)).astype(np.int64)
    counts = stratified_counts([len(p) for p in pools], n)
    chosen = [
        pool[numpy_generator(seed, "images", stream, int(c)).permutation(len(pool))[:m]]
        for c, pool, m in zip(classes, pools, counts, strict=True)
    ]
    return np.sort(np.concatenate(chosen)).astype(np.int64)


@dataclass(frozen=True)
class ImageSplit:
    x: np.ndarray  # (n, C, H, W) uint8
    fine: np.ndarray  # (n,) int64 in [0, k): position of the class in ImageData.classes
    y: np.ndarray  # (n,) float32 in {-1, +1}, = sign[fine]
    label: np.ndarray  # (n,) int64 original class id, = classes[fine]
    index: np.ndarray  # (n,) int64 row of the image in the source split (provenance)


@dataclass(frozen=True)
class ImageData:
    config: ImageDataConfig
    seed: int
    location: str  # the directory or file read
    classes: np.ndarray  # (k,) int64 kept original class ids, ascending
    class_names: tuple[str, ...]  # (k,) their names
    sign: np.ndarray  # (k,) float32 +1 for J+, -1 for J-
    train: ImageSplit
    test: ImageSplit = field(repr=False)

    def arrays(self) -> dict[str, np.ndarray]:
        """Flat arrays for an ``.npz`` file (see :func:`from_arrays`)."""
        out = {
            "sign": self.sign,
            "classes": self.classes,
            "class_names": np.array(self.class_names, dtype=str),  # (k,) unicode, no pickle
        }
        for name, split in (("train", self.train), ("test", self.test)):
            for key in ("x", "fine", "y", "label", "index"):
                out[f"{name}_{key}"] = getattr(split, key)
        return out

    @property
    def checksum(self) -> str:
        """sha256 of :meth:`arrays` (pixels, labels, indices, classes): see :func:`arrays_checksum`."""
        return arrays_checksum(self.arrays())

    def class_counts(self) -> dict[str, np.ndarray]:
        """{"train": (k,), "test": (k,)} images per kept class."""
        k = len(self.classes)
        return {
            "train": np.bincount(self.train.fine, minlength=k),
            "test": np.bincount(self.test.fine, minlength=k),
        }


def arrays_checksum(arrays: Mapping[str, np.ndarray]) -> str:
    """sha256 hex digest over every array's key, dtype, shape and bytes, in key order.

    A content hash of the prepared data (the same on any machine and for any copy of
    the source), recomputable from the ``.npz`` file alone. Source files are not hashed:
    an imagefolder has 60,000 files, and what matters downstream is what was chosen."""
    h = hashlib.sha256()
    for key in sorted(arrays):
        a = np.ascontiguousarray(arrays[key])
        h.update(f"{key}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def with_holdout(raw: RawImages, holdout: int | None) -> RawImages:
    """``raw`` whose test split is the last ``holdout`` training images and whose training
    split is the images before them (``raw`` itself for None)."""
    if holdout is None:
        return raw
    n = len(raw.train)
    if not 0 < holdout < n:
        raise ValueError(
            f"{raw.location}: holdout={holdout} must leave training images; the training "
            f"split has {n}"
        )
    return dataclasses.replace(
        raw, train=raw.train.rows(0, n - holdout), test=raw.train.rows(n - holdout, n)
    )


def subset_images(cfg: ImageDataConfig, raw: RawImages, seed: int) -> ImageData:
    """Keep the classes of ``cfg.split``, draw the stratified train and test subsets for
    ``seed`` (the test images held out of the training split when ``cfg.holdout`` is set)
    and copy (or, for files, decode) their images; the same inputs give the same arrays."""
    raw = with_holdout(raw, cfg.holdout)
    classes, sign = cfg.split_classes(raw.num_classes)
    splits = {}
    reference = None
    for name, src in (("train", raw.train), ("test", raw.test)):
        n = getattr(cfg, f"n_{name}")
        sizes = np.array([np.count_nonzero(src.labels == c) for c in classes])
        if (sizes == 0).any():
            empty = [f"{c} ({raw.class_names[c]})" for c in classes[sizes == 0]]
            raise ValueError(f"{raw.location}: no {name} images of kept class(es) {empty}")
        if n is not None and n > sizes.sum():
            raise ValueError(
                f"n_{name}={n} exceeds the {sizes.sum()} {name} images of the kept classes "
                f"{classes.tolist()} in {raw.location}"
            )
        if n is not None and n < len(classes):
            raise ValueError(f"n_{name}={n} is below the {len(classes)} kept classes")
        index = stratified_subset(src.labels, classes, n, seed, name)  # (n,)
        x = src.take(index, reference)  # (n, C, H, W)
        if src.files is not None and len(index):
            reference = (src.files[index[0]], x.shape[2:])  # test images must match train
        label = src.labels[index]
        fine = np.searchsorted(classes, label).astype(np.int64)
        splits[name] = ImageSplit(
            x=x, fine=fine, y=sign[fine], label=label, index=index + src.offset
        )
    if splits["train"].x.shape[1:] != splits["test"].x.shape[1:]:
        raise ValueError(
            f"{raw.location}: train images are (C, H, W) = {splits['train'].x.shape[1:]}, "
            f"test images {splits['test'].x.shape[1:]}"
        )
    return ImageData(
        config=cfg,
        seed=seed,
        location=raw.location,
        classes=classes,
        class_names=tuple(raw.class_names[c] for c in classes),
        sign=sign,
        train=splits["train"],
        test=splits["test"],
    )


def make_image_data(cfg: ImageDataConfig, seed: int, data_root: str | os.PathLike) -> ImageData:
    """Load ``cfg.source`` under ``data_root`` and draw the subsets for ``seed``."""
    return subset_images(cfg, load_source(cfg, data_root), seed)
