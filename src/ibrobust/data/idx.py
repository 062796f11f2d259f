"""The IDX file format of MNIST (LeCun et al.), checked before torchvision reads it.

An IDX file is a 4-byte magic number ``00 00 <type> <ndim>``, then ``ndim`` big-endian
uint32 sizes, then the items, big-endian, in C order. torchvision's reader trusts the
header (a truncated file fails deep inside ``Tensor.view``); :func:`read_idx_header`
checks the magic, the number of dimensions and that the file length is exactly header
plus items, and :func:`check_idx_pair` that an image file and its label file agree, so a
corrupt file is a ``ValueError`` that names the path and what was expected.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# type byte -> item dtype (big-endian), from the format's definition
IDX_DTYPES: dict[int, np.dtype] = {
    0x08: np.dtype("u1"),
    0x09: np.dtype("i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}


@dataclass(frozen=True)
class IdxHeader:
    path: Path
    dtype: np.dtype  # item dtype (big-endian)
    shape: tuple[int, ...]  # (N, ...) sizes from the header
    offset: int  # bytes before the first item: 4 + 4 * ndim


def read_idx_header(path: str | os.PathLike, *, ndim: int, type_byte: int = 0x08) -> IdxHeader:
    """Header of the IDX file ``path``, checked: magic ``00 00 type_byte ndim`` and the
    file length equal to the header plus ``prod(shape)`` items. ``ValueError`` names the path."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: IDX file not found")
    size = path.stat().st_size
    with open(path, "rb") as fh:
        head = fh.read(4 + 4 * ndim)
    if len(head) < 4:
        raise ValueError(f"{path}: {size} bytes, too short for an IDX magic number (4 bytes)")
    magic = int.from_bytes(head[:4], "big")
    expected_magic = (type_byte << 8) | ndim
    if magic != expected_magic:
        raise ValueError(
            f"{path}: IDX magic number {magic:#010x}, expected {expected_magic:#010x} "
            f"(type {type_byte:#04x}, {ndim} dimension(s)); not an IDX file of this kind"
        )
    if len(head) < 4 + 4 * ndim:
        raise ValueError(
            f"{path}: {size} bytes, too short for an IDX header with {ndim} dimension(s) "
            f"({4 + 4 * ndim} bytes)"
        )
    shape = tuple(int.from_bytes(head[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    dtype = IDX_DTYPES[type_byte]
    offset = 4 + 4 * ndim
    expected = offset + math.prod(shape) * dtype.itemsize
    if size != expected:
        raise ValueError(
            f"{path}: {size} bytes, expected {expected} for the IDX header's shape {shape} "
            f"({'truncated' if size < expected else 'trailing bytes'})"
        )
    return IdxHeader(path, dtype, shape, offset)


def read_idx(path: str | os.PathLike, *, ndim: int, type_byte: int = 0x08) -> np.ndarray:
    """The items of a checked IDX file as an array of the header's shape (native byte order)."""
    h = read_idx_header(path, ndim=ndim, type_byte=type_byte)
    data = np.fromfile(h.path, dtype=h.dtype, offset=h.offset)
    return data.reshape(h.shape).astype(h.dtype.newbyteorder("="), copy=False)


def check_idx_pair(
    images: str | os.PathLike, labels: str | os.PathLike, *, num_classes: int
) -> tuple[int, int, int]:
    """Check a uint8 image file (N, H, W) and its uint8 label file (N,) with labels in
    ``[0, num_classes)``; returns ``(N, H, W)``. ``ValueError`` names the offending file."""
    hi = read_idx_header(images, ndim=3)
    hl = read_idx_header(labels, ndim=1)
    n, h, w = hi.shape
    if h < 1 or w < 1:
        raise ValueError(f"{hi.path}: images of size {h}x{w}; expected positive height and width")
    if hl.shape[0] != n:
        raise ValueError(
            f"{hl.path}: {hl.shape[0]} labels, but {hi.path} holds {n} images; expected equal counts"
        )
    y = read_idx(labels, ndim=1)  # (N,) small: 60 kB for MNIST
    if y.size and int(y.max()) >= num_classes:
        bad = int(np.argmax(y >= num_classes))
        raise ValueError(
            f"{hl.path}: label {int(y[bad])} at item {bad}; expected labels in [0, {num_classes})"
        )
    return n, h, w
