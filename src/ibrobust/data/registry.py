"""Dataset registry: a ``datasets`` config entry + a seed -> the arrays of a dataset file.

Every kind (module in :data:`ibrobust.kinds.DATASETS`) exposes ``make_dataset(spec, seed,
data_root) -> (arrays, meta)``: arrays in the common layout of :mod:`ibrobust.data.dataset`
and a JSON-able ``meta`` (class counts, checks, provenance). Kinds:

* ``clusters``: the synthetic orthogonal clusters of Study FA / PRELU (no files needed);
* ``image``: MNIST / CIFAR-10 / an ``.npz`` / an image folder under ``data_root``, with a
  binary split of its classes (:mod:`ibrobust.data.images`).

(Kinds of layout ``draws``, e.g. the linear teacher of Study PRICE-LIN, make no dataset
file: their study draws each n's training sets, :mod:`ibrobust.data.teacher`.)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ibrobust import kinds


def make_dataset(
    spec: dict, seed: int, data_root: str | Path | None = None
) -> tuple[dict[str, np.ndarray], dict]:
    """Arrays and meta of dataset ``spec`` for ``seed`` (deterministic)."""
    module = kinds.DATASETS.load(spec.get("kind"))
    root = None if data_root is None else Path(data_root).expanduser()
    return module.make_dataset(spec, seed, root)
