"""Quotes with their lost math restored (ibrobust.claims.restorations): the package's file fits
every claim of every config (each entry's raw text is its claims' quote, its restored text
minus its [..] insertions is the raw text), the quotes that visibly lost symbols all have an
entry, a bad entry is an error naming it, and the ledger keeps the raw quote beside the
restored one in the CSV and shows the restored one, marked, in markdown and HTML."""

from __future__ import annotations

import re
import textwrap

import pandas as pd
import pytest
from claims_fixtures import default_config
from test_claims_citations import CONFIGS, _claims

import ibrobust.claims.restorations as restorations_module
from ibrobust import cli
from ibrobust.claims.citations import TSILIVIS_2024
from ibrobust.claims.restorations import (
    Restoration,
    RestorationError,
    load_restorations,
    restorations,
    restored_quote,
    without_insertions,
)
from ibrobust.ledger.render import EDITORIAL, ledger_html, ledger_markdown, read_ledger
from ibrobust.ledger.table import build_ledger, study_outputs, with_restored_quotes

LOST = re.compile(r"\s[,.)]|\(,|\bgoes from to\b")  # a space before punctuation: a symbol went


def test_every_entry_fits_the_claims_it_names():
    table = restorations()
    quotes: dict[str, set[str]] = {}
    for config in CONFIGS:
        for _, c in _claims(config):
            quotes.setdefault(c.id, set()).add(c.citation.quote)
    for cid, entry in table.items():
        assert cid in quotes, f"{entry.where}: no claim {cid} in any config"
        assert quotes[cid] == {entry.raw}, entry.where
        assert restored_quote(cid, entry.raw) == entry.restored
        assert without_insertions(entry.restored) == " ".join(entry.raw.split())
        assert entry.insertions() and entry.note


def test_every_quote_that_lost_symbols_is_restored():
    lost = {
        c.id
        for config in CONFIGS
        for _, c in _claims(config)
        if c.citation.document == TSILIVIS_2024 and LOST.search(c.citation.quote)
    }
    assert "price.edge_rises_from_erm" in lost and "price.no_edge_regime" in lost
    assert lost <= set(restorations())
    # and the example reads as it should
    rise = restorations()["price.edge_rises_from_erm"]
    assert rise.restored.startswith(r"We also observe that when [$\varepsilon$] goes from [$0$]")


def test_without_insertions():
    assert without_insertions("with [$x$] where GD ([a], [b]), the") == "with where GD (, ), the"
    assert without_insertions("of [$\\varepsilon$], the") == "of , the"


def _file(tmp_path, body: str):
    path = tmp_path / "restorations.yaml"
    path.write_text(textwrap.dedent(body))
    return path


GOOD = """\
    restorations:
      - claims: [x.one, x.two]
        raw: when goes from to the edge grows.
        restored: when [$\\varepsilon$] goes from [$0$] to [$1$] the edge grows.
        note: read off the figure.
"""


def test_a_good_file_loads_by_claim_id(tmp_path):
    table = load_restorations(_file(tmp_path, GOOD))
    assert set(table) == {"x.one", "x.two"} and table["x.one"] is table["x.two"]
    entry = table["x.one"]
    assert isinstance(entry, Restoration) and entry.claims == ("x.one", "x.two")
    assert entry.insertions() == ["$\\varepsilon$", "$0$", "$1$"]
    assert entry.where == "restorations.yaml: entry 1 (x.one, x.two)"


@pytest.mark.parametrize(
    "change, message",
    [
        (("to [$1$] the", "to [$1$] then"), r"entry 1 \(x.one, x.two\): 'restored' minus its"),
        (("[$\\varepsilon$] goes from [$0$] to [$1$]", "goes from to"), "has no \\[..\\]"),
        (("note: read off the figure.", "nota: x"), "unknown keys \\['nota'\\]"),
        (("claims: [x.one, x.two]", "claims: []"), "entry 1: 'claims' must be"),
        (("raw: when", "raw: 'when [k]'\n        rawx: x"), "unknown keys"),
        (("raw: when goes", "raw: '[k] when goes'\n        #"), "cannot be restored"),
    ],
)
def test_a_bad_entry_is_an_error_naming_it(tmp_path, change, message):
    with pytest.raises(RestorationError, match=message):
        load_restorations(_file(tmp_path, GOOD.replace(*change)))


def test_a_claim_in_two_entries_is_an_error(tmp_path):
    twice = GOOD + GOOD.split("restorations:\n", 1)[1].replace("x.one, x.two", "x.three, x.one")
    with pytest.raises(RestorationError, match=r"entry 2 \(x.three, x.one\): claim x.one is also"):
        load_restorations(_file(tmp_path, twice))


def test_a_quote_changed_without_its_restoration_stops_the_ledger(tmp_path, monkeypatch):
    table = load_restorations(_file(tmp_path, GOOD))
    assert restored_quote("x.one", "when goes from to the edge grows.", table).startswith("when [")
    assert restored_quote("y.other", "anything", table) == ""  # needs none
    with pytest.raises(RestorationError, match=r"entry 1 \(x.one, x.two\): its raw text no longer"):
        restored_quote("x.one", "when eps goes from 0 to 1 the edge grows.", table)
    # the ledger checks every claim it builds, run or not
    stale = dict(restorations())
    stale["fa.binary_radius"] = Restoration(
        ("fa.binary_radius",), "an old quote", "an [old] quote", "n", "restorations.yaml: entry 9"
    )
    monkeypatch.setattr(restorations_module, "restorations", lambda: stale)
    with pytest.raises(RestorationError, match="entry 9: its raw text no longer matches claim fa"):
        build_ledger(study_outputs(default_config(), tmp_path))


def test_the_ledger_keeps_the_raw_quote_and_shows_the_restored_one(tmp_path):
    df = build_ledger(study_outputs(default_config(), tmp_path))
    rise = df[df.id == "price.edge_rises_from_erm"].iloc[0]
    raw = "We also observe that when goes from to the edge of CD over GD grows."
    assert rise.quote == raw and rise.quote_restored == restorations()[rise.id].restored
    assert (df[df.id == "fa.binary_radius"].quote_restored == "").all()  # needs none
    df.to_csv(tmp_path / "claims.csv", index=False)
    back = read_ledger(tmp_path / "claims.csv")
    assert back.quote.tolist() == df.quote.tolist()
    assert back.quote_restored.tolist() == df.quote_restored.tolist()
    md = ledger_markdown(df)
    assert f'"{rise.quote_restored}" {EDITORIAL}' in md and f'"{raw}"' not in md
    assert "a quote is shown with the math restored in square brackets" in md
    page = ledger_html(df)
    insertions = sum(len(restorations()[i].insertions()) for i in df.id if i in restorations())
    assert insertions > 3 and page.count('<span class="ed"') == insertions
    assert "marked in colour" in page and raw not in page


def test_a_ledger_written_before_the_column_gets_it_by_claim_id(tmp_path):
    df = build_ledger(study_outputs(default_config(), tmp_path))
    old = df.drop(columns="quote_restored")
    # an older ledger's quote for one claim: its row keeps an empty cell
    older = old.id == "price.no_edge_regime"
    old.loc[older, "quote"] = "an older quote"
    old.to_csv(tmp_path / "old.csv", index=False)
    back = read_ledger(tmp_path / "old.csv")
    assert (back.quote_restored == "").all()  # read as written: absent reads empty
    filled = with_restored_quotes(back)
    assert (filled.quote_restored[~older.to_numpy()] == df.quote_restored[~older]).all()
    assert (filled.quote_restored[older.to_numpy()] == "").all()
    assert filled.quote.tolist() == back.quote.tolist()  # the raw quotes untouched


def test_claims_render_writes_markdown_and_html_from_a_csv(tmp_path, capsys):
    df = build_ledger(study_outputs(default_config(), tmp_path))
    df.drop(columns="quote_restored").to_csv(tmp_path / "ledger.csv", index=False)
    assert cli.main(["claims", "render", str(tmp_path / "ledger.csv")]) == 0
    md, page = (tmp_path / "ledger.md").read_text(), (tmp_path / "ledger.html").read_text()
    assert md == ledger_markdown(df) and page == ledger_html(df)
    assert "rendered from" in capsys.readouterr().out
    out = tmp_path / "elsewhere.md"
    assert cli.main(["claims", "render", str(tmp_path / "ledger.csv"), "--md", str(out)]) == 0
    assert out.read_text() == md
    assert isinstance(pd.read_csv(tmp_path / "ledger.csv"), pd.DataFrame)
