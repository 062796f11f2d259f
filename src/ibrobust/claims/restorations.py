"""Quotes with their lost math restored: the ledger's readable form of a claim's quote.

The text rendering of a source can drop its symbols (the Tsilivis et al. 2024 paper's lost
every formula: "when goes from to the edge of CD over GD grows"). A claim's
:class:`~ibrobust.claims.citations.Citation` keeps that raw text, verbatim; the data file
``restorations.yaml`` beside this module gives, per quote, the claims quoting it and the
quote with the missing math restored in square brackets, each ``[..]`` an editorial
insertion. The ledger shows the restored quote and keeps the raw one
(:mod:`ibrobust.ledger.table`'s ``quote`` and ``quote_restored`` columns).

Checked, naming the entry: the file's form (:func:`load_restorations`); the restored text
minus its insertions is the raw text, up to whitespace; a claim id in one entry only; and,
for every claim the ledger builds, the entry's raw text is the claim's quote
(:func:`restored_quote`), so a quote edited without its restoration stops the ledger.
An insertion holds no square brackets itself, and a raw quote with square brackets cannot
be restored (its brackets could not be told from the insertions). The file is hashed with
the ledger's code (:func:`ibrobust.provenance.data_of`): editing it reruns only the ledger.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

RESTORATIONS_FILE = Path(__file__).with_name("restorations.yaml")
INSERTION = re.compile(r"\[([^\[\]]*)\]")  # one editorial insertion: [..], no brackets inside
FIELDS = ("claims", "raw", "restored", "note")


class RestorationError(ValueError):
    """A restorations file, or one of its entries, that does not fit the claims."""


@dataclass(frozen=True)
class Restoration:
    """One entry: the ``claims`` quoting ``raw``, the ``restored`` text, and where its math
    comes from (``note``); ``where`` names the entry in errors."""

    claims: tuple[str, ...]
    raw: str
    restored: str
    note: str
    where: str

    def insertions(self) -> list[str]:
        """The bracketed insertions, in order, without their brackets."""
        return INSERTION.findall(self.restored)


def _words(text: str) -> str:
    return " ".join(text.split())


def without_insertions(text: str) -> str:
    """``text`` with every ``[..]`` insertion removed, whitespace collapsed: the raw quote
    that a restored one was made from."""
    return _words(INSERTION.sub("", text))


def _entry(i: int, item: object, path: Path) -> Restoration:
    where = f"{path.name}: entry {i}"
    if not isinstance(item, Mapping):
        raise RestorationError(f"{where}: expected a mapping with keys {list(FIELDS)}")
    ids = item.get("claims")
    if isinstance(ids, list) and ids and all(isinstance(c, str) for c in ids):
        where = f"{where} ({', '.join(ids)})"
    else:
        raise RestorationError(f"{where}: 'claims' must be a non-empty list of claim ids")
    unknown = sorted(set(item) - set(FIELDS))
    if unknown:
        raise RestorationError(f"{where}: unknown keys {unknown} (allowed: {list(FIELDS)})")
    for key in ("raw", "restored", "note"):
        if not isinstance(item.get(key), str) or not item[key].strip():
            raise RestorationError(f"{where}: {key!r} must be a non-empty string")
    raw, restored = item["raw"], item["restored"]
    if not INSERTION.search(restored):
        raise RestorationError(f"{where}: 'restored' has no [..] insertion")
    if without_insertions(restored) != _words(raw):
        hint = (
            " (a raw quote with square brackets cannot be restored)"
            if "[" in raw or "]" in raw
            else ""
        )
        raise RestorationError(
            f"{where}: 'restored' minus its [..] insertions is not the raw quote{hint}:\n"
            f"  raw:      {_words(raw)!r}\n  restored: {without_insertions(restored)!r}"
        )
    return Restoration(tuple(ids), raw, _words(restored), _words(item["note"]), where)


def load_restorations(path: str | Path = RESTORATIONS_FILE) -> dict[str, Restoration]:
    """Claim id -> its entry, from ``path`` (the package's file by default), every entry
    checked; :class:`RestorationError` naming the file and entry otherwise."""
    path = Path(path)
    data = yaml.safe_load(path.read_text())
    items = data.get("restorations") if isinstance(data, Mapping) else None
    if not isinstance(items, list):
        raise RestorationError(f"{path.name}: expected a top-level 'restorations' list")
    by_id: dict[str, Restoration] = {}
    for i, item in enumerate(items, start=1):
        entry = _entry(i, item, path)
        for cid in entry.claims:
            if cid in by_id:
                raise RestorationError(f"{entry.where}: claim {cid} is also in {by_id[cid].where}")
            by_id[cid] = entry
    return by_id


@functools.cache
def restorations() -> dict[str, Restoration]:
    """The package's restorations (read once)."""
    return load_restorations()


def restored_quote(
    claim_id: str, quote: str, table: Mapping[str, Restoration] | None = None
) -> str:
    """The restored form of claim ``claim_id``'s ``quote``, or "" when it needs none.
    :class:`RestorationError` naming the entry when the entry's raw text is not the quote
    (the claim's quote changed and the restoration did not)."""
    entry = (restorations() if table is None else table).get(claim_id)
    if entry is None:
        return ""
    if entry.raw != quote:
        raise RestorationError(
            f"{entry.where}: its raw text no longer matches claim {claim_id}'s quote; "
            f"update the entry to the quote {quote!r}"
        )
    return entry.restored
