"""What every benchmark prints next to its own figures: the machine's fp32 matmul peak."""

from __future__ import annotations

import time

import torch


def matmul_peak(reps: int = 5, size: int = 2048) -> float:
    """GFLOP/s of a (size x size) @ (size x size) fp32 product at the current thread count."""
    a, b = torch.randn(size, size), torch.randn(size, size)
    a @ b  # warm-up
    t = time.perf_counter()
    for _ in range(reps):
        a @ b
    return reps * 2 * size**3 / (time.perf_counter() - t) / 1e9
