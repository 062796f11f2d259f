"""One seeding helper: every random draw in the library takes an explicit generator.

A generator is derived from a base seed and a tuple of string/int keys, so that, e.g.,
the data draw and the weight initialisation of seed 3 are independent streams that do
not shift when another stream draws more numbers.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # torch is imported where a torch generator is made (config checks: none)
    import torch


def derive_seed(seed: int, *keys: str | int) -> int:
    """A 63-bit seed from ``seed`` and ``keys`` (stable across processes and platforms)."""
    if not isinstance(seed, int | np.integer) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    h = hashlib.sha256(repr((int(seed), *keys)).encode()).digest()
    return int.from_bytes(h[:8], "little") >> 1


def torch_generator(seed: int, *keys: str | int) -> torch.Generator:
    """A CPU ``torch.Generator`` for the stream ``(seed, *keys)``."""
    import torch

    g = torch.Generator(device="cpu")
    g.manual_seed(derive_seed(seed, *keys))
    return g


def numpy_generator(seed: int, *keys: str | int) -> np.random.Generator:
    """A ``numpy.random.Generator`` for the stream ``(seed, *keys)``."""
    return np.random.default_rng(derive_seed(seed, *keys))
