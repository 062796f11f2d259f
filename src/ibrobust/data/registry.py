"""Dataset registry: a ``datasets`` config entry + a seed -> the arrays of a dataset file.

Every kind (module in :data:`ibrobust.kinds.DATASETS`) exposes ``make_dataset(spec, seed,
data_root) -> (arrays, meta)``: arrays in the common layout of :mod:`ibrobust.data.dataset`
and a JSON-able ``meta`` (class counts, checks, provenance). Kinds:

* ``clusters``: the synthetic orthogonal clusters of Study FA / PRELU (no files needed);
* ``image``: MNIST / CIFAR-10 / an ``.npz`` / an image folder under ``data_root``, with a
  binary split of its classes (:mod:`ibrobust.data.images`).

(The linear-teacher data of Study PRICE-LIN has its own draws-per-n layout:
:mod:`ibrobust.experiments.price_linear`.)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ibrobust import kinds


def make_dataset(
    spec: dict, seed: int, data_root: str | Path | None = None
) -> tuple[dict[str, np.ndarray], dict]:
    """Arrays and meta of dataset ``spec`` for ``seed`` (deterministic)."""
    module = kinds.load(kinds.DATASETS, spec.get("kind"), "dataset")
    root = None if data_root is None else Path(data_root).expanduser()
    return module.make_dataset(spec, seed, root)
