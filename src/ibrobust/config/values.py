"""Value checks of a configuration that a JSON schema does not make: finite numbers and
integers that are integers.

* **Non-finite numbers.** JSON schema's ``minimum`` / ``exclusiveMinimum`` compare with
  ``<``, which is false for NaN, so ``radii: [0, .nan]`` or ``lr: .nan`` pass a schema;
  ``.inf`` passes every lower bound. No key of the workflow takes a non-finite value, so
  :func:`value_problems` refuses NaN and +-inf anywhere in the config tree (overlays and
  ``--config`` values included: they are merged into the tree it walks).
* **Floats where integers are meant.** Draft 6+ JSON schema counts ``1.0`` as an integer,
  so ``seeds: [0, 1.0]`` validated and reached a path as ``seed1.0``. Here an ``integer``
  of the schema is a Python ``int`` (not a bool, not a float with integral value).

Every problem names its key path in the message style of :mod:`ibrobust.config.validate`
(``config key studies.fa.seeds[1]: ...``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import jsonschema


@dataclass(frozen=True)
class Problem:
    """One bad value: where it is (key path parts) and what is wrong with it."""

    path: tuple[str | int, ...]
    message: str

    def __str__(self) -> str:
        return f"config key {key_path(self.path)}: {self.message}"


def key_path(parts: Sequence[str | int]) -> str:
    """``("studies", "fa", "seeds", 1)`` -> ``studies.fa.seeds[1]`` (``<root>`` when empty)."""
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "<root>"


def non_finite(value: Any, path: tuple[str | int, ...] = ()) -> Iterator[Problem]:
    """Every NaN or +-inf number in the tree ``value`` (mappings and lists), in tree order."""
    if isinstance(value, float) and not math.isfinite(value):
        yield Problem(path, f"{value} is not a finite number (NaN and infinities are never valid)")
    elif isinstance(value, dict):
        for k, v in value.items():
            if isinstance(k, float) and not math.isfinite(k):
                yield Problem(path, f"key {k} is not a finite number")
            yield from non_finite(v, (*path, k))
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            yield from non_finite(v, (*path, i))


def _is_strict_integer(checker: Any, instance: Any) -> bool:
    return isinstance(instance, int) and not isinstance(instance, bool)


_StrictIntegers = jsonschema.validators.extend(
    jsonschema.Draft7Validator,
    type_checker=jsonschema.Draft7Validator.TYPE_CHECKER.redefine("integer", _is_strict_integer),
)


def float_integers(config: dict, schema: dict) -> Iterator[Problem]:
    """Every float (``1.0``) where the schema wants an integer, by key path."""
    for e in _StrictIntegers(schema).iter_errors(config):
        types = e.validator_value if isinstance(e.validator_value, list) else [e.validator_value]
        if (
            e.validator == "type"
            and isinstance(e.instance, float)
            and "integer" in types
            and "number" not in types
        ):
            yield Problem(
                tuple(e.absolute_path),
                f"{e.instance!r} is a float where an integer is meant (write "
                f"{int(e.instance) if e.instance.is_integer() else 'an integer'})",
            )


def value_problems(config: dict, schema: dict) -> list[Problem]:
    """Non-finite numbers, then floats where integers are meant; each path once, in order."""
    out = list(non_finite(config))
    if out:  # a NaN is also a float where an integer may be meant: report it as non-finite
        return out
    seen: dict[tuple, Problem] = {}
    for p in float_integers(config, schema):
        seen.setdefault(p.path, p)  # a value under if/then and allOf is checked twice
    return list(seen.values())
