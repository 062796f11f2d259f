"""Claims of Study FA (Li, Pan, Lyu, Li, ICLR 2025; docs/studies/fa.md, "Claims"), kind
``feature_averaging``: declared in ``claims.yaml`` beside this module
(:mod:`ibrobust.claims.declared`), per dataset and trained net, then the scaling sweep's
(the critical radius's slopes on k and d, the lambda claims as trends over d). What each
claim measures, and the files it reads (:data:`SOURCES`), is :mod:`.measures` (the sweep's:
:mod:`.sweep_measures`); the names the file calls and the bounds it computes from d and k,
:mod:`.claim_context`."""

from __future__ import annotations

from ibrobust.claims.core import Claim, StudyContext
from ibrobust.claims.declared import claims_file, load_claims
from ibrobust.studies.feature_averaging.claim_context import CONSTANTS, CONTEXT, MEASURES
from ibrobust.studies.feature_averaging.measures import SOURCES

__all__ = ["SOURCES", "claims"]  # what the ledger reads (ibrobust.ledger.table)


def claims(ctx: StudyContext) -> list[Claim]:
    """Study FA's claims for each dataset of the study (each readout it evaluates, each
    trained net where it trains several), then the scaling sweep's: claims.yaml."""
    return load_claims(
        claims_file(__file__), ctx, MEASURES, CONTEXT, "feature_averaging", CONSTANTS
    )
