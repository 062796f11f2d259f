"""AutoAttack (Croce & Hein, ICML 2020) through the official implementation, PyPI ``pyautoattack``.

:func:`autoattack` runs AutoAttack at one radius on the logits of a
:class:`~ibrobust.attacks.tasks.Task` and returns which points are still correct. It
assumes images in [0, 1] (n, C, H, W) (every AutoAttack attack clamps its iterates to
[0, 1]; Square also needs the (C, H, W) layout) and raises ValueError for other data,
e.g. the box-less cluster data of Study FA (use PGD there).

Versions (``AutoAttackConfig.version``):

``standard``: AutoAttack's ``_set_version('standard')``: apgd-ce, apgd-t, fab-t, square;
APGD 100 iterations; Linf/L2: apgd-ce 1 restart, apgd-t 9 target classes; L1: apgd-ce 5
restarts and apgd-t 5 target classes, both with ``use_largereps`` (the eps schedule
3x, 2x, 1x over 30/30/40% of the iterations); fab-t 9 target classes, 1 restart; square
5000 queries, 1 restart. ``attacks`` may name a subset, run with those same settings and
in standard's order: ``attacks=['apgd-ce']`` is the paper-faithful APGD-CE of Study PRELU
(Linf/L2: one restart of 100 iterations; L1: five restarts with ``use_largereps``, as
standard does).

``custom``: AutoAttack's constructor defaults for the listed ``attacks``: apgd-ce /
apgd-dlr 5 restarts x 100 iterations, apgd-t 1 restart x 9 targets, fab 5 restarts x 100
iterations, fab-t 9 targets, square 5000 queries (stronger than standard's APGD-CE, so a
number must say which version it comes from; :attr:`AutoAttackResult.settings` does).

Number of classes. Standard AutoAttack crashes on a 2-logit model: ``apgd-t``'s targeted
DLR loss -(z_y - z_t) / (z_(1) - (z_(3) + z_(4)) / 2) reads the third- and fourth-largest
logits (IndexError with 2 or 3 classes), and ``apgd-t`` / ``fab-t`` target the 2nd .. (t+1)-th
most likely classes, so t target classes need >= t + 1 classes (standard's t = 9 needs 10);
the untargeted DLR loss of ``apgd-dlr`` divides by z_(1) - z_(3) and needs >= 3 classes.
``pyautoattack`` only *warns* about this (``checks.check_n_classes``) and then fails deep
inside the attack; here :func:`autoattack` raises a ValueError naming the attack and the
setting before anything runs. For the binary task (two logits (-s/2, s/2), see
:class:`~ibrobust.attacks.tasks.BinaryLogits`) the documented set is
``version='custom', attacks=['apgd-ce', 'fab', 'square']`` (:data:`BINARY_ATTACKS`), or
``version='standard', attacks=['apgd-ce']``.

Overrides (``n_iter``, ``n_restarts``, ``n_queries``, ``n_target_classes``; None keeps the
version's value) exist for CPU budgets and tests; they are recorded in ``settings``.

Determinism and side effects: AutoAttack seeds the global torch RNG with ``seed`` before
every attack (``torch.random.manual_seed``); the call runs inside ``torch.random.fork_rng``
so the caller's global RNG state is unchanged, and the same (inputs, seed, batch_size) give
the same result. AutoAttack's verbose output goes to this module's logger (DEBUG; its
sanity-check warnings at WARNING); nothing is printed. The model is put in eval mode with
frozen parameters and restored. The device is the input's.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from ibrobust.attacks.mode import attack_mode
from ibrobust.attacks.tasks import Task, correct_in_batches, get_task, strict_keys

log = logging.getLogger(__name__)

AA_NORMS = {"l2": "L2", "linf": "Linf", "l1": "L1"}  # ours -> AutoAttack's
AA_ATTACKS = ("apgd-ce", "apgd-dlr", "fab", "square", "apgd-t", "fab-t")
STANDARD_ATTACKS = ("apgd-ce", "apgd-t", "fab-t", "square")  # in AutoAttack's order
BINARY_ATTACKS = ("apgd-ce", "fab", "square")  # the documented set for 2-logit models
VERSIONS = ("standard", "custom")


@dataclass(frozen=True)
class AutoAttackConfig:
    norm: str = "l2"  # "l2", "linf" or "l1"
    version: str = "standard"  # "standard" or "custom"
    attacks: tuple[str, ...] | None = None  # None: all of standard's; required for custom
    batch_size: int = 500  # points per AutoAttack batch
    n_iter: int | None = None  # APGD / APGD-T / FAB iterations (None: 100)
    n_restarts: int | None = None  # restarts of apgd-ce/apgd-dlr and untargeted fab
    n_queries: int | None = None  # Square queries (None: 5000)
    n_target_classes: int | None = None  # apgd-t and fab-t targets (None: the version's)

    def __post_init__(self) -> None:
        if self.norm not in AA_NORMS:
            raise ValueError(f"norm must be one of {sorted(AA_NORMS)}, got {self.norm!r}")
        if self.version not in VERSIONS:
            raise ValueError(f"version must be one of {VERSIONS}, got {self.version!r}")
        if self.attacks is not None:
            if isinstance(self.attacks, str) or not self.attacks:
                raise ValueError(f"attacks must be a non-empty list, got {self.attacks!r}")
            object.__setattr__(self, "attacks", tuple(self.attacks))
            allowed = STANDARD_ATTACKS if self.version == "standard" else AA_ATTACKS
            bad = [a for a in self.attacks if a not in allowed]
            if bad:
                raise ValueError(
                    f"attacks {bad} not allowed with version={self.version!r}; allowed: "
                    f"{list(allowed)}"
                    + (
                        " (use version='custom' for the others)"
                        if self.version == "standard"
                        else ""
                    )
                )
            if len(set(self.attacks)) != len(self.attacks):
                raise ValueError(f"attacks must not repeat, got {list(self.attacks)}")
            if "fab-t" in self.attacks and "fab" in self.attacks:
                if self.attacks.index("fab-t") < self.attacks.index("fab"):
                    raise ValueError(
                        "attacks: put 'fab' before 'fab-t' (pyautoattack sets FAB's n_restarts "
                        "to 1 when fab-t runs, so a later 'fab' would silently run one restart)"
                    )
        elif self.version == "custom":
            raise ValueError(f"version='custom' needs an attacks list, e.g. {list(BINARY_ATTACKS)}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")
        for key in ("n_iter", "n_restarts", "n_queries", "n_target_classes"):
            v = getattr(self, key)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise ValueError(f"{key} must be a positive integer or None, got {v!r}")


@dataclass(frozen=True)
class AutoAttackResult:
    correct: torch.Tensor  # (n,) bool: still correct under the task after the attack
    x_adv: torch.Tensor  # (n, *s): the adversarial point where one was found, else x
    settings: dict[str, Any] = field(default_factory=dict)  # flat: what actually ran


def _set_apgd_iters(apgd: Any, n_iter: int) -> None:
    """``n_iter`` and the schedule APGDAttack.__init__ derives from it (checkpoints, L1 schedule)."""
    apgd.n_iter = n_iter
    apgd.n_iter_orig = n_iter
    apgd.n_iter_2 = max(int(0.22 * n_iter), 1)
    apgd.n_iter_min = max(int(0.06 * n_iter), 1)
    apgd.size_decr = max(int(0.03 * n_iter), 1)


def _build(model: nn.Module, cfg: AutoAttackConfig, eps: float, seed: int, device) -> Any:
    from pyautoattack import AutoAttack  # here, not at import: the Snakefile reads this module

    norm = AA_NORMS[cfg.norm]
    if cfg.version == "standard":
        aa = AutoAttack(model, norm=norm, eps=eps, seed=seed, version="standard", device=device)
        if cfg.attacks is not None:  # a subset, with standard's settings
            aa.attacks_to_run = [a for a in STANDARD_ATTACKS if a in cfg.attacks]
    else:
        aa = AutoAttack(
            model, attacks=list(cfg.attacks), norm=norm, eps=eps, seed=seed, version="custom",
            device=device,
        )  # fmt: skip
    if cfg.n_iter is not None:
        _set_apgd_iters(aa.apgd, cfg.n_iter)
        _set_apgd_iters(aa.apgd_targeted, cfg.n_iter)
        aa.fab.n_iter = cfg.n_iter
    if cfg.n_restarts is not None:
        aa.apgd.n_restarts = cfg.n_restarts
        aa.fab.n_restarts = cfg.n_restarts
    if cfg.n_queries is not None:
        aa.square.n_queries = cfg.n_queries
    if cfg.n_target_classes is not None:
        aa.apgd_targeted.n_target_classes = cfg.n_target_classes
        aa.fab.n_target_classes = cfg.n_target_classes
    aa.verbose = True  # AutoAttack's progress, at DEBUG on our logger
    aa.logger = aa.apgd.logger = aa.apgd_targeted.logger = log
    return aa


def _settings(aa: Any, cfg: AutoAttackConfig, eps: float, seed: int, n_classes: int) -> dict:
    s: dict[str, Any] = {
        "version": cfg.version,
        "norm": aa.norm,
        "eps": float(eps),
        "seed": int(seed),
        "batch_size": cfg.batch_size,
        "n_classes": int(n_classes),
        "attacks": ",".join(aa.attacks_to_run),
    }
    for a in aa.attacks_to_run:
        if a in ("apgd-ce", "apgd-dlr"):
            s |= {f"{a}.n_iter": aa.apgd.n_iter_orig, f"{a}.n_restarts": aa.apgd.n_restarts}
            s[f"{a}.use_largereps"] = bool(aa.apgd.use_largereps)
        elif a == "apgd-t":
            t = aa.apgd_targeted
            s |= {"apgd-t.n_iter": t.n_iter_orig, "apgd-t.n_restarts": t.n_restarts}
            s |= {"apgd-t.n_target_classes": t.n_target_classes}
            s["apgd-t.use_largereps"] = bool(t.use_largereps)
        elif a == "fab":
            s |= {"fab.n_iter": aa.fab.n_iter, "fab.n_restarts": aa.fab.n_restarts}
        elif a == "fab-t":  # AutoAttack runs fab-t with one restart
            s |= {"fab-t.n_iter": aa.fab.n_iter, "fab-t.n_restarts": 1}
            s["fab-t.n_target_classes"] = aa.fab.n_target_classes
        elif a == "square":
            s |= {
                "square.n_queries": aa.square.n_queries,
                "square.n_restarts": aa.square.n_restarts,
            }
            s["square.p_init"] = aa.square.p_init
    return s


def required_classes(attack: str, n_target_classes: int) -> tuple[int, str]:
    """(minimum number of logits, why) for one AutoAttack attack (see the module docstring)."""
    t = n_target_classes
    if attack == "apgd-dlr":
        return 3, "its DLR loss divides by z_(1) - z_(3), the gap to the third-largest logit"
    if attack == "apgd-t":
        why = (
            "its targeted DLR loss reads the fourth-largest logit, and "
            f"n_target_classes={t} targets the 2nd..{t + 1}-th most likely classes"
        )
        return max(4, t + 1), why
    if attack == "fab-t":
        return t + 1, f"n_target_classes={t} targets the 2nd..{t + 1}-th most likely classes"
    return 2, ""


def _check_classes(aa: Any, cfg: AutoAttackConfig, task: Task, n_classes: int) -> None:
    for a in aa.attacks_to_run:
        t = aa.apgd_targeted.n_target_classes if a == "apgd-t" else aa.fab.n_target_classes
        need, why = required_classes(a, t)
        if n_classes >= need:
            continue
        hint = (
            f"for the binary task use version='custom' with attacks={list(BINARY_ATTACKS)} "
            "(or version='standard' with attacks=['apgd-ce'])"
            if task.name == "binary"
            else "choose attacks without it, or set n_target_classes <= n_classes - 1"
        )
        raise ValueError(
            f"AutoAttack version={cfg.version!r} runs {a!r}, which needs >= {need} classes "
            f"({why}), but task {task.name!r} gives {n_classes} logits; {hint}"
        )


def autoattack(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    fine: torch.Tensor,
    eps: float,
    cfg: AutoAttackConfig,
    *,
    seed: int,
    box: tuple[float, float] | None,
    task: Task | str = "binary",
    on_batch: Callable[[], None] | None = None,
) -> AutoAttackResult:
    """AutoAttack at radius ``eps`` on images ``x`` (n, C, H, W) in ``box`` = (0, 1).

    ``y`` (n,) +-1 and ``fine`` (n,) int64 are the labels; ``task`` gives the logits and
    label AutoAttack sees, and judges the returned points (``x_adv`` is ``x`` wherever
    AutoAttack found nothing, so a point wrong before the attack stays wrong).
    ``on_batch()`` (progress) is called after each batch of each of its attacks.
    """
    task = get_task(task)
    if box is None or (float(box[0]), float(box[1])) != (0.0, 1.0):
        raise ValueError(
            f"AutoAttack assumes inputs in [0, 1] (it clamps every iterate to [0, 1]); got "
            f"box={box!r}. For box-less data (e.g. the cluster data) use PGD."
        )
    _check_inputs(x, y, fine, eps, seed)
    logits = task.logits(model)
    with attack_mode(logits):
        with torch.no_grad():
            n_classes = logits(x[:1]).shape[1] if x.shape[0] else 0
        aa = _build(logits, cfg, float(eps), seed, x.device)
        if on_batch is not None:
            _tick_after_batches(aa, on_batch)
        settings = _settings(aa, cfg, eps, seed, n_classes)
        if x.shape[0] == 0:
            return AutoAttackResult(
                torch.zeros(0, dtype=torch.bool, device=x.device), x.clone(), settings
            )
        _check_classes(aa, cfg, task, n_classes)
        if "square" in aa.attacks_to_run and x.ndim != 4:
            raise ValueError(
                f"square samples square patches of (n, C, H, W) images; got x of shape "
                f"{tuple(x.shape)}"
            )
        if eps == 0:
            x_adv = x.clone()
        else:
            log.debug("AutoAttack %s", settings)
            devices = [x.device.index or 0] if x.device.type == "cuda" else []
            with torch.random.fork_rng(devices=devices):
                x_adv, _ = aa.run_standard_evaluation(
                    x, task.labels(y, fine).to(x.device), batch_size=cfg.batch_size
                )
        # re-judge by the task (x_adv is x wherever AutoAttack found nothing)
        correct = correct_in_batches(task, model, x_adv, y, fine, cfg.batch_size)
    return AutoAttackResult(correct, x_adv, settings)


def _tick_after_batches(aa: Any, on_batch: Callable[[], None]) -> None:
    """Call ``on_batch()`` after every ``perturb`` of AutoAttack's attacks: its evaluation
    runs each attack batch by batch through them (``run_standard_evaluation``); what they
    compute is unchanged."""
    for attack in (aa.apgd, aa.apgd_targeted, aa.fab, aa.square):
        perturb = attack.perturb

        def ticking(*args, _perturb=perturb, **kwargs):
            out = _perturb(*args, **kwargs)
            on_batch()
            return out

        attack.perturb = ticking


def _check_inputs(x, y, fine, eps: float, seed: int) -> None:
    if not eps >= 0:
        raise ValueError(f"eps must be >= 0, got {eps}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if x.ndim < 2 or x.shape[0] != y.shape[0] or x.shape[0] != fine.shape[0]:
        raise ValueError(
            f"expected x (n, ...), y (n,), fine (n,); got {tuple(x.shape)}, "
            f"{tuple(y.shape)}, {tuple(fine.shape)}"
        )
    if x.numel() and (x.min() < 0 or x.max() > 1):
        raise ValueError(
            f"AutoAttack needs inputs in [0, 1], got values in [{x.min():.4g}, {x.max():.4g}]"
        )


def describe(cfg: AutoAttackConfig) -> dict[str, Any]:
    """What AutoAttack runs for ``cfg`` (flat: version, norm, attacks, per-attack iterations,
    restarts, ``use_largereps``...), without a model or data: the record that says which
    version a robust accuracy comes from (e.g. standard apgd-ce under L1: 5 restarts with
    ``use_largereps``)."""
    aa = _build(nn.Identity(), cfg, 1.0, 0, "cpu")
    s = _settings(aa, cfg, 1.0, 0, 0)
    return {k: v for k, v in s.items() if k not in ("eps", "seed", "n_classes")}


# ---- the ``autoattack`` kind of the attack suite (ibrobust.attacks.suite, ibrobust.kinds) --
def parse_spec(spec: dict) -> AutoAttackConfig:
    """A config entry (without ``kind``) -> validated settings (ValueError naming the key)."""
    strict_keys("autoattack", spec, {f.name for f in dataclasses.fields(AutoAttackConfig)})
    return AutoAttackConfig(**spec)


def run_spec(model, x, y, fine, eps: float, cfg: AutoAttackConfig, ctx, gen) -> torch.Tensor:
    """(n,) bool: still correct after AutoAttack at ``eps``; its seed is one draw of ``gen``."""
    seed = int(torch.randint(2**31 - 1, (1,), generator=gen))  # one draw per radius
    return autoattack(
        model, x, y, fine, eps, cfg, seed=seed, box=ctx.box, task=ctx.task, on_batch=ctx.tick
    ).correct
