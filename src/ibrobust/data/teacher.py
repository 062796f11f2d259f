"""Linear-teacher data of Tsilivis et al. (NeurIPS 2024), Sec. 5.1 and App. F.1.

Teacher w* in R^d with ``k_w`` non-zero entries; inputs x = m * e with a Bernoulli(k_x/d)
mask m (expected ``k_x`` non-zero entries; k_x = d means dense) and entries e either
+-1 (``entries="pm1"``) or N(0, 1) (``"gaussian"``); label y = sign(<w*, x>).

Decisions:

* **Teacher support** (``w_support``): ``"exact"`` (default) puts the ``k_w`` non-zeros on
  a uniformly random support of exactly that size (docs/studies/price_linear.md,
  "Definitions", teacher sparsity); ``"bernoulli"``
  uses a Bernoulli(k_w/d) mask like the paper's App. F.1 ("expected number of non-zero
  entries"), redrawn if it comes out empty (probability ~ e^{-k_w}).
* **<w*, x> = 0** (no label): such points are *rejected and resampled* -- the data are
  x conditioned on <w*, x> != 0. This matters in the sparse-sparse regime (k_w = k_x = 4,
  d = 512), where the supports of x and w* miss each other for ~97% of raw draws, and
  for +-1 entries, where overlapping coordinates can cancel exactly. Dropping would give
  fewer than n points, and a random label would make the data non-separable.
* **Streams.** w* comes from stream ``(seed, "teacher", "w_star")``, the test set from
  ``(seed, "teacher", "test")`` and training draw ``r`` from ``(seed, "teacher", "train",
  r)``. So all draws of one seed share the teacher and the test set (the paper: "one
  draw per dimension, i.e. same test dataset across the different values of n and eps"),
  and the candidates are generated in fixed chunks of :data:`CHUNK` rows, which makes the
  training set of size n a *prefix* of the one of size n' > n (nested n grid).
* Everything is float64 (the +-1 entries are exact, the margins downstream need it).

The dataset kind ``teacher`` (:data:`ibrobust.kinds.DATASETS`; ``teacher.schema.yaml``) has
the layout ``draws``: no dataset file of the generic dataset rule; Study PRICE-LIN's jobs
draw the test set (:func:`sample_test_set`) and the training draws of each n
(:func:`sample_train_draws`) themselves. :func:`check` validates a config entry; the module
imports without torch (the config validation calls it while the Snakefile parses).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ibrobust.errors import SettingError

if TYPE_CHECKING:
    import torch

ENTRIES = ("pm1", "gaussian")
W_SUPPORTS = ("exact", "bernoulli")
CHUNK = 1024  # candidate rows per generator call; fixed so that data sets are nested in n
MAX_CANDIDATES = 1 << 28  # give up (ValueError) after this many rejected candidate rows


@dataclass(frozen=True)
class TeacherConfig:
    d: int = 512
    k_w: int = 512  # non-zero entries of w* (exact, or expected with w_support="bernoulli")
    k_x: int = 512  # expected non-zero entries of x (Bernoulli(k_x/d) mask)
    entries: str = "pm1"  # "pm1" (+-1) or "gaussian" (N(0,1)) for both w* and x
    n_train: int = 64
    n_test: int = 10_000
    w_support: str = "exact"  # "exact" k_w-subset or "bernoulli" mask (paper's App. F.1)

    def __post_init__(self) -> None:
        if self.d < 1:
            raise SettingError("d", f"d must be >= 1, got {self.d}")
        if not 1 <= self.k_w <= self.d:
            raise SettingError("k_w", f"k_w must satisfy 1 <= k_w <= d={self.d}, got {self.k_w}")
        if not 1 <= self.k_x <= self.d:
            raise SettingError("k_x", f"k_x must satisfy 1 <= k_x <= d={self.d}, got {self.k_x}")
        if self.entries not in ENTRIES:
            raise SettingError("entries", f"entries must be one of {ENTRIES}, got {self.entries!r}")
        if self.w_support not in W_SUPPORTS:
            raise SettingError(
                "w_support", f"w_support must be one of {W_SUPPORTS}, got {self.w_support!r}"
            )
        if self.n_train < 1:
            raise SettingError("n_train", f"n_train must be >= 1, got {self.n_train}")
        if self.n_test < 1:
            raise SettingError("n_test", f"n_test must be >= 1, got {self.n_test}")


@dataclass
class TeacherData:
    config: TeacherConfig
    w_star: torch.Tensor  # (d,) teacher
    x_train: torch.Tensor  # (n_train, d)
    y_train: torch.Tensor  # (n_train,) in {-1, +1}, float64
    x_test: torch.Tensor  # (n_test, d)
    y_test: torch.Tensor  # (n_test,)


@dataclass
class TeacherBatch:
    """B training draws of one seed, stacked, with the shared teacher and test set."""

    config: TeacherConfig
    draws: tuple[int, ...]  # (B,) draw indices
    w_star: torch.Tensor  # (d,) shared teacher
    x_train: torch.Tensor  # (B, n_train, d)
    y_train: torch.Tensor  # (B, n_train)
    x_test: torch.Tensor  # (n_test, d) shared
    y_test: torch.Tensor  # (n_test,)


def teacher_config(dataset: Mapping, n_train: int = 1) -> TeacherConfig:
    """Typed data config from a ``teacher`` dataset entry (``kind`` dropped) and n (the
    test set and the teacher do not depend on n)."""
    fields = {k: v for k, v in dataset.items() if k != "kind"}
    return TeacherConfig(n_train=int(n_train), **fields)


def check(entry: Mapping, where: str) -> None:
    """A ``datasets`` entry's values as :class:`TeacherConfig` checks them (k_w, k_x <= d);
    a SettingError naming the setting (the registry adds ``where``, the entry's key path)."""
    teacher_config(entry)


def _entries(shape: tuple[int, ...], entries: str, generator: torch.Generator) -> torch.Tensor:
    import torch

    if entries == "pm1":
        bits = torch.randint(0, 2, shape, generator=generator, dtype=torch.int64)
        return (2 * bits - 1).to(torch.float64)
    return torch.randn(shape, generator=generator, dtype=torch.float64)


def sample_teacher(config: TeacherConfig, generator: torch.Generator) -> torch.Tensor:
    """(d,) teacher w* with k_w non-zero entries (exactly, or in expectation)."""
    import torch

    d = config.d
    values = _entries((d,), config.entries, generator)  # (d,)
    if config.entries == "gaussian":
        values = torch.where(values == 0, 1.0, values)  # measure-zero, but keep k_w exact
    while True:
        if config.w_support == "exact":
            support = torch.randperm(d, generator=generator)[: config.k_w]
            mask = torch.zeros(d, dtype=torch.bool)
            mask[support] = True
        else:
            mask = torch.rand(d, generator=generator, dtype=torch.float64) < config.k_w / d
        if mask.any():
            return torch.where(mask, values, 0.0)


def sample_points(
    w_star: torch.Tensor, n: int, config: TeacherConfig, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """n labelled points (x (n, d), y (n,)) with <w*, x> != 0 (rejection; module docstring).

    Per chunk of :data:`CHUNK` candidates, the coordinates on the support S of w* are drawn
    first (they alone decide <w*, x> and hence acceptance); the coordinates off S are
    independent of acceptance and are drawn for the accepted rows only. The law is that
    of a full Bernoulli-masked draw conditioned on <w*, x> != 0, at a fraction of the
    cost when acceptance is rare (k_w = k_x = 4: ~3%).
    """
    import torch

    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    d = config.d
    if w_star.shape != (d,):
        raise ValueError(f"w_star must have shape (d,)=({d},), got {tuple(w_star.shape)}")
    on = torch.nonzero(w_star != 0).squeeze(-1)  # (k,) support of w*
    off = torch.nonzero(w_star == 0).squeeze(-1)  # (d - k,)
    p = config.k_x / d
    xs, ys, have, tried = [], [], 0, 0
    while have < n:
        if tried >= MAX_CANDIDATES:
            raise ValueError(
                f"only {have} of n={n} points with <w*, x> != 0 after {tried} candidates "
                f"(k_w={config.k_w}, k_x={config.k_x}, d={d})"
            )
        mask = torch.rand((CHUNK, on.numel()), generator=generator, dtype=torch.float64) < p
        x_on = torch.where(
            mask, _entries((CHUNK, on.numel()), config.entries, generator), 0.0
        )  # (CHUNK, k)
        s = x_on @ w_star[on]  # (CHUNK,)
        keep = s != 0
        a = int(keep.sum())
        mask = torch.rand((a, off.numel()), generator=generator, dtype=torch.float64) < p
        x_off = torch.where(
            mask, _entries((a, off.numel()), config.entries, generator), 0.0
        )  # (a, d - k)
        x = torch.zeros((a, d), dtype=torch.float64)
        x[:, on] = x_on[keep]
        x[:, off] = x_off
        xs.append(x)
        ys.append(torch.sign(s[keep]))
        have += a
        tried += CHUNK
    return torch.cat(xs)[:n], torch.cat(ys)[:n]


def sample_test_set(
    config: TeacherConfig, seed: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(w* (d,), x_test (n_test, d), y_test (n_test,)) of ``seed`` (streams ``(seed,
    "teacher", "w_star")`` and ``(seed, "teacher", "test")``)."""
    from ibrobust.seeding import torch_generator

    w_star = sample_teacher(config, torch_generator(seed, "teacher", "w_star"))
    x, y = sample_points(w_star, config.n_test, config, torch_generator(seed, "teacher", "test"))
    return w_star, x, y


def sample_train_draws(
    config: TeacherConfig, seed: int, draws: Sequence[int]
) -> tuple[torch.Tensor, torch.Tensor]:
    """(x (R, n, d), y (R, n)): the training draws ``draws`` of ``seed`` (stream ``(seed,
    "teacher", "train", r)`` each; the teacher of :func:`sample_test_set`)."""
    import torch

    from ibrobust.seeding import torch_generator

    draws = [int(r) for r in draws]
    if not draws:
        raise ValueError("draws must name at least one draw, got []")
    w_star = sample_teacher(config, torch_generator(seed, "teacher", "w_star"))
    pts = [
        sample_points(w_star, config.n_train, config, torch_generator(seed, "teacher", "train", r))
        for r in draws
    ]
    return torch.stack([x for x, _ in pts]), torch.stack([y for _, y in pts])


def make_teacher_batch(config: TeacherConfig, seed: int, draws: Sequence[int]) -> TeacherBatch:
    """B = len(draws) training draws stacked to (B, n_train, d) for vectorised sweeps, with
    the shared teacher and test set of ``seed``: the workflow's samplers
    (:func:`sample_train_draws`, :func:`sample_test_set`) in one object."""
    draws = tuple(int(r) for r in draws)
    x, y = sample_train_draws(config, seed, draws)
    w_star, x_te, y_te = sample_test_set(config, seed)
    return TeacherBatch(config, draws, w_star, x, y, x_te, y_te)


def make_teacher_data(config: TeacherConfig, seed: int, draw: int = 0) -> TeacherData:
    """Teacher, training draw ``draw`` and test set of ``seed`` (row 0 of
    :func:`make_teacher_batch`)."""
    b = make_teacher_batch(config, seed, [draw])
    return TeacherData(config, b.w_star, b.x_train[0], b.y_train[0], b.x_test, b.y_test)
