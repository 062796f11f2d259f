"""Claims of Study FA (Li, Pan, Lyu, Li, ICLR 2025; docs/studies/fa.md, "Claims"), kind
``feature_averaging``: declared in ``claims.yaml`` beside this module
(:mod:`ibrobust.claims.declared`), per dataset, trained net and readout, then the scaling
sweep's. What each claim measures, and the files it reads (:data:`SOURCES`), is
:mod:`ibrobust.studies.feature_averaging.measures`; what the file reads from the
configuration, :mod:`ibrobust.studies.feature_averaging.claim_context`."""

from __future__ import annotations

from ibrobust.claims.core import Claim, StudyContext
from ibrobust.claims.declared import claims_file, load_claims
from ibrobust.studies.feature_averaging.claim_context import CONSTANTS, CONTEXT
from ibrobust.studies.feature_averaging.measures import MEASURES, SOURCES

__all__ = ["SOURCES", "claims"]  # what the ledger reads (ibrobust.ledger.table)


def claims(ctx: StudyContext) -> list[Claim]:
    """Study FA's claims for each dataset of the study (and each readout it evaluates)."""
    return load_claims(
        claims_file(__file__), ctx, MEASURES, CONTEXT, "feature_averaging", CONSTANTS
    )
