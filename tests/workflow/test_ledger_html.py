"""The HTML ledger in a real browser: docs/ledger/current.csv rendered as `ibrobust claims
render` renders it, opened in headless Chromium at 1,280 px wide, reads without horizontal
scrolling (no cell's content wider than its cell), its quotes' formulas are MathML laid out
by the browser (none left as raw LaTeX), and the restored quotes' editorial insertions show.
The screenshots land in the test artifacts (docs/figures/claims_html.png is the first, as
committed). Skips without Chromium."""

from __future__ import annotations

import pytest
from ops_helpers import CHROMIUM_FLAGS, artifacts_dir, require_chromium
from smk_helpers import REPO

from ibrobust.ledger.render import ledger_html, read_ledger
from ibrobust.ledger.table import with_restored_quotes

WIDTH, HEIGHT = 1280, 1100  # the viewport of docs/figures/claims_html.png

OVERFLOW = """() => [...document.querySelectorAll('td, th')]
  .filter(c => c.scrollWidth > c.clientWidth + 1)
  .map(c => [c.closest('tr').querySelector('code')?.textContent ?? 'header', c.cellIndex,
             c.scrollWidth, c.clientWidth])"""


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    chromium = require_chromium()
    from playwright.sync_api import sync_playwright

    df = with_restored_quotes(read_ledger(REPO / "docs" / "ledger" / "current.csv"))
    path = tmp_path_factory.mktemp("ledger") / "claims.html"
    path.write_text(ledger_html(df))
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--headless", *CHROMIUM_FLAGS])
        try:
            page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
            page.goto(path.as_uri())
            yield page
        finally:
            browser.close()


def test_every_column_reads_at_1280_px(page):
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH
    assert page.evaluate(OVERFLOW) == []  # no cell's content runs into the next column
    widths = page.evaluate("[...document.querySelectorAll('th')].map(th => th.offsetWidth)")
    assert len(widths) == 9 and min(widths) >= 70  # every column keeps a readable width
    shots = artifacts_dir("ledger_html")
    page.screenshot(path=shots / "claims_html.png")
    print(f"ledger screenshots: {shots}")


def test_quotes_show_mathml_and_editorial_insertions(page):
    maths = page.evaluate("document.querySelectorAll('.quote math').length")
    boxes = page.evaluate(
        "[...document.querySelectorAll('.quote math')].map(m => m.getBoundingClientRect().width)"
    )
    assert maths >= 20 and min(boxes) > 0  # laid out as formulas, not hidden
    assert page.evaluate("document.querySelectorAll('.tex-raw').length") == 0
    text = page.evaluate("document.querySelector('#ledger tbody').innerText")
    assert "$\\" not in text and "**" not in text
    ed = page.evaluate("[...document.querySelectorAll('.quote .ed')].map(e => e.textContent)")
    assert ed and all(e.startswith("[") and e.endswith("]") for e in ed)
    page.evaluate(
        """() => { const c = [...document.querySelectorAll('td.id code')]
             .find(e => e.textContent === 'price.edge_rises_from_erm');
           window.scrollTo(0, c.getBoundingClientRect().top + window.scrollY - 40); }"""
    )
    page.screenshot(path=artifacts_dir("ledger_html") / "claims_html_restored.png")
