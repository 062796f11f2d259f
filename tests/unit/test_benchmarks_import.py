"""Every benchmark script imports against the current library (a script that names a moved
function fails here, not when a user runs it after a long study)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
SCRIPTS = sorted(p for p in BENCH.glob("*.py"))


@pytest.mark.parametrize("path", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_benchmark_script_imports(path, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))  # scripts import their helpers (_machine)
    spec = importlib.util.spec_from_file_location(f"bench_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)  # definitions only: each runs under __main__
    finally:
        sys.modules.pop(f"bench_{path.stem}", None)
    assert module.__doc__, f"{path.name} has no docstring saying what it prints"
