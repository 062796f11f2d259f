"""The per-study claim tables of docs/studies/ are generated from the claim files
(:mod:`ibrobust.ledger.claim_docs`, ``ibrobust claims docs``): a committed table that differs
from the generated one fails here, so the claims are never kept by hand a second time."""

from __future__ import annotations

from pathlib import Path

import pytest

from ibrobust.cli import checkout_config
from ibrobust.ledger.claim_docs import BEGIN, DOCS, END, PAGES, spliced, tables, written

REPO = Path(__file__).resolve().parents[2]


def test_every_study_page_holds_the_table_its_claim_file_generates():
    pages = written(checkout_config(REPO), REPO)
    assert {p.name for p in pages} == set(PAGES.values())
    for path, text in pages.items():
        assert path.read_text(encoding="utf-8") == text, (
            f"{path.relative_to(REPO)}: its claims table is stale: run `ibrobust claims docs`"
        )


def test_every_kind_with_a_claim_file_has_a_page():
    declared = {p.parent.name for p in (REPO / "src/ibrobust/studies").glob("*/claims.yaml")}
    assert declared <= set(PAGES)
    for page in PAGES.values():
        assert (REPO / DOCS / page).is_file()


def test_a_table_lists_each_claim_with_its_rule_and_measure():
    nn = tables(checkout_config(REPO))["price_nn"].splitlines()
    row = next(r for r in nn if r.startswith("| `price_nn.fc_erm_alike` |"))
    assert "SD - GD: strong within [-0.411, 0.411], weak within [-2.06, 2.06]" in row
    assert "`fc_erm`" in row and "| equivalence |" in row


def test_splicing_replaces_only_the_marked_block_and_needs_the_markers():
    page = f"# T\n\nprose\n\n{BEGIN}\n\nold\n\n{END}\n\nmore\n"
    assert (
        spliced(page, "| new |", "t.md") == f"# T\n\nprose\n\n{BEGIN}\n\n| new |\n\n{END}\n\nmore\n"
    )
    with pytest.raises(ValueError, match="t.md: no claims-table markers"):
        spliced("# T\n", "| new |", "t.md")


def test_the_cli_checks_the_tables(capsys):
    from ibrobust.cli import main

    assert main(["claims", "docs", "--check", "--repo", str(REPO)]) == 0
