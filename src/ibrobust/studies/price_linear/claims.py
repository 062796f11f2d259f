"""Claims of Study PRICE-LIN (Tsilivis, Frank, Srebro, Kempe, NeurIPS 2024, Sec. 4-5.1,
App. C, E; docs/studies/price_linear.md, "Claims"), kind ``price_linear``: declared in
``claims.yaml`` beside this module (:mod:`ibrobust.claims.declared`), with which study judges
which claim (the paper's protocol at a moderate stopping loss; the limit in a study trained
to it). What each claim measures, and the files it reads (:data:`SOURCES`), is
:mod:`ibrobust.studies.price_linear.measures` (the limit's :mod:`.limit_measures`); the names
the file calls, :mod:`.claim_context`."""

from __future__ import annotations

from ibrobust.claims.core import Claim, StudyContext
from ibrobust.claims.declared import claims_file, load_claims
from ibrobust.studies.price_linear.claim_context import CONSTANTS, CONTEXT, MEASURES
from ibrobust.studies.price_linear.measures import SOURCES

__all__ = ["SOURCES", "claims"]  # what the ledger reads (ibrobust.ledger.table)


def claims(ctx: StudyContext) -> list[Claim]:
    """The protocol's claims (the edge of CD over GD by regime, and where it vanishes), then
    the limit's (the minimum-l1 separator): claims.yaml."""
    return load_claims(claims_file(__file__), ctx, MEASURES, CONTEXT, "price_linear", CONSTANTS)
