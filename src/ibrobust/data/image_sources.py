"""Image sources (:mod:`ibrobust.data.images`): mnist, cifar10, npz and imagefolder read
into :class:`RawImages`; no source ever falls back to random data (a missing file is a
``FileNotFoundError``, a malformed one a ``ValueError``, each naming the path)."""

from __future__ import annotations

import os
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image

from ibrobust.data.idx import check_idx_pair
from ibrobust.data.image_config import (
    KNOWN_NUM_CLASSES,
    MNIST_FILES,
    NPZ_KEYS,
    ImageDataConfig,
    resolve_path,
)


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
    a = _read_npz(path)
    splits = {name: _npz_split(path, name, a) for name in ("train", "test")}
    tr, te = splits["train"], splits["test"]
    if tr.x.shape[1:] != te.x.shape[1:]:
        raise ValueError(
            f"{path}: 'x_train' images are (C, H, W) = {tr.x.shape[1:]}, 'x_test' {te.x.shape[1:]}"
        )
    names = _npz_class_names(path, a, splits)
    c = tr.x.shape[1]
    if cfg.channels is not None and cfg.channels != c:
        raise ValueError(f"{path}: images have {c} channel(s), config says channels={cfg.channels}")
    return RawImages("npz", str(path), names, tr, te)


def _read_npz(path: Path) -> dict[str, np.ndarray]:
    """The arrays NPZ_KEYS (+ "class_names" if present) of an .npz file."""
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
    return a


def _npz_split(path: Path, name: str, a: dict[str, np.ndarray]) -> RawSplit:
    """Split ``name`` ("train" / "test") of an npz source, its pixels and labels checked."""
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
    return RawSplit(labels=y.astype(np.int64), x=x)


def _npz_class_names(
    path: Path, a: dict[str, np.ndarray], splits: dict[str, RawSplit]
) -> tuple[str, ...]:
    """The file's class_names (checked), else "0", "1", ... up to the largest label."""
    tr, te = splits["train"], splits["test"]
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
    return names


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
