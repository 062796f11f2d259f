"""The robust-ERM block of a network optimizer (``optimizers.<name>.adversarial``) as a typed,
checked config, and the value check of the network optimizer kinds that have it
(:func:`check`: their ``check``, run by the config validation through
:data:`ibrobust.kinds.OPTIMIZERS`). Torch-free: the validation runs while Snakemake reads the
Snakefile. The training hook that uses it is :mod:`ibrobust.training.adversarial`."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields

from ibrobust.errors import SettingError, reported_at
from ibrobust.norms import NORMS


@dataclass(frozen=True)
class AdversarialConfig:
    eps: float = 0.0  # radius of the training threat model; 0 = plain ERM
    norm: str = "linf"  # "linf", "l2" or "l1"
    steps: int = 10
    step_size: float | None = None  # relative to eps; None = 2.5 / steps (Madry's rule)
    random_start: bool = True
    box: tuple[float, float] | None = (0.0, 1.0)  # input range (None: unbounded inputs)

    def __post_init__(self) -> None:
        if isinstance(self.eps, bool) or not isinstance(self.eps, int | float):
            raise SettingError("eps", f"eps must be a number, got {self.eps!r}")
        if not (math.isfinite(self.eps) and self.eps >= 0):
            raise SettingError("eps", f"eps must be finite and >= 0, got {self.eps}")
        if self.norm not in NORMS:
            raise SettingError("norm", f"norm must be one of {NORMS}, got {self.norm!r}")
        if self.box is not None:
            lo, hi = (float(v) for v in self.box)
            if not lo < hi:
                raise SettingError("box", f"box must be (lo, hi) with lo < hi, got {self.box!r}")
            object.__setattr__(self, "box", (lo, hi))
            if self.norm == "linf" and self.eps > hi - lo:
                raise SettingError(
                    "eps",
                    f"eps={self.eps} is outside [0, {hi - lo}]: an l_inf ball wider than the "
                    f"input box {self.box} lets the attack reach every input",
                )
        if isinstance(self.steps, bool) or not isinstance(self.steps, int) or self.steps < 1:
            raise SettingError("steps", f"steps must be a positive integer, got {self.steps!r}")
        if self.step_size is not None and not self.step_size > 0:
            raise SettingError("step_size", f"step_size must be > 0 or null, got {self.step_size}")
        if not isinstance(self.random_start, bool):
            raise SettingError(
                "random_start", f"random_start must be true or false, got {self.random_start!r}"
            )

    @property
    def active(self) -> bool:
        """False for plain ERM (eps = 0)."""
        return self.eps > 0


def adversarial_from_dict(d: Mapping | None) -> AdversarialConfig:
    """Typed config from a workflow entry (None -> plain ERM; unknown keys are an error
    naming them; a box list becomes a tuple)."""
    if d is None:
        return AdversarialConfig()
    names = {f.name for f in fields(AdversarialConfig)}
    unknown = sorted(set(d) - names)
    if unknown:
        raise ValueError(f"unknown adversarial key(s) {unknown}; expected some of {sorted(names)}")
    kw = dict(d)
    if isinstance(kw.get("box"), list):
        kw["box"] = tuple(kw["box"])
    return AdversarialConfig(**kw)


def check_adversarial(adv: Mapping | None, where: str) -> None:
    """A robust-ERM block at key path ``where`` (eps >= 0, an l_inf eps inside the input box's
    width ([0, 1] for images), ...): ConfigError naming the key (``<where>.eps: ...``)."""
    with reported_at(where):
        adversarial_from_dict(adv)


def check(entry: Mapping, where: str) -> None:
    """The ``check`` of a network optimizer kind (``gd``, ``sgd``, ``adam``): its robust-ERM
    block ``adversarial``, when it has one."""
    if entry.get("adversarial") is not None:
        check_adversarial(entry["adversarial"], f"{where}.adversarial")
