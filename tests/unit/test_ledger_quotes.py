"""A quote as the HTML ledger shows it (ibrobust.ledger.quotes): hand-written quotes render to
the expected MathML and emphasis elements, a formula that does not convert falls back to its
raw text marked "LaTeX not rendered", markup in a quote or smuggled through a formula is
escaped or refused, and a restored quote's [..] insertions are wrapped as editorial."""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest
from claims_fixtures import ROOT

from ibrobust.ledger.quotes import MATHML_NS, NOT_RENDERED, mathml, quote_html
from ibrobust.ledger.render import read_ledger, shown_quote
from ibrobust.ledger.table import with_restored_quotes


def _maths(fragment: str) -> list[ET.Element]:
    """The <math> elements of a rendered quote, parsed as XML."""
    return [ET.fromstring(m) for m in re.findall(r"<math\b.*?</math>", fragment, re.S)]


def _elements(fragment: str) -> list[tuple[str, dict]]:
    """Every element of an HTML fragment, in order: (tag, attributes)."""
    found: list[tuple[str, dict]] = []

    class Collect(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.append((tag, dict(attrs)))

    Collect().feed(fragment)
    return found


def _tags(el: ET.Element) -> list[str]:
    return [n.tag.removeprefix(f"{{{MATHML_NS}}}") for n in el.iter()]


def test_latex_and_emphasis_render_to_mathml_and_strong():
    html = quote_html(
        r"the model has nearly **zero δ -robust accuracy** for perturbation radius "
        r"$\delta = \Omega(\sqrt{d/k})$"
    )
    assert html.startswith("the model has nearly <strong>zero δ -robust accuracy</strong> for")
    assert "$" not in html and "**" not in html and "\\delta" not in html
    (m,) = _maths(html)
    assert m.tag == f"{{{MATHML_NS}}}math" and m.get("display") == "inline"
    tags = _tags(m)
    assert tags[:2] == ["math", "mrow"] and "msqrt" in tags
    text = [n.text for n in m.iter() if n.text and n.text.strip()]
    assert text == ["δ", "=", "Ω", "(", "d", "/", "k", ")"]
    sqrt = next(n for n in m.iter() if n.tag.endswith("msqrt"))
    assert [n.text for n in sqrt.iter() if n.text and n.text.strip()] == ["d", "/", "k"]


def test_single_star_emphasis_and_display_math():
    html = quote_html(r"*Lemma* (Weight Decomposition): $$\frac{a}{b} \geq 1$$ holds")
    assert html.startswith("<em>Lemma</em> (Weight Decomposition): <math")
    (m,) = _maths(html)
    assert m.get("display") == "block" and "mfrac" in _tags(m)
    assert [n.text for n in m.iter() if n.text and n.text.strip()] == ["a", "b", "≥", "1"]


def test_a_display_formula_the_quote_cuts_off_runs_to_its_end():
    html = quote_html(r"$$\lambda_{s,r,j}^{(T)} = \tilde{\Omega}(1), \frac{x}{y} = 1 \pm o(1)")
    (m,) = _maths(html)
    assert m.get("display") == "block" and "msubsup" in _tags(m) and "mfrac" in _tags(m)
    assert NOT_RENDERED not in html


@pytest.mark.parametrize(
    "formula, why",
    [
        (r"$\frac{a}{$", "cannot convert"),  # unbalanced braces: latex2mathml gives up
        (r"$\notacommand{x}$", "unknown command"),  # comes back as its own name
        (r"$\text{<b>bold</b>}$", "non-MathML"),  # markup smuggled through \text
        (r"$\text{<mi onclick='x'>a</mi>}$", "cannot convert"),  # not even XML
    ],
)
def test_a_formula_that_does_not_convert_falls_back_to_its_raw_text_marked(formula, why):
    out = quote_html(f"before {formula} after")
    assert out.startswith('before <span class="tex-raw"') and out.endswith(" after")
    assert f"<code>{html.escape(formula)}</code>" in out  # the raw text, escaped
    assert f"({NOT_RENDERED})" in out and why in out  # marked, the reason in the title
    elements = _elements(out)
    assert [tag for tag, _ in elements] == ["span", "code", "span"]  # no math, no <b>, <mi>
    assert all(not k.startswith("on") for _, attrs in elements for k in attrs)
    with pytest.raises(ValueError, match=why):
        mathml(formula.strip("$"))


def test_markup_in_a_quote_is_escaped_and_links_stay_text():
    out = quote_html('a <script>alert("x")</script> & [a link](javascript:alert(1)) <b>b</b>')
    assert _elements(out) == []  # no element at all: text
    assert "&lt;script&gt;" in out and "&amp;" in out and "[a link](javascript:alert(1))" in out


def test_a_restored_quotes_insertions_are_marked_editorial():
    q = r"when [$\varepsilon$] goes from [$0$] to [a larger $\varepsilon$] the edge grows"
    html = quote_html(q, editorial=True)
    spans = re.findall(r'<span class="ed"[^>]*>(.*?)</span>', html)
    assert len(spans) == 3 and all(s.startswith("[") and s.endswith("]") for s in spans)
    assert [len(_maths(s)) for s in spans] == [1, 1, 1]
    assert spans[2].startswith("[a larger <math")
    assert html.startswith("when <span") and html.endswith("</span> the edge grows")
    assert "editorial insertion" in html  # the span's title says what it is
    # the same text as a raw quote: brackets are text, the formulas still render
    plain = quote_html(q)
    assert 'class="ed"' not in plain and plain.count("[") == 3 and len(_maths(plain)) == 3


def test_every_quote_of_the_committed_ledger_renders_without_fallback():
    df = with_restored_quotes(read_ledger(ROOT / "docs" / "ledger" / "current.csv"))
    formulas = 0
    for _, r in df.drop_duplicates(["quote", "quote_restored"]).iterrows():
        html = quote_html(*shown_quote(r))
        assert NOT_RENDERED not in html and "$" not in html, r["id"]
        formulas += len(_maths(html))
    assert formulas >= 20  # the slides' and posters' LaTeX, and the restored math
