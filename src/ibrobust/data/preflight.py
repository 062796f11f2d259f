"""Cheap checks of the real image sources a run will read, before any job starts.

:func:`check_image_sources` reads headers, never pixels: the IDX magic numbers and sizes
(``stat`` and 8-16 bytes per file, plus MNIST's 70 kB of labels), the zip directory and
the ``.npy`` headers of an ``.npz`` (the arrays stay compressed / unread), the class
folders of an image folder (one listing, one image header per class) and torchvision's
CIFAR-10 checksums (what torchvision itself verifies before reading). It returns one
message per problem, each naming the dataset entry and the path, so a broken data copy
fails a workflow in seconds instead of inside its first dataset job; the loaders of
:mod:`ibrobust.data.images` still check everything again (and more) when they read.

A torchvision source whose files are missing is a problem only when it cannot be
downloaded: ``download: false``, or its first download URL does not answer within a few
seconds (an offline machine would otherwise fail in the dataset job).
"""

from __future__ import annotations

import math
import os
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ibrobust.data.idx import read_idx, read_idx_header
from ibrobust.data.image_config import (
    KNOWN_NUM_CLASSES,
    MNIST_FILES,
    NPZ_KEYS,
    resolve_path,
)

DOWNLOAD_TIMEOUT = 5.0  # seconds to wait for a download URL to answer


@dataclass(frozen=True)
class Counts:
    """Images per split of a source, from its headers (None where unknown)."""

    train: int | None
    test: int | None


def url_error(url: str, timeout: float = DOWNLOAD_TIMEOUT) -> str | None:
    """None when ``url`` answers a HEAD request within ``timeout`` seconds, else why not."""
    try:
        req = urllib.request.Request(url, method="HEAD")
        with urllib.request.urlopen(req, timeout=timeout):
            return None
    except urllib.error.HTTPError as e:
        return None if e.code < 500 else f"HTTP {e.code}"
    except (OSError, ValueError) as e:  # URLError, timeouts, DNS failures
        return f"{type(e).__name__}: {getattr(e, 'reason', e)}"


def check_image_sources(
    datasets: Mapping[str, Mapping],
    data_root: str | os.PathLike,
    *,
    probe: Callable[[str], str | None] = url_error,
) -> list[str]:
    """Problems of the image ``datasets`` (name -> ``datasets`` entry) under ``data_root``:
    one message per problem, ``datasets.<name> (source <s>): <path>: <what>``. Sources
    shared by several entries are checked once (messages name the first entry). ``probe``
    tells why a download URL does not answer (None: it does)."""
    root = Path(data_root).expanduser()
    problems: list[str] = []
    done: dict[tuple, tuple[list[str], Counts]] = {}
    for name, spec in datasets.items():
        source = spec["source"]
        key = (source, str(resolve_path(spec["path"], root)) if spec.get("path") else None)
        where = f"datasets.{name} (source {source})"
        if key not in done:
            found, counts = _CHECKS[source](spec, root, probe)
            done[key] = ([f"{where}: {p}" for p in found], counts)
            problems += done[key][0]
        if not done[key][0]:
            problems += [f"{where}: {p}" for p in _count_problems(spec, done[key][1])]
    return problems


# ---- per source: (problems, counts) -------------------------------------------------------
def _mnist(spec: Mapping, root: Path, probe) -> tuple[list[str], Counts]:
    raw = root / "MNIST" / "raw"
    files = [raw / f for pair in MNIST_FILES.values() for f in pair]
    missing = [f for f in files if not f.is_file()]
    if missing:
        return _missing(spec, root, missing, "mnist", probe), Counts(None, None)
    problems, counts = [], {}
    for split, (images, labels) in MNIST_FILES.items():
        try:
            hi = read_idx_header(raw / images, ndim=3)
        except (OSError, ValueError) as e:
            problems.append(str(e))
            hi = None
        try:
            hl = read_idx_header(raw / labels, ndim=1)
        except (OSError, ValueError) as e:
            problems.append(str(e))
            hl = None
        if hi is None or hl is None:
            continue
        if hl.shape[0] != hi.shape[0]:
            problems.append(
                f"{hl.path}: {hl.shape[0]} labels, but {hi.path} holds {hi.shape[0]} images"
            )
            continue
        y = read_idx(hl.path, ndim=1)  # 60 kB
        k = KNOWN_NUM_CLASSES["mnist"]
        if y.size and int(y.max()) >= k:
            problems.append(f"{hl.path}: label {int(y.max())}; expected labels in [0, {k})")
        counts[split] = hi.shape[0]
    return problems, Counts(counts.get("train"), counts.get("test"))


def _cifar10(spec: Mapping, root: Path, probe) -> tuple[list[str], Counts]:
    from torchvision.datasets import CIFAR10
    from torchvision.datasets.utils import check_integrity

    base = root / CIFAR10.base_folder
    expected = [
        *CIFAR10.train_list,
        *CIFAR10.test_list,
        [CIFAR10.meta["filename"], CIFAR10.meta["md5"]],
    ]
    missing = [base / f for f, _ in expected if not (base / f).is_file()]
    if missing:
        return _missing(spec, root, missing, "cifar10", probe), Counts(None, None)
    problems = [
        f"{base / f}: md5 differs from torchvision's CIFAR10 checksum (corrupt, or not an "
        "original python batch; use source npz / imagefolder for other copies)"
        for f, md5 in expected
        if not check_integrity(str(base / f), md5)
    ]
    return problems, Counts(50000, 10000)


def _missing(spec: Mapping, root: Path, missing: list[Path], source: str, probe) -> list[str]:
    listed = ", ".join(str(p) for p in missing)
    if not spec.get("download", False):
        return [
            f"missing {listed} (data_root {root}); point data_root at a copy or set download: true"
        ]
    url = _download_url(source)
    why = probe(url)
    if why is None:
        return []  # torchvision downloads them in the dataset job
    return [
        f"missing {listed} (data_root {root}), and download: true cannot fetch them: {url} "
        f"does not answer ({why}); point data_root at a copy (--config data_root=DIR)"
    ]


def _download_url(source: str) -> str:
    from torchvision.datasets import CIFAR10, MNIST

    if source == "mnist":
        return MNIST.mirrors[0] + MNIST.resources[0][0]
    return CIFAR10.url


def _npz(spec: Mapping, root: Path, probe) -> tuple[list[str], Counts]:
    path = resolve_path(spec["path"], root)
    if not path.is_file():
        what = "a directory" if path.is_dir() else "not found"
        return [f"{path}: npz source {what} (path {spec['path']!r}, data_root {root})"], Counts(
            None, None
        )
    try:
        with zipfile.ZipFile(path) as zf:
            headers, problems = _npy_headers(zf, path)
            keys = {n[: -len(".npy")] for n in zf.namelist() if n.endswith(".npy")}
    except (OSError, zipfile.BadZipFile, EOFError) as e:
        return [f"{path}: not a readable .npz (zip) file ({e})"], Counts(None, None)
    missing = [k for k in NPZ_KEYS if k not in keys]
    if missing:
        problems.insert(0, f"{path}: missing key(s) {missing}; found {sorted(keys)}")
    images = {}  # split -> (N, C, H, W) of a well-formed x array
    for split in ("train", "test"):
        xk, yk = f"x_{split}", f"y_{split}"
        x, y = headers.get(xk), headers.get(yk)
        if x is not None:
            shape, dtype = x
            if dtype != np.uint8:
                problems.append(f"{path}: key {xk!r} has dtype {dtype}, expected uint8 pixels")
            if len(shape) == 3:
                images[split] = (shape[0], 1, *shape[1:])
            elif len(shape) == 4 and shape[3] in (1, 3):
                images[split] = (shape[0], shape[3], *shape[1:3])
            else:
                problems.append(
                    f"{path}: key {xk!r} has shape {shape}, expected (N, H, W) or (N, H, W, C) "
                    "with C in (1, 3)"
                )
            if split in images and images[split][0] == 0:
                problems.append(f"{path}: key {xk!r} holds no images")
        if y is not None:
            shape, dtype = y
            if len(shape) != 1 or not np.issubdtype(dtype, np.integer):
                problems.append(
                    f"{path}: key {yk!r} has shape {shape} and dtype {dtype}, expected integer "
                    "labels of shape (N,)"
                )
            elif split in images and shape[0] != images[split][0]:
                problems.append(
                    f"{path}: key {yk!r} has {shape[0]} labels but {xk!r} {images[split][0]} images"
                )
    if len(images) == 2 and images["train"][1:] != images["test"][1:]:
        problems.append(
            f"{path}: 'x_train' images are (C, H, W) = {images['train'][1:]}, "
            f"'x_test' {images['test'][1:]}"
        )
    channels = spec.get("channels")
    if "train" in images and channels is not None and images["train"][1] != channels:
        problems.append(
            f"{path}: images have {images['train'][1]} channel(s), config says channels={channels}"
        )
    n = {split: images[split][0] if split in images else None for split in ("train", "test")}
    return problems, Counts(n["train"], n["test"])


_NPY_HEADER_READERS = {
    (1, 0): np.lib.format.read_array_header_1_0,
    (2, 0): np.lib.format.read_array_header_2_0,
}


def _npy_headers(zf: zipfile.ZipFile, path: Path) -> tuple[dict, list[str]]:
    """key -> (shape, dtype) from each member's .npy header; a member whose size disagrees
    with its header (truncated, trailing bytes) or whose header is garbage is a problem."""
    headers, problems = {}, []
    for info in zf.infolist():
        if not info.filename.endswith(".npy"):
            continue
        key = info.filename[: -len(".npy")]
        try:
            with zf.open(info) as fh:
                version = np.lib.format.read_magic(fh)
                read_header = _NPY_HEADER_READERS.get(version)
                if read_header is None:
                    raise ValueError(f"unsupported .npy format version {version}")
                shape, _, dtype = read_header(fh)
                offset = fh.tell()
        except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
            problems.append(f"{path}: key {key!r} is not a readable array ({e})")
            continue
        if dtype.hasobject:
            problems.append(f"{path}: key {key!r} holds Python objects (pickles are not read)")
            continue
        expected = offset + math.prod(shape) * dtype.itemsize
        if info.file_size != expected:
            problems.append(
                f"{path}: key {key!r} is {info.file_size} bytes, expected {expected} for its "
                f"header's shape {shape} and dtype {dtype}"
            )
            continue
        headers[key] = (tuple(shape), dtype)
    return headers, problems


def _imagefolder(spec: Mapping, root: Path, probe) -> tuple[list[str], Counts]:
    from PIL import Image
    from torchvision.datasets.folder import IMG_EXTENSIONS

    path = resolve_path(spec["path"], root)
    problems, classes, counts = [], {}, {}
    for split in ("train", "test"):
        d = path / split
        if not d.is_dir():
            problems.append(
                f"{d}: directory not found; an imagefolder source needs {path}/train/<class>/ "
                f"and {path}/test/<class>/ (path {spec['path']!r}, data_root {root})"
            )
            continue
        classes[split] = sorted(e.name for e in os.scandir(d) if e.is_dir())
        if not classes[split]:
            problems.append(f"{d}: no class folders (expected {d}/<class>/<image files>)")
        n = 0
        for c in classes[split]:
            count, first = _image_files(d / c, IMG_EXTENSIONS)
            if first is None:
                problems.append(f"{d / c}: no image files ({', '.join(IMG_EXTENSIONS)})")
                continue
            n += count
            try:
                with Image.open(first) as im:  # the header only
                    im.size  # noqa: B018
            except (OSError, ValueError) as e:
                problems.append(f"{first}: not a readable image ({type(e).__name__}: {e})")
        counts[split] = n
    if len(classes) == 2 and classes["train"] != classes["test"]:
        problems.append(
            f"{path}: train/ has class folders {classes['train']} but test/ has "
            f"{classes['test']}; both need the same"
        )
    return problems, Counts(counts.get("train"), counts.get("test"))


def _image_files(folder: Path, extensions: Iterable[str]) -> tuple[int, Path | None]:
    """(number of image files under ``folder``, the first in sorted order) as ImageFolder
    lists them (by extension, following links)."""
    ext, count, first = tuple(extensions), 0, None
    for dirpath, dirs, names in os.walk(folder, followlinks=True):
        dirs.sort()
        hits = sorted(f for f in names if f.lower().endswith(ext))
        if hits and first is None:
            first = Path(dirpath) / hits[0]
        count += len(hits)
    return count, first


_CHECKS = {"mnist": _mnist, "cifar10": _cifar10, "npz": _npz, "imagefolder": _imagefolder}


def _count_problems(spec: Mapping, counts: Counts) -> list[str]:
    """The requested subset sizes against the source's image counts (before the loader's
    finer per-class checks)."""
    out = []
    holdout, n_train, n_test = spec.get("holdout"), spec.get("n_train"), spec.get("n_test")
    train, test = counts.train, counts.test
    if train is not None and holdout is not None:
        if holdout >= train:
            return [f"holdout={holdout} leaves no training images of the source's {train}"]
        train, test = train - holdout, holdout
    if train is not None and n_train is not None and n_train > train:
        out.append(f"n_train={n_train} is above the source's {train} training images")
    if test is not None and n_test is not None and n_test > test:
        out.append(f"n_test={n_test} is above the source's {test} test images")
    return out
