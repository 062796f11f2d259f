"""Config files read strictly: a YAML error or a key written twice names the file and line.

Snakemake reads ``--configfile`` overlays itself, before any code of the workflow runs,
with a loader that keeps the last of two equal keys without a word and reports a syntax
error as "Config file is not valid JSON or YAML", naming neither the file nor the line.
So the overlays are checked earlier, by :func:`check_command_line`, which the workflow
profile (``profiles/default/config.yaml``, loaded by Snakemake before it reads the
overlays) calls; the workflow checks every config file again while parsing
(:func:`check_files`, for runs without that profile); and ``ibrobust config check FILE...``
(or ``python -m ibrobust.config.overlay FILE...``) checks files by hand.

Standalone (the standard library and yaml, no ``ibrobust`` import): the profile loads this
file by its path, before and without the package.
"""

from __future__ import annotations

import argparse
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


def configfiles_of(argv: list[str]) -> list[str]:
    """The ``--configfile``/``--configfiles`` arguments of a snakemake command line, read
    as Snakemake reads them (each takes one or more files; ``--configfile=F`` too). Other
    options are skipped; [] for a command line this cannot read (Snakemake then judges it)."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False, exit_on_error=False)
    parser.add_argument("--configfile", "--configfiles", nargs="+", action="extend")
    parser.add_argument("--config", "-C", nargs="*")  # so --config is not taken for them
    try:
        args, _ = parser.parse_known_args(argv)
    except (argparse.ArgumentError, SystemExit):
        return []
    return list(args.configfile or [])


def check_command_line(argv: list[str] | None = None) -> None:
    """Check the ``--configfile`` overlays of this snakemake command line (``sys.argv``)
    before Snakemake reads them: on a problem, say which file and line and exit with
    status 1, as Snakemake does for a bad config file."""
    files = configfiles_of(sys.argv[1:] if argv is None else argv)
    try:
        check_files(files)
    except OverlayError as e:
        print(f"ibrobust: invalid config file: {e}", file=sys.stderr, flush=True)
        raise SystemExit(1) from None


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
