"""Config files read strictly: a YAML error or a key written twice names the file and line.

Snakemake reads ``--configfile`` overlays itself, before any code of the workflow runs,
with a loader that keeps the last of two equal keys without a word and reports a syntax
error as "Config file is not valid JSON or YAML", naming neither the file nor the line.
The workflow checks every config file while parsing (:func:`check_files`: a key written
twice names the file and both lines); a YAML syntax error stops Snakemake before that, with
its own message (``--verbose`` shows the parser's), and ``ibrobust config check FILE...``
(or ``python -m ibrobust.config.overlay FILE...``) names the file and line. (No hook runs
earlier through Snakemake's public interfaces: the profile's old one walked Snakemake's
call stack.)

Standalone (the standard library and yaml, no ``ibrobust`` import).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml


class OverlayError(ValueError):
    """A config file that cannot be read as intended; the message starts with file:line."""


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a mapping key written twice."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise OverlayError(
                    f"{key_node.start_mark.name}, line {line}: key {key!r} is written twice "
                    f"in one mapping (first on line {seen[key]}); Snakemake would silently "
                    "keep the last"
                )
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def load_file(path: str | os.PathLike) -> Any:
    """The YAML (or JSON) document of ``path``; OverlayError naming the file and line."""
    path = Path(path)
    try:
        with open(path, encoding="utf-8") as fh:
            return yaml.load(fh, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader
    except yaml.MarkedYAMLError as e:
        mark, ctx = e.problem_mark or e.context_mark, e.context_mark
        where = f"{path}, line {mark.line + 1}, column {mark.column + 1}" if mark else str(path)
        what = e.problem or e.context
        if e.problem and e.context:
            what += f" ({e.context}{f' from line {ctx.line + 1}' if ctx else ''})"
        raise OverlayError(f"{where}: YAML syntax error: {what}") from None
    except yaml.YAMLError as e:
        raise OverlayError(f"{path}: YAML error: {e}") from None
    except OSError as e:
        raise OverlayError(f"{path}: cannot read the config file ({e.strerror})") from None


def check_files(paths: Iterable[str | os.PathLike]) -> None:
    """OverlayError on the first file with a syntax error, a key written twice, or a
    document that is not a mapping of top-level keys."""
    for p in paths:
        doc = load_file(p)
        if not isinstance(doc, dict):
            raise OverlayError(
                f"{p}: a config file is a mapping of top-level keys, got {type(doc).__name__}"
            )


def main(argv: list[str]) -> int:
    """``ibrobust config check FILE...`` (``python -m ibrobust.config.overlay FILE...``): one
    line per file, exit 1 on any problem."""
    bad = 0
    for p in argv:
        try:
            check_files([p])
            print(f"{p}: ok")
        except OverlayError as e:
            print(e, file=sys.stderr)
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
