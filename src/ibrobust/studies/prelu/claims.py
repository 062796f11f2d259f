"""Claims of Study PRELU (Min & Vidal, ICML 2024; docs/studies/prelu.md, "Claims"), kind
``prelu``: declared in ``claims.yaml`` beside this module (:mod:`ibrobust.claims.declared`);
what each claim measures, and the files it reads (:data:`SOURCES`), is
:mod:`ibrobust.studies.prelu.measures`; the names the file calls, :mod:`.claim_context`."""

from __future__ import annotations

from ibrobust.claims.core import Claim, StudyContext
from ibrobust.claims.declared import claims_file, load_claims
from ibrobust.studies.prelu.claim_context import CONTEXT, MEASURES
from ibrobust.studies.prelu.measures import SOURCES

__all__ = ["SOURCES", "claims"]  # what the ledger reads (ibrobust.ledger.table)


def claims(ctx: StudyContext) -> list[Claim]:
    """The synthetic half's claims at the figure noise level (when the half is configured)
    and one Table-1 claim per column and task (not run when the MNIST half is not
    configured): claims.yaml."""
    return load_claims(claims_file(__file__), ctx, MEASURES, CONTEXT, "prelu")
