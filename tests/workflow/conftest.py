"""Fixtures of the end-to-end workflow tests.

``tiny_run`` runs the whole tiny Study FA once per session (``-s`` the repository's
Snakefile, ``-d`` a fresh temporary directory; nothing is copied from the repository)
and every read-only test reuses it. Tests that change something work on their own copy
of its results/ and .snakemake/ (``cp -a``, so mtimes and Snakemake's metadata are
kept and reruns plan only what the change touches): ``state_copy``, and ``repo_copy``
for edits of the workflow or library code.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from smk_helpers import Run, copy_repo, copy_state, snakemake


@dataclass
class TinyRun:
    workdir: Path
    run: Run

    @property
    def results(self) -> Path:
        return self.workdir / "results"


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory) -> TinyRun:
    workdir = tmp_path_factory.mktemp("tiny_run")
    run = snakemake(workdir, "--cores", "2", timeout=1200)
    print(f"tiny workflow: {run.seconds:.1f} s")
    if run.returncode != 0:
        pytest.fail("the tiny workflow failed\n" + run.describe(), pytrace=False)
    return TinyRun(workdir, run)


@pytest.fixture
def state_copy(tiny_run, tmp_path) -> Path:
    """A working dir holding a copy of the finished tiny run (results + metadata)."""
    return copy_state(tiny_run.workdir, tmp_path / "work")


@pytest.fixture
def repo_copy(tmp_path) -> Path:
    """A copy of the workflow *and* library (src/); returns its Snakefile.

    Run it with ``PYTHONPATH=<copy>/src`` so both the Snakefile (code hashes) and the
    jobs import the copy's ``ibrobust`` instead of the editable install.
    """
    return copy_repo(tmp_path / "repo", with_src=True)
