"""Atomic output writers.

Every file the workflow declares as an output is written to a temporary file in the
same directory and moved into place with ``os.replace`` (atomic on POSIX), so a job
killed half-way leaves either the old file or nothing - never a truncated file that
a later run could mistake for a result.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # imported where used: torch where a tensor is saved or loaded (figure jobs
    # skip it), pandas where a table is read (~0.2 s that training and data jobs skip)
    import pandas as pd
    import torch

# seconds this process spent reading inputs ("data") and writing outputs ("write") through
# this module; the job wrapper logs them as phases (benchmarks/profile_workflow.py)
SECONDS = {"data": 0.0, "write": 0.0}


@contextlib.contextmanager
def timed(phase: str) -> Iterator[None]:
    """Add the block's wall time to ``SECONDS[phase]`` (nested blocks count once)."""
    if getattr(timed, "_open", False):
        yield
        return
    timed._open = True
    t0 = time.perf_counter()
    try:
        yield
    finally:
        SECONDS[phase] += time.perf_counter() - t0
        timed._open = False


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; move it onto ``path`` on success only."""
    with timed("write"):
        yield from _atomic_path(Path(path))


def _atomic_path(path: Path) -> Iterator[Path]:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(
        prefix=f".{path.name}.", suffix=".tmp" + path.suffix, dir=path.parent
    )
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; outputs get the usual permissions
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, path)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def _is_tensor(v: Any) -> bool:
    """A torch tensor (without importing torch: none exists before torch is imported)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(v, torch.Tensor)


def save_npz(path: str | os.PathLike, **arrays: np.ndarray | torch.Tensor) -> None:
    arrays = {
        k: (v.detach().cpu().numpy() if _is_tensor(v) else np.asarray(v)) for k, v in arrays.items()
    }
    # uncompressed: Gaussian float data does not compress, and zlib costs seconds per file
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.savez(fh, **arrays)


def load_npz(path: str | os.PathLike) -> dict[str, np.ndarray]:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"expected an .npz file at {path}")
    with timed("data"), np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def save_torch(path: str | os.PathLike, obj: Any) -> None:
    """``torch.save`` through a file object: the zip's internal folder is then always
    ``archive`` (given a path, torch names it after the file, here the random temporary
    name), so identical tensors give identical bytes."""
    import torch

    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        torch.save(obj, fh)


def load_torch(path: str | os.PathLike) -> Any:
    import torch

    with timed("data"):
        return torch.load(path, map_location="cpu", weights_only=True)


def read_csv(path: str | os.PathLike, **kwargs: Any) -> pd.DataFrame:
    """``pandas.read_csv``, its time counted as the job's data phase."""
    import pandas as pd

    with timed("data"):
        return pd.read_csv(path, **kwargs)


def save_csv(path: str | os.PathLike, df: pd.DataFrame) -> None:
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False)


def save_json(path: str | os.PathLike, obj: Any) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True, default=_json_default) + "\n")


def _json_default(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray) or _is_tensor(o):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


# metadata that stamps the save time, dropped (None) through savefig's metadata; PNGs have none
_DATED_METADATA = {"pdf": {"CreationDate": None}}


def save_figure(fig: Any, *paths: str | os.PathLike, dpi: int = 150) -> None:
    """Save a matplotlib figure to every path (format from the suffix), atomically, without
    a creation date: the same figure gives the same bytes."""
    for p in paths:
        fmt = Path(p).suffix.lstrip(".")
        with atomic_path(p) as tmp:
            fig.savefig(
                tmp, dpi=dpi, bbox_inches="tight", format=fmt, metadata=_DATED_METADATA.get(fmt)
            )
