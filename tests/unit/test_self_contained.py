"""The repository stands on its own: no tracked file cites a document a user who clones it
does not have (the project's own account of each study is docs/studies/<study>.md; cite its
file and section), and none names a path of the machine it was written on."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# spelled in pieces so that this file does not match itself
OUTSIDE_DOCS = ("SPEC" + ".md", "shared" + "/seeds")
ABSOLUTE = "/" + "work" + "/"


def tracked_files() -> list[str]:
    """The repository's tracked files (``git ls-files``; .git itself is never listed)."""
    try:
        out = subprocess.run(
            ["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError) as err:
        pytest.skip(f"not a git checkout: {err}")
    return [f for f in out.decode().split("\0") if f and (ROOT / f).is_file()]


def mentions(files: list[str], needles: tuple[str, ...]) -> list[str]:
    """``path:line: text`` of every line of ``files`` that contains one of ``needles``."""
    hits = []
    for f in files:
        text = (ROOT / f).read_bytes().decode("utf-8", errors="replace")
        for i, line in enumerate(text.splitlines(), 1):
            if any(n in line for n in needles):
                hits.append(f"{f}:{i}: {line.strip()[:120]}")
    return hits


def test_tracked_files_cite_no_outside_document_and_no_local_path():
    files = tracked_files()
    assert "Snakefile" in files and "README.md" in files  # the listing is the repository's
    outside = mentions(files, OUTSIDE_DOCS)
    hint = "cite docs/studies/<study>.md (file and section) instead"
    assert not outside, hint + ":\n" + "\n".join(outside)
    local = mentions(files, (ABSOLUTE,))
    assert not local, "absolute paths of a local machine:\n" + "\n".join(local)
