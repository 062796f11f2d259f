"""A claim's quote as HTML: its LaTeX as MathML, its markdown emphasis, its editorial
insertions marked; everything else escaped.

The HTML ledger is read offline, with no script fetched at view time, so formulas are
converted here, server side: ``$..$`` and ``$$..$$`` go through latex2mathml to MathML
(which Chromium, Firefox and Safari render natively); a ``$$`` the quote cuts off before
its closing ``$$`` runs to the quote's end. The text between formulas goes through
markdown-it-py's inline parser (CommonMark emphasis ``**..**`` / ``*..*`` and code spans;
links, images, autolinks and raw HTML off, so a quote cannot inject markup). A formula that
latex2mathml cannot convert, or whose MathML is not plain MathML (an unknown command, markup
smuggled through ``\\text{..}``), falls back to its raw text, escaped, marked "LaTeX not
rendered": the ledger never fails on a quote. In a restored quote
(:mod:`ibrobust.claims.restorations`) each ``[..]`` insertion is wrapped in
``<span class="ed">``, its own math rendered the same way.
"""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET

import latex2mathml.converter
from markdown_it import MarkdownIt

from ibrobust.claims.restorations import INSERTION

MATHML_NS = "http://www.w3.org/1998/Math/MathML"
# MathML Core's presentation elements (no maction, no annotation-xml: nothing that can hold
# HTML or act on a click) and the attributes latex2mathml writes
MATHML_TAGS = frozenset(
    "math mrow mi mn mo ms mspace mtext msub msup msubsup munder mover munderover mfrac "
    "msqrt mroot mstyle merror mpadded mphantom mtable mtr mtd mlabeledtr mmultiscripts "
    "mprescripts none menclose mfenced semantics annotation".split()
)
MATHML_ATTRS = frozenset(
    "xmlns display mathvariant stretchy fence separator separators accent accentunder lspace "
    "rspace minsize maxsize movablelimits symmetric largeop form columnalign columnspacing "
    "columnlines rowalign rowspacing rowlines frame framespacing equalrows equalcolumns "
    "displaystyle scriptlevel width height depth voffset linethickness notation open close "
    "encoding".split()
)
MATH = re.compile(r"\$\$(.+?)\$\$|\$\$(.+)$|\$([^$]+?)\$", re.S)  # display, cut-off display, inline
NOT_RENDERED = "LaTeX not rendered"
_SLOT = "\ue000{}\ue001"  # a placeholder the inline parser passes through as text
_SLOTS = re.compile("\ue000(\\d+)\ue001")


class _Unsafe(ValueError):
    pass


def _clean(el: ET.Element) -> None:
    """Strip the namespace from ``el`` and its children, refusing anything but MathML."""
    for node in el.iter():
        tag = node.tag.removeprefix(f"{{{MATHML_NS}}}") if isinstance(node.tag, str) else ""
        if tag not in MATHML_TAGS:
            raise _Unsafe(f"element {node.tag!r}")
        node.tag = tag
        bad = [a for a in node.attrib if a not in MATHML_ATTRS]
        if bad:
            raise _Unsafe(f"attributes {bad} on {tag}")


def mathml(tex: str, display: bool = False) -> str:
    """``tex`` as one MathML element; ValueError when latex2mathml cannot convert it or its
    output is not plain MathML (an unknown command comes back as its own backslashed name)."""
    try:
        out = latex2mathml.converter.convert(tex, display="block" if display else "inline")
        root = ET.fromstring(out)
    except Exception as err:  # latex2mathml raises its own zoo of errors; all mean "no"
        raise ValueError(f"latex2mathml cannot convert {tex!r}: {type(err).__name__}") from err
    try:
        _clean(root)
    except _Unsafe as err:
        raise ValueError(f"{tex!r} gives non-MathML output: {err}") from err
    if any("\\" in (node.text or "") for node in root.iter() if node.tag != "mtext"):
        raise ValueError(f"{tex!r} has an unknown command")
    root.set("xmlns", MATHML_NS)
    return ET.tostring(root, encoding="unicode")


def formula_html(tex: str, display: bool = False, raw: str | None = None) -> str:
    """The formula as MathML, or ``raw`` (the formula as the quote has it, delimiters and
    all; default ``$tex$``) escaped and marked as not rendered."""
    try:
        return mathml(tex, display)
    except ValueError as err:
        shown = html.escape(f"${tex}$" if raw is None else raw)
        why = html.escape(str(err), quote=True)
        return (
            f'<span class="tex-raw" title="{why}"><code>{shown}</code> '
            f'<span class="tex-mark">({NOT_RENDERED})</span></span>'
        )


def _inline_parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False})
    md.disable(["link", "image", "autolink", "html_inline"])
    return md


_MD = _inline_parser()


def quote_html(quote: str, editorial: bool = False) -> str:
    """``quote`` as HTML (a fragment, safe to put inside an element): formulas as MathML,
    emphasis as ``<strong>`` / ``<em>``, the rest escaped; ``editorial``: a restored quote,
    whose ``[..]`` insertions are wrapped in ``<span class="ed">``."""
    parts: list[str] = []

    def slot(fragment: str) -> str:
        parts.append(fragment)
        return _SLOT.format(len(parts) - 1)

    text = str(quote)
    if editorial:  # insertions first: they may hold formulas of their own
        text = INSERTION.sub(
            lambda m: slot(
                '<span class="ed" title="editorial insertion: lost in the source\'s text">'
                f"[{quote_html(m.group(1))}]</span>"
            ),
            text,
        )

    def formula(m: re.Match) -> str:
        if m.group(3) is not None:
            return slot(formula_html(m.group(3), raw=m.group(0)))
        # $$..$$, or a $$ the quote cuts off: display math
        tex = m.group(1) if m.group(1) is not None else m.group(2)
        return slot(formula_html(tex, display=True, raw=m.group(0)))

    text = MATH.sub(formula, text)
    rendered = _MD.renderInline(text)
    return _SLOTS.sub(lambda m: parts[int(m.group(1))], rendered)
