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

* ``parity``: all classes; even class ids are +1, odd ids -1 (SPEC: "even vs odd",
  MNIST digits 0, 2, 4, 6, 8 -> +1).
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
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from ibrobust.data.idx import check_idx_pair
from ibrobust.seeding import numpy_generator

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
        if self.source not in SOURCES:
            raise ValueError(f"source must be one of {SOURCES}, got {self.source!r}")
        if self.source in TORCHVISION_SOURCES:
            if self.path is not None:
                raise ValueError(
                    f"path must be null for source {self.source!r} (torchvision's layout under "
                    f"data_root), got {self.path!r}"
                )
        elif not isinstance(self.path, str | os.PathLike) or not str(self.path):
            raise ValueError(f"path is required for source {self.source!r}, got {self.path!r}")
        if not isinstance(self.download, bool):
            raise ValueError(f"download must be true or false, got {self.download!r}")
        if self.download and self.source not in TORCHVISION_SOURCES:
            raise ValueError(
                f"download: true applies to torchvision sources {TORCHVISION_SOURCES} only, "
                f"not source {self.source!r}"
            )
        if self.split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {self.split!r}")
        if self.split == "explicit":
            pos, neg = self._class_ids("positive"), self._class_ids("negative")
            if set(pos) & set(neg):
                raise ValueError(
                    f"positive {pos} and negative {neg} share class(es) {sorted(set(pos) & set(neg))}"
                )
        else:
            for name in ("positive", "negative"):
                if getattr(self, name) is not None:
                    raise ValueError(
                        f"{name} is only for split 'explicit'; split {self.split!r} fixes the "
                        f"classes itself, got {name}={getattr(self, name)!r}"
                    )
        known = KNOWN_NUM_CLASSES.get(self.source)
        if known is not None and self.split == "explicit":
            for name in ("positive", "negative"):
                bad = [c for c in getattr(self, name) if c >= known]
                if bad:
                    raise ValueError(
                        f"{name} has class id(s) {bad} outside [0, {known}) of source {self.source!r}"
                    )
        k = self.num_kept_classes
        for name in ("n_train", "n_test"):
            n = getattr(self, name)
            if n is None:
                continue
            if not isinstance(n, int | np.integer) or isinstance(n, bool) or n < 1:
                raise ValueError(f"{name} must be a positive integer or null, got {n!r}")
            if k is not None and n < k:
                raise ValueError(f"{name}={n} is below the {k} kept classes; need one per class")
        if self.holdout is not None and (
            not isinstance(self.holdout, int | np.integer)
            or isinstance(self.holdout, bool)
            or self.holdout < 1
        ):
            raise ValueError(f"holdout must be a positive integer or null, got {self.holdout!r}")
        if self.channels not in (None, 1, 3):
            raise ValueError(f"channels must be 1, 3 or null, got {self.channels!r}")
        fixed = KNOWN_CHANNELS.get(self.source)
        if self.channels is not None and fixed is not None and self.channels != fixed:
            raise ValueError(
                f"channels={self.channels} but source {self.source!r} has {fixed} channel(s)"
            )

    def _class_ids(self, name: str) -> tuple[int, ...]:
        ids = getattr(self, name)
        if not isinstance(ids, tuple | list) or len(ids) == 0:
            raise ValueError(f"split 'explicit' needs a non-empty {name} list, got {ids!r}")
        if not all(isinstance(c, int | np.integer) and not isinstance(c, bool) for c in ids):
            raise ValueError(f"{name} must list integer class ids, got {ids!r}")
        if any(c < 0 for c in ids) or len(set(ids)) != len(ids):
            raise ValueError(f"{name} must list distinct non-negative class ids, got {ids!r}")
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


@dataclass(frozen=True)
class RawSplit:
    """One split of a source: every label, and the images in memory or as files.

    Folder sources keep only the file list, so that :meth:`take` decodes the chosen
    images alone."""

    labels: np.ndarray  # (N,) int64 class ids in [0, num_classes)
    x: np.ndarray | None = None  # (N, C, H, W) uint8, possibly a strided view; None for files
    files: tuple[str, ...] | None = field(default=None, repr=False)  # (N,) image paths
    channels: int = 3  # C of the decoded files
    offset: int = 0  # row of this split's first image in the source split it was cut from

    def rows(self, lo: int, hi: int) -> RawSplit:
        """Images lo..hi-1 as a split of their own (``offset`` keeps the source rows)."""
        return RawSplit(
            labels=self.labels[lo:hi],
            x=None if self.x is None else self.x[lo:hi],
            files=None if self.files is None else self.files[lo:hi],
            channels=self.channels,
            offset=self.offset + lo,
        )

    def __post_init__(self) -> None:
        assert (self.x is None) != (self.files is None), "exactly one of x and files"
        assert len(self.labels) == len(self), "one label per image"

    def __len__(self) -> int:
        return len(self.files) if self.x is None else self.x.shape[0]

    def take(
        self, index: np.ndarray, reference: tuple[str, tuple[int, int]] | None = None
    ) -> np.ndarray:
        """(n, C, H, W) uint8 images ``index`` (C-contiguous). For files, every image must
        have the (H, W) of ``reference = (file, (H, W))``, or of the first one decoded."""
        if self.x is not None:
            return np.ascontiguousarray(self.x[index])
        return decode_images([self.files[i] for i in index], self.channels, reference)


@dataclass(frozen=True)
class RawImages:
    source: str  # ImageDataConfig.source
    location: str  # the directory or file read (provenance)
    class_names: tuple[str, ...]  # (num_classes,) names of class ids 0, 1, ...
    train: RawSplit
    test: RawSplit

    @property
    def num_classes(self) -> int:
        return len(self.class_names)


def resolve_path(path: str | os.PathLike, data_root: str | os.PathLike) -> Path:
    """``path`` if absolute, else ``data_root / path`` (``~`` expanded)."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else Path(data_root).expanduser() / p


def load_source(cfg: ImageDataConfig, data_root: str | os.PathLike) -> RawImages:
    """Read ``cfg.source`` (see the module docstring). Errors name the path and what was expected."""
    loader = {
        "mnist": _load_mnist,
        "cifar10": _load_cifar10,
        "npz": _load_npz,
        "imagefolder": _load_imagefolder,
    }[cfg.source]
    return loader(cfg, Path(data_root).expanduser())


def _load_mnist(cfg: ImageDataConfig, root: Path) -> RawImages:
    import torchvision  # deferred: ~1 s of import that config parsing does not need

    raw = root / "MNIST" / "raw"
    paths = [raw / name for pair in MNIST_FILES.values() for name in pair]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing and not cfg.download:
        raise FileNotFoundError(
            f"MNIST not found under data_root {root}: missing {', '.join(missing)} (the four "
            f"uncompressed IDX files torchvision.datasets.MNIST reads from {raw}); set "
            f"download: true to fetch them, or point data_root at a folder holding MNIST/raw/"
        )

    def check() -> None:
        for images, labels in MNIST_FILES.values():
            check_idx_pair(raw / images, raw / labels, num_classes=KNOWN_NUM_CLASSES["mnist"])

    if not missing:
        check()  # before torchvision, whose reader fails obscurely on a truncated file
    splits, names = {}, None
    for name in ("train", "test"):
        # torchvision downloads only when a file is missing; the second call needs nothing
        download = cfg.download and name == "train"
        try:
            ds = torchvision.datasets.MNIST(root=root, train=name == "train", download=download)
        except Exception as e:
            what = f"missing {', '.join(missing)} and the download failed" if missing else "failed"
            raise RuntimeError(f"{raw}: torchvision.datasets.MNIST {what}: {e}") from e
        x = ds.data.numpy()[:, None]  # (N, 1, 28, 28) uint8, a view
        splits[name] = RawSplit(labels=ds.targets.numpy().astype(np.int64), x=x)
        names = tuple(ds.classes)
    if missing:
        check()  # the downloaded files
    return RawImages("mnist", str(raw), names, splits["train"], splits["test"])


def _load_cifar10(cfg: ImageDataConfig, root: Path) -> RawImages:
    import torchvision
    from torchvision.datasets.utils import calculate_md5

    cls = torchvision.datasets.CIFAR10
    base = root / cls.base_folder
    expected = [*cls.train_list, *cls.test_list, [cls.meta["filename"], cls.meta["md5"]]]
    missing = [str(base / f) for f, _ in expected if not (base / f).is_file()]
    if missing and not cfg.download:
        raise FileNotFoundError(
            f"CIFAR-10 not found under data_root {root}: missing {', '.join(missing)} (the python "
            f"batches torchvision.datasets.CIFAR10 reads from {base}); set download: true to "
            f"fetch them, or use source npz / imagefolder for other copies"
        )
    splits, names = {}, None
    for name in ("train", "test"):
        download = cfg.download and name == "train"
        try:
            ds = cls(root=root, train=name == "train", download=download)
        except Exception as e:
            bad = [
                f"{base / f}: md5 {got}, expected {md5}"
                for f, md5 in expected
                if (base / f).is_file() and (got := calculate_md5(base / f)) != md5
            ]
            if bad and not download:
                raise ValueError(
                    f"{'; '.join(bad)} (torchvision's CIFAR10 checksums: the file is corrupt "
                    f"or not an original python batch)"
                ) from e
            raise RuntimeError(
                f"{base}: torchvision.datasets.CIFAR10 failed (download={download}"
                f"{', missing ' + ', '.join(missing) if missing else ''}"
                f"{', bad checksums ' + '; '.join(bad) if bad else ''}): {e}"
            ) from e
        x = ds.data.transpose(0, 3, 1, 2)  # (N, 32, 32, 3) -> (N, 3, 32, 32) view
        splits[name] = RawSplit(labels=np.asarray(ds.targets, dtype=np.int64), x=x)
        names = tuple(ds.classes)
    return RawImages("cifar10", str(base), names, splits["train"], splits["test"])


def _load_npz(cfg: ImageDataConfig, root: Path) -> RawImages:
    path = resolve_path(cfg.path, root)
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: npz source not found (path {cfg.path!r}, relative to data_root {root})"
        )
    try:
        z = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
        raise ValueError(f"{path}: not a readable .npz file ({e})") from e
    if not isinstance(z, np.lib.npyio.NpzFile):
        raise ValueError(f"{path}: holds a single array; expected an .npz with keys {NPZ_KEYS}")
    with z:
        missing = [k for k in NPZ_KEYS if k not in z.files]
        if missing:
            raise ValueError(
                f"{path}: missing key(s) {missing}; an npz source needs {list(NPZ_KEYS)}, "
                f"found {sorted(z.files)}"
            )
        a = {}
        for k in (*NPZ_KEYS, "class_names"):
            if k not in z.files:
                continue
            try:
                a[k] = z[k]
            except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
                raise ValueError(f"{path}: cannot read key {k!r} ({e})") from e

    splits = {}
    for name in ("train", "test"):
        xk, yk = f"x_{name}", f"y_{name}"
        x, y = a[xk], a[yk]
        if x.dtype != np.uint8:
            raise ValueError(
                f"{path}: key {xk!r} has dtype {x.dtype}, expected uint8 pixels in 0..255 "
                f"(convert when writing the file; nothing is rescaled here)"
            )
        if x.ndim == 3:
            x = x[:, None]  # (N, H, W) -> (N, 1, H, W)
        elif x.ndim == 4 and x.shape[3] in (1, 3):
            x = x.transpose(0, 3, 1, 2)  # (N, H, W, C) -> (N, C, H, W) view
        else:
            raise ValueError(
                f"{path}: key {xk!r} has shape {x.shape}, expected (N, H, W) or (N, H, W, C) "
                f"with C in (1, 3), channels last"
            )
        if y.ndim != 1 or not np.issubdtype(y.dtype, np.integer):
            raise ValueError(
                f"{path}: key {yk!r} has shape {y.shape} and dtype {y.dtype}, expected integer "
                f"labels of shape (N,)"
            )
        if len(y) != len(x):
            raise ValueError(f"{path}: key {yk!r} has {len(y)} labels but {xk!r} {len(x)} images")
        if len(y) == 0:
            raise ValueError(f"{path}: key {xk!r} holds no images")
        if int(y.min()) < 0:
            raise ValueError(f"{path}: key {yk!r} has label {int(y.min())}, expected labels >= 0")
        splits[name] = RawSplit(labels=y.astype(np.int64), x=x)
    tr, te = splits["train"], splits["test"]
    if tr.x.shape[1:] != te.x.shape[1:]:
        raise ValueError(
            f"{path}: 'x_train' images are (C, H, W) = {tr.x.shape[1:]}, 'x_test' {te.x.shape[1:]}"
        )
    if "class_names" in a:
        names = a["class_names"]
        if names.ndim != 1 or names.dtype.kind != "U":
            raise ValueError(
                f"{path}: key 'class_names' has shape {names.shape} and dtype {names.dtype}, "
                f"expected a 1-D array of strings"
            )
        names = tuple(str(s) for s in names)
    else:
        names = tuple(str(c) for c in range(max(tr.labels.max(), te.labels.max()) + 1))
    for name, s in splits.items():
        if int(s.labels.max()) >= len(names):
            raise ValueError(
                f"{path}: key 'y_{name}' has label {int(s.labels.max())}, expected labels in "
                f"[0, {len(names)}) (the {len(names)} entries of 'class_names')"
            )
    c = tr.x.shape[1]
    if cfg.channels is not None and cfg.channels != c:
        raise ValueError(f"{path}: images have {c} channel(s), config says channels={cfg.channels}")
    return RawImages("npz", str(path), names, tr, te)


def _load_imagefolder(cfg: ImageDataConfig, root: Path) -> RawImages:
    import torchvision

    path = resolve_path(cfg.path, root)
    channels = cfg.channels or 3
    splits, names = {}, {}
    for name in ("train", "test"):
        d = path / name
        if not d.is_dir():
            raise FileNotFoundError(
                f"{d}: directory not found; an imagefolder source needs {path}/train/<class>/* "
                f"and {path}/test/<class>/* (path {cfg.path!r}, relative to data_root {root})"
            )
        try:  # lists files by extension; decodes nothing
            ds = torchvision.datasets.ImageFolder(str(d))
        except FileNotFoundError as e:
            raise FileNotFoundError(f"{d}: {e}") from e
        labels = np.asarray(ds.targets, dtype=np.int64)  # (N,) grouped by class
        order = round_robin(labels)
        files = tuple(ds.samples[i][0] for i in order)
        splits[name] = RawSplit(labels=labels[order], files=files, channels=channels)
        names[name] = tuple(ds.classes)
    if names["train"] != names["test"]:
        raise ValueError(
            f"{path}: train/ has classes {list(names['train'])} but test/ has "
            f"{list(names['test'])}; both need the same class folders"
        )
    return RawImages("imagefolder", str(path), names["train"], splits["train"], splits["test"])


def round_robin(labels: np.ndarray) -> np.ndarray:
    """(N,) order that interleaves the classes of a class-grouped listing: the first file
    of every class (by class id), then the second of every class, ... Folders have no
    sample order of their own; ImageFolder's is grouped by class, so without this the rows
    kept by a subset (stored in source order) and any prefix of them - e.g. the test
    points an attack takes - would be one class."""
    rank = np.empty(len(labels), dtype=np.int64)
    for c in np.unique(labels):
        idx = np.flatnonzero(labels == c)
        rank[idx] = np.arange(len(idx))
    return np.lexsort((labels, rank)).astype(np.int64)


def decode_images(
    files: Sequence[str], channels: int, reference: tuple[str, tuple[int, int]] | None = None
) -> np.ndarray:
    """(n, C, H, W) uint8 from image files, converted to "L" (C = 1) or "RGB" (C = 3).

    Every image must be (H, W) = ``reference[1]`` (the size of file ``reference[0]``), or,
    without a reference, the size of the first file. ``ValueError`` names the first
    file that cannot be decoded or has another size."""
    mode = {1: "L", 3: "RGB"}[channels]
    out = None
    for i, f in enumerate(files):
        try:
            with Image.open(f) as im:
                a = np.asarray(im.convert(mode))  # (H, W) or (H, W, 3)
        except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as e:
            raise ValueError(f"{f}: cannot decode the image ({type(e).__name__}: {e})") from e
        if reference is None:
            reference = (f, a.shape[:2])
        if a.shape[:2] != tuple(reference[1]):
            (h, w), (h0, w0) = a.shape[:2], reference[1]
            raise ValueError(
                f"{f}: image is {h}x{w} (HxW), expected {h0}x{w0} like {reference[0]}; all "
                f"images of a source must have one size"
            )
        if out is None:
            out = np.empty((len(files), channels, *a.shape[:2]), dtype=np.uint8)
        out[i] = a.reshape(*a.shape[:2], channels).transpose(2, 0, 1)
    if out is None:
        h, w = reference[1] if reference is not None else (0, 0)
        out = np.empty((0, channels, h, w), dtype=np.uint8)
    return out


# ---------------------------------------------------------------------------- subsets


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


# ---------------------------------------------------------------------------- tensors


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


def make_dataset(
    spec: Mapping, seed: int, data_root: str | os.PathLike | None
) -> tuple[dict[str, np.ndarray], dict]:
    """The ``image`` kind of :mod:`ibrobust.data.registry`: arrays and meta of one subset."""
    if data_root is None:
        raise ValueError("image datasets need a data_root (config key data_root)")
    entry = dict(spec)
    if entry.get("source") not in TORCHVISION_SOURCES:
        entry.pop("download", None)  # torchvision-only; the workflow's schema fills it in
    data = make_image_data(config_from_dict(entry), seed, data_root)
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
