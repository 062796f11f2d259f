"""The ``ibrobust`` command (ibrobust.cli, the ``[project.scripts]`` entry point) end to end:
its help lists every command; ``claims diff`` in markdown and CSV; ``config docs`` and its
``--check``; ``config check``; ``sync`` runs the checkout's script, and without a
checkout says so. Each through a fresh interpreter, as the entry point runs it."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pandas as pd
import pytest
from test_claims_diff import AFTER, BEFORE

from ibrobust import cli
from ibrobust.config import load_schema
from ibrobust.config.docs import SCHEMA, render
from ibrobust.ledger.diff import DIFF_COLUMNS
from ibrobust.ledger.table import COLUMNS

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"


def ibrobust(*args: str, cwd: Path = ROOT, path: Path = SRC) -> subprocess.CompletedProcess:
    """``ibrobust ARGS`` as the console script runs it: ``main()``'s value is the status."""
    code = "import sys; from ibrobust.cli import main; sys.exit(main())"
    env = {**os.environ, "PYTHONPATH": str(path)}
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_the_entry_point_is_declared():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"ibrobust": "ibrobust.cli:main"}


def test_help_lists_every_command_with_its_help():
    out = ibrobust("--help")
    assert out.returncode == 0
    for name, words in [("claims", "compare ledgers"), ("config", "configuration reference"),
                        ("sync", "sync the run records")]:  # fmt: skip
        assert any(ln.split()[:1] == [name] and words in ln for ln in out.stdout.splitlines())
    for group, commands in [
        ("claims", ("diff", "excerpt", "render", "sweep")),
        ("config", ("docs", "check")),
    ]:
        text = ibrobust(group, "--help").stdout
        for c in commands:
            assert any(ln.split()[:1] == [c] and len(ln.split()) > 2 for ln in text.splitlines())
    assert ibrobust("claims").returncode == 2  # a group without its command: usage


def test_claims_diff_markdown_and_csv(tmp_path):
    for name, rows in (("before.csv", BEFORE), ("after.csv", AFTER)):
        pd.DataFrame(rows, columns=COLUMNS).to_csv(tmp_path / name, index=False)
    md = ibrobust("claims", "diff", "before.csv", "after.csv", cwd=tmp_path)
    assert md.returncode == 0 and md.stderr == ""
    assert md.stdout.startswith("Before: `before.csv` (7 claims); after: `after.csv` (7 claims).")
    assert "**Verdict changes** (2)" in md.stdout and "**Unchanged**" not in md.stdout
    every = ibrobust("claims", "diff", "before.csv", "after.csv", "--all", cwd=tmp_path)
    assert "**Unchanged** (3)" in every.stdout
    out = ibrobust("claims", "diff", "before.csv", "after.csv", "--format", "csv", cwd=tmp_path)
    table = pd.read_csv(io.StringIO(out.stdout))
    assert out.returncode == 0 and list(table.columns) == DIFF_COLUMNS and len(table) == 5
    missing = ibrobust("claims", "diff", "before.csv", "nope.csv", cwd=tmp_path)
    assert missing.returncode == 1 and "ibrobust claims diff:" in missing.stderr
    assert "nope.csv" in missing.stderr and "Traceback" not in missing.stderr


def test_config_docs_prints_and_checks(tmp_path):
    text = render(load_schema(SCHEMA))
    out = ibrobust("config", "docs", cwd=tmp_path)
    assert out.returncode == 0 and out.stdout == text
    stale = ibrobust("config", "docs", "--check", cwd=tmp_path)
    assert stale.returncode == 1 and "docs/config.md is missing" in stale.stderr
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "config.md").write_text(text + "edited\n")
    stale = ibrobust("config", "docs", "--check", cwd=tmp_path)
    assert stale.returncode == 1
    assert "docs/config.md is stale: ibrobust config docs > docs/config.md" in stale.stderr
    (tmp_path / "docs" / "config.md").write_text(text)
    assert ibrobust("config", "docs", "--check", cwd=tmp_path).returncode == 0
    assert ibrobust("config", "docs", "--check").returncode == 0  # this checkout's file


def test_config_check_names_the_file_and_line(tmp_path):
    (tmp_path / "good.yaml").write_text("threads: 1\n")
    (tmp_path / "bad.yaml").write_text("threads: 1\nthreads: 2\n")
    out = ibrobust("config", "check", "good.yaml", "bad.yaml", cwd=tmp_path)
    assert out.returncode == 1 and out.stdout == "good.yaml: ok\n"
    assert "bad.yaml, line 2: key 'threads' is written twice" in out.stderr


def test_sync_runs_the_checkouts_script_with_this_interpreter(monkeypatch):
    seen = []

    def run(cmd, check):
        seen.append(cmd)
        return subprocess.CompletedProcess(cmd, 3)

    monkeypatch.setattr(cli.subprocess, "run", run)
    # every argument after `sync` is the script's, options and --help included
    assert cli.main(["sync", "--tracking-uri", "sqlite:///x.db", "--help"]) == 3
    script = ROOT / "workflow_scripts" / "_tracking" / "sync.py"
    assert script.is_file()
    assert seen == [[sys.executable, str(script), "--tracking-uri", "sqlite:///x.db", "--help"]]


def test_sync_without_a_checkout_says_so(tmp_path):
    site = tmp_path / "site-packages"
    shutil.copytree(SRC / "ibrobust", site / "ibrobust",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    out = ibrobust("sync", "--help", cwd=tmp_path, path=site)
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.startswith(
        f"ibrobust sync: no workflow_scripts/_tracking/sync.py beside this ibrobust "
        f"({site / 'ibrobust'};"
    )
    assert "installed without one" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.skipif(
    not (Path(sys.executable).parent / "ibrobust").exists(),
    reason="the `ibrobust` script is not installed in this venv (pip install -e . adds it)",
)
def test_the_installed_script_runs_this_checkouts_cli():
    script = Path(sys.executable).parent / "ibrobust"
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    out = subprocess.run([script, "--help"], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "claims" in out.stdout and "sync" in out.stdout
