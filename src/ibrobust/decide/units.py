"""A study's unit lists: the config keys the planner extends, and which one a ledger row's
interval stands on.

A study declares its units as lists of integers named ``seeds`` (every network study, in
its block or in a part of it: ``price_nn.cnn.seeds``, ``prelu.synthetic.seeds``,
``fa.scaling.seeds``) or ``draws`` (PRICE-LIN's dataset draws); :func:`unit_keys` finds them
by walking the study's config block (the schema is the authority on each one's meaning; a
new study kind's lists are found the same way). A unit added is the next integer after the
list's largest (:func:`extended`), so that the units already run keep their outputs.

A ledger row belongs to the list whose part name (``cnn``, ``fc``, ``synthetic``,
``scaling``) is a word of its claim id or setting ("price_nn.cnn_gd_ahead", "FC net, ...",
"scaling sweep over k"); a row naming no part belongs to the study's top-level list, and a
row of a study whose lists are all parts and that names none is ambiguous (None: not
planned). Seeds of a study's scale ladder (``scale``) are never extended.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

UNIT_NAMES = ("seeds", "draws")  # the config keys that hold a study's units
SKIP_BLOCKS = ("scale",)  # a scale ladder's overrides: not units of the study itself


@dataclass(frozen=True)
class UnitKey:
    """One unit list of one study: ``path`` inside the study's block, e.g. ("cnn",
    "seeds"); ``values`` the units declared now."""

    study: str
    path: tuple[str, ...]
    values: tuple[int, ...]

    @property
    def name(self) -> str:
        """``price_nn.cnn.seeds``: the dotted config key below ``studies``."""
        return ".".join((self.study, *self.path))

    @property
    def part(self) -> str:
        """The part of the study the list belongs to ("" for the study's own list)."""
        return self.path[-2] if len(self.path) > 1 else ""

    @property
    def kind(self) -> str:
        return self.path[-1]


def unit_keys(study: str, block: Mapping) -> list[UnitKey]:
    """Every unit list of a study's (validated) config block, in the block's order."""
    out: list[UnitKey] = []

    def walk(node: Mapping, path: tuple[str, ...]) -> None:
        for key, value in node.items():
            if key in SKIP_BLOCKS:
                continue
            if isinstance(value, Mapping):
                walk(value, (*path, key))
            elif key in UNIT_NAMES and _int_list(value):
                out.append(UnitKey(study, (*path, key), tuple(int(v) for v in value)))

    walk(block, ())
    return out


def _int_list(value) -> bool:
    return (
        isinstance(value, Sequence)
        and not isinstance(value, str)
        and len(value) > 0
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    )


def _words(text: str) -> set[str]:
    return {w for w in re.split(r"[^a-z0-9]+", text.lower()) if w}


def key_of_row(keys: Sequence[UnitKey], claim_id: str, setting: str) -> UnitKey | None:
    """The unit list a ledger row stands on (see the module docstring); None: ambiguous."""
    words = _words(claim_id.split(".", 1)[-1]) | _words(setting)
    named = [k for k in keys if k.part and k.part.lower() in words]
    if len(named) == 1:
        return named[0]
    if named:
        return None
    own = [k for k in keys if not k.part]
    return own[0] if len(own) == 1 else None


def extended(values: Sequence[int], count: int) -> list[int]:
    """``values`` with ``count`` new units: the next integers after the largest."""
    if count < 0:
        raise ValueError(f"cannot add {count} units")
    top = max(values)
    return [*values, *range(top + 1, top + 1 + count)]


def overlay_path(key: UnitKey) -> tuple[str, ...]:
    """The key's path from the config's top: ("studies", study, *path)."""
    return ("studies", key.study, *key.path)


def study_look(looks: Sequence[Mapping[str, int]], study: str) -> int:
    """The look a study is at: 1 + the looks at which any of its lists changed."""
    look, prev = 1, None
    for counts in looks:
        mine = {k: v for k, v in counts.items() if k.split(".", 1)[0] == study}
        if prev is not None and mine != prev:
            look += 1
        prev = mine
    return look
