"""Config files read strictly (ibrobust.config.overlay): syntax errors and keys written twice name
the file and the line; the shipped configs pass; the workflow profile checks the
``--configfile`` overlays of the command line before Snakemake reads them."""

from __future__ import annotations

from pathlib import Path

import pytest

from ibrobust.config.overlay import (
    OverlayError,
    check_files,
    load_file,
    main,
)

REPO = Path(__file__).resolve().parents[2]


def write(tmp_path, text: str) -> Path:
    p = tmp_path / "overlay.yaml"
    p.write_text(text)
    return p


def test_shipped_configs_pass():
    files = [REPO / "config.yaml", *sorted((REPO / "configs").glob("*.yaml"))]
    files += sorted((REPO / "tests" / "workflow" / "configs").glob("*.yaml"))
    check_files(files)


@pytest.mark.parametrize(
    ("text", "where", "what"),
    [
        ("studies:\n  fa:\n    seeds: [0, 1\n  x: y\n", "line 4, column 4", "expected ',' or ']'"),
        ("a: 1\n b: 2\n", "line 2, column 3", "mapping values are not allowed here"),
        ("a:\n\t- 1\n", "line 2, column 1", "found character '\\t'"),
        ("a: [1, 2]]\n", "line 1, column 10", "expected <block end>"),
    ],
)
def test_syntax_error_names_file_line_and_column(tmp_path, text, where, what):
    p = write(tmp_path, text)
    with pytest.raises(OverlayError) as err:
        load_file(p)
    msg = str(err.value)
    assert msg.startswith(f"{p}, {where}: YAML syntax error: ") and what in msg, msg


def test_flow_sequence_error_names_where_it_opened(tmp_path):
    p = write(tmp_path, "studies:\n  fa:\n    seeds: [0, 1\n  x: y\n")
    with pytest.raises(OverlayError, match="while parsing a flow sequence from line 3"):
        load_file(p)


def test_key_written_twice_names_both_lines(tmp_path):
    p = write(tmp_path, "studies:\n  fa:\n    seeds: [0]\n    radii: [0, 1]\n    seeds: [2]\n")
    with pytest.raises(OverlayError) as err:
        check_files([p])
    assert str(err.value).startswith(f"{p}, line 5: key 'seeds' is written twice")
    assert "first on line 3" in str(err.value)


def test_equal_keys_in_different_mappings_are_fine(tmp_path):
    p = write(tmp_path, "a: {kind: x}\nb: {kind: y}\n")
    assert load_file(p) == {"a": {"kind": "x"}, "b": {"kind": "y"}}


@pytest.mark.parametrize("text", ["- 1\n- 2\n", "just a string\n", ""])
def test_document_must_be_a_mapping(tmp_path, text):
    with pytest.raises(OverlayError, match="a config file is a mapping of top-level keys"):
        check_files([write(tmp_path, text)])


def test_missing_file(tmp_path):
    with pytest.raises(OverlayError, match="cannot read the config file"):
        load_file(tmp_path / "absent.yaml")


def test_command_line_reports_each_file(tmp_path, capsys):
    good = tmp_path / "good.yaml"
    good.write_text("threads: 2\n")
    bad = write(tmp_path, "a: [\n")
    assert main([str(good), str(bad)]) == 1
    out, err = capsys.readouterr()
    assert out == f"{good}: ok\n" and err.startswith(f"{bad}, line 2")
