"""Provenance: content hashes of the code a workflow script runs, and of the config.

Snakemake's ``code`` rerun trigger only watches a rule's script file. To rerun exactly
the rules whose code changed, the workflow passes ``code_hash(script)`` as a param:
the hash covers the script, the helper modules it imports from its own directory and
every ``ibrobust`` module it imports, transitively (static analysis of ``import``
statements, so nothing is executed). Editing ``ibrobust/studies/feature_averaging/plots.py`` therefore
changes the hash of the figure scripts only, and Snakemake reruns those jobs. Registry
kinds are loaded dynamically (``ibrobust.kinds``), so a rule adds the modules of its job's
own kinds explicitly (``modules=``): a job hashes the code it can actually run. A kind's
schema fragment beside its module (``c.schema.yaml``, or ``schema.yaml`` in a package) is
part of the kind: it is hashed with the module (its defaults reach jobs through the
config, but its capabilities, e.g. a model's training paths, are read by the code).
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

PACKAGE = "ibrobust"


@cache
def _package_dir() -> Path:
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"cannot locate the {PACKAGE} package")
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def _module_file(dotted: str) -> Path | None:
    """File of ``ibrobust.a.b`` (module or package __init__), or None."""
    parts = dotted.split(".")
    if parts[0] != PACKAGE:
        return None
    base = _package_dir().joinpath(*parts[1:])
    for cand in (base.with_suffix(".py"), base / "__init__.py"):
        if cand.is_file():
            return cand
    return None


def _import_pairs(path: Path):
    """(module, imported name or None) of every absolute import in a file, anywhere in it."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((a.name, None) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield from ((node.module, a.name) for a in node.names)


def imported_modules(path: str | Path) -> list[str]:
    """The absolute modules a file imports (top level and inside functions), sorted."""
    return sorted({m for m, _ in _import_pairs(Path(path))} - {"__future__"})


def _imports(path: Path) -> frozenset[str]:
    """Dotted names a file imports (``from a import b`` yields both a and a.b). Parsed once
    per file version in a process: the workflow hashes ~50 scripts whose closures share
    most modules, and parsing each anew was ~1.5 s of every ``snakemake`` call."""
    stat = path.stat()
    return _imports_of_version(path, stat.st_mtime_ns, stat.st_size)


@cache
def _imports_of_version(path: Path, mtime_ns: int, size: int) -> frozenset[str]:
    names: set[str] = set()
    for module, name in _import_pairs(path):
        names.add(module)
        if name is not None:
            names.add(f"{module}.{name}")
    return frozenset(names)


def fragment_of(path: Path) -> Path | None:
    """The schema fragment of a kind's module or package (None when it has none)."""
    frag = (
        path.parent / "schema.yaml"
        if path.name == "__init__.py"
        else path.with_suffix(".schema.yaml")
    )
    return frag if frag.is_file() else None


def data_of(path: Path) -> Path | None:
    """The data file a module reads as its own: ``x.yaml`` beside ``x.py`` (e.g.
    ``ibrobust/claims/restorations.yaml``), None when it has none."""
    data = path.with_suffix(".yaml")
    return data if path.suffix == ".py" and data.is_file() else None


def module_closure(script: str | Path, modules: tuple[str, ...] = ()) -> list[Path]:
    """The script plus every local helper and ``ibrobust`` module it (transitively) imports,
    plus the closures of the dotted ``modules`` (a job's kind modules, see ibrobust.kinds),
    with the schema fragment and the data file (:func:`data_of`) of each module that has
    one."""
    script = Path(script).resolve()
    local_dir = script.parent
    seen: dict[Path, None] = {}
    stack = [script]
    for dotted in modules:
        parts = dotted.split(".")
        files = [_module_file(".".join(parts[: i + 1])) for i in range(len(parts))]
        if files[-1] is None:
            raise ImportError(f"cannot locate module {dotted!r} for the code hash")
        stack.extend(f.resolve() for f in files if f is not None)
    while stack:
        f = stack.pop()
        if f in seen:
            continue
        seen[f] = None
        for name in _imports(f):
            cands = []
            if name.split(".")[0] == PACKAGE:
                parts = name.split(".")
                # importing a.b.c executes a/__init__, a/b/__init__ and a/b/c
                cands = [_module_file(".".join(parts[: i + 1])) for i in range(len(parts))]
            else:
                local = local_dir / (name.replace(".", "/") + ".py")
                cands = [local] if local.is_file() else []
            stack.extend(c.resolve() for c in cands if c is not None and c not in seen)
    fragments = {frag for f in seen if (frag := fragment_of(f)) is not None}
    data = {d for f in seen if (d := data_of(f)) is not None}
    return sorted({*seen, *fragments, *data})


def code_hash(script: str | Path, modules: tuple[str, ...] = ()) -> str:
    """sha256 (first 16 hex) over the contents of :func:`module_closure`."""
    h = hashlib.sha256()
    pkg_root = _package_dir().parent
    for f in module_closure(script, modules):
        try:
            rel = f.relative_to(pkg_root)
        except ValueError:
            rel = Path(f.name)
        h.update(str(rel).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def config_hash(config: Any) -> str:
    """sha256 (first 16 hex) of the canonical JSON of a config."""
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:16]


def git_commit(cwd: str | Path = ".") -> str:
    """HEAD commit (suffixed ``-dirty`` when tracked files changed), or ``unknown``."""
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        return rev + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dict -> flat dotted keys (lists kept as values)."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out
