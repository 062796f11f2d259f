"""Claims of Study PRICE-NN (Tsilivis et al., NeurIPS 2024, Sec. 5.2, App. E-F; docs/studies/
price_nn.md, "Claims"), kind ``price_nn``: declared in ``claims.yaml`` beside this module
(:mod:`ibrobust.claims.declared`), each with its quote, scope and the derivation of its rule.
The measurements and what they read (``figures/cells.csv``) are in
:mod:`ibrobust.studies.price_nn.measures`."""

from __future__ import annotations

from ibrobust.claims.core import Claim, StudyContext
from ibrobust.claims.declared import claims_file, load_claims
from ibrobust.studies.price_nn.measures import CONTEXT, MEASURES, SOURCES

__all__ = ["SOURCES", "claims"]  # what the ledger reads (ibrobust.ledger.table)


def claims(ctx: StudyContext) -> list[Claim]:
    return load_claims(claims_file(__file__), ctx, MEASURES, CONTEXT, "price_nn")
