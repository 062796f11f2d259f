"""Claims of Study FA-IMAGES (Li et al., ICLR 2025, Fig. 2/3; docs/studies/fa_images.md,
"Claims"), kind ``feature_averaging_images``: declared in ``claims.yaml`` beside this module
(:mod:`ibrobust.claims.declared`); what they measure is :mod:`.measures`."""

from __future__ import annotations

from ibrobust.claims.core import Claim, StudyContext
from ibrobust.claims.declared import claims_file, load_claims
from ibrobust.studies.feature_averaging_images.measures import CONTEXT, MEASURES, SOURCES

__all__ = ["SOURCES", "claims"]  # what the ledger reads (ibrobust.ledger.table)


def claims(ctx: StudyContext) -> list[Claim]:
    """One claim per dataset of the study that reproduces a paper task, report radius and
    readout (claims.yaml)."""
    return load_claims(claims_file(__file__), ctx, MEASURES, CONTEXT, "feature_averaging_images")
