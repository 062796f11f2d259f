"""Config of an image dataset (:mod:`ibrobust.data.images`): its source, the binary split
of the source's classes and the subset sizes, checked when built."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from ibrobust.errors import SettingError

SOURCES = ("mnist", "cifar10", "npz", "imagefolder")
SPLITS = ("parity", "halves", "explicit")
TORCHVISION_SOURCES = ("mnist", "cifar10")
# classes and channels of the fixed-format sources, known before any file is read
KNOWN_NUM_CLASSES = {"mnist": 10, "cifar10": 10}
KNOWN_CHANNELS = {"mnist": 1, "cifar10": 3}
MNIST_FILES = {  # split -> (images, labels) in <data_root>/MNIST/raw/
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}
NPZ_KEYS = ("x_train", "y_train", "x_test", "y_test")


# ---------------------------------------------------------------------------- config


@dataclass(frozen=True)
class ImageDataConfig:
    source: str  # one of SOURCES
    path: str | None = None  # npz file / imagefolder directory; relative -> under data_root
    download: bool = False  # torchvision sources only: fetch missing files into data_root
    split: str = "parity"  # one of SPLITS
    positive: tuple[int, ...] | None = None  # explicit split: class ids labelled +1
    negative: tuple[int, ...] | None = None  # explicit split: class ids labelled -1
    n_train: int | None = None  # stratified subset size; None = every image of the kept classes
    n_test: int | None = None
    # imagefolder: 1 -> decode as "L", 3 (or None) -> "RGB" like ImageFolder's default
    # loader; other sources keep their own channels and only check a value given here
    channels: int | None = None
    # test images = the last ``holdout`` images of the source's training split (None: its test split)
    holdout: int | None = None

    def __post_init__(self) -> None:
        self._check_source()
        self._check_split()
        self._check_sizes()

    def _check_source(self) -> None:
        if self.source not in SOURCES:
            raise SettingError("source", f"source must be one of {SOURCES}, got {self.source!r}")
        if self.source in TORCHVISION_SOURCES:
            if self.path is not None:
                raise SettingError(
                    "path",
                    f"path must be null for source {self.source!r} (torchvision's layout under "
                    f"data_root), got {self.path!r}",
                )
        elif not isinstance(self.path, str | os.PathLike) or not str(self.path):
            raise SettingError(
                "path", f"path is required for source {self.source!r}, got {self.path!r}"
            )
        if not isinstance(self.download, bool):
            raise SettingError("download", f"download must be true or false, got {self.download!r}")
        if self.download and self.source not in TORCHVISION_SOURCES:
            raise SettingError(
                "download",
                f"download: true applies to torchvision sources {TORCHVISION_SOURCES} only, "
                f"not source {self.source!r}",
            )

    def _check_split(self) -> None:
        if self.split not in SPLITS:
            raise SettingError("split", f"split must be one of {SPLITS}, got {self.split!r}")
        if self.split == "explicit":
            pos, neg = self._class_ids("positive"), self._class_ids("negative")
            if set(pos) & set(neg):  # the later list names the offending key
                raise SettingError(
                    "negative",
                    f"negative {neg} and positive {pos} share class(es) "
                    f"{sorted(set(pos) & set(neg))}: a class is in both",
                )
        else:
            for name in ("positive", "negative"):
                if getattr(self, name) is not None:
                    raise SettingError(
                        name,
                        f"{name} is only for split 'explicit'; split {self.split!r} fixes the "
                        f"classes itself, got {name}={getattr(self, name)!r}",
                    )
        known = KNOWN_NUM_CLASSES.get(self.source)
        if known is not None and self.split == "explicit":
            for name in ("positive", "negative"):
                bad = [c for c in getattr(self, name) if c >= known]
                if bad:
                    raise SettingError(
                        name,
                        f"{name} has class id(s) {bad} outside [0, {known}) of source {self.source!r}",
                    )

    def _check_sizes(self) -> None:
        k = self.num_kept_classes
        for name in ("n_train", "n_test"):
            n = getattr(self, name)
            if n is None:
                continue
            if not isinstance(n, int | np.integer) or isinstance(n, bool) or n < 1:
                raise SettingError(name, f"{name} must be a positive integer or null, got {n!r}")
            if k is not None and n < k:
                raise SettingError(
                    name, f"{name}={n} is below the {k} kept classes; need one per class"
                )
        if self.holdout is not None and (
            not isinstance(self.holdout, int | np.integer)
            or isinstance(self.holdout, bool)
            or self.holdout < 1
        ):
            raise SettingError(
                "holdout", f"holdout must be a positive integer or null, got {self.holdout!r}"
            )
        if self.channels not in (None, 1, 3):
            raise SettingError("channels", f"channels must be 1, 3 or null, got {self.channels!r}")
        fixed = KNOWN_CHANNELS.get(self.source)
        if self.channels is not None and fixed is not None and self.channels != fixed:
            raise SettingError(
                "channels",
                f"channels={self.channels} but source {self.source!r} has {fixed} channel(s)",
            )

    def _class_ids(self, name: str) -> tuple[int, ...]:
        ids = getattr(self, name)
        if not isinstance(ids, tuple | list) or len(ids) == 0:
            raise SettingError(
                name,
                f"{name} must be given: split 'explicit' needs a non-empty {name} list, got {ids!r}",
            )
        if not all(isinstance(c, int | np.integer) and not isinstance(c, bool) for c in ids):
            raise SettingError(name, f"{name} must list integer class ids, got {ids!r}")
        if any(c < 0 for c in ids) or len(set(ids)) != len(ids):
            raise SettingError(
                name, f"{name} must list distinct non-negative class ids, got {ids!r}"
            )
        return tuple(int(c) for c in ids)

    @property
    def num_kept_classes(self) -> int | None:
        """k, when it is known without reading the source."""
        if self.split == "explicit":
            return len(self.positive) + len(self.negative)
        return KNOWN_NUM_CLASSES.get(self.source)

    def split_classes(self, num_classes: int) -> tuple[np.ndarray, np.ndarray]:
        """(classes (k,) int64 sorted kept class ids, sign (k,) float32 +1 on J+, -1 on J-)
        for a source with ``num_classes`` classes."""
        if self.split == "parity":
            classes = np.arange(num_classes, dtype=np.int64)
            positive = classes[classes % 2 == 0]
        elif self.split == "halves":
            if num_classes % 2:
                raise ValueError(
                    f"split 'halves' needs an even number of classes, the source has {num_classes}"
                )
            classes = np.arange(num_classes, dtype=np.int64)
            positive = classes[: num_classes // 2]
        else:
            for name in ("positive", "negative"):
                bad = [c for c in getattr(self, name) if c >= num_classes]
                if bad:
                    raise ValueError(
                        f"{name} has class id(s) {bad}, but the source has classes [0, {num_classes})"
                    )
            classes = np.array(sorted(self.positive + self.negative), dtype=np.int64)
            positive = np.array(self.positive, dtype=np.int64)
        if len(classes) < 2:
            raise ValueError(f"split {self.split!r} of {num_classes} class(es) keeps < 2 classes")
        sign = np.where(np.isin(classes, positive), 1.0, -1.0).astype(np.float32)
        return classes, sign


def resolve_path(path: str | os.PathLike, data_root: str | os.PathLike) -> Path:
    """``path`` if absolute, else ``data_root / path`` (``~`` expanded)."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else Path(data_root).expanduser() / p


def config_from_dict(d: Mapping) -> ImageDataConfig:
    """Typed config from a workflow dict (``kind`` is dropped; lists become tuples)."""
    names = {f.name for f in fields(ImageDataConfig)}
    kw = {k: v for k, v in d.items() if k != "kind"}
    unknown = sorted(set(kw) - names)
    if unknown:
        raise ValueError(f"unknown image data key(s) {unknown}; expected some of {sorted(names)}")
    for name in ("positive", "negative"):
        if isinstance(kw.get(name), list):
            kw[name] = tuple(kw[name])
    return ImageDataConfig(**kw)


# ---------------------------------------------------------------------------- sources
