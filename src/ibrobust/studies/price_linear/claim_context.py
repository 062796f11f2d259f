"""What Study PRICE-LIN's claim file (``claims.yaml``) names: the measures it calls
(:data:`MEASURES`, from :mod:`.measures` and :mod:`.limit_measures`), the functions of the
configuration it reads (:data:`CONTEXT`: the regimes' datasets, the stopping loss that
decides protocol or limit) and the eps grid's constants its texts show (:data:`CONSTANTS`)."""

from __future__ import annotations

from ibrobust.claims.core import StudyContext
from ibrobust.claims.declared import fixed
from ibrobust.studies.price_linear.limit_measures import limit_trend
from ibrobust.studies.price_linear.measures import (
    FIG1_FRACTION,
    NEAR_MIN,
    ROBUST_ERM_MAX,
    edge_cells,
    edge_change,
    growth_cells,
    near_margin_edge,
    regimes,
    robust_edge,
    small_n_edge,
    tradeoff_cells,
)

# ---- what the claim file reads from the configuration (CONTEXT) ---------------------------
LIMIT_LOSS = 1e-10  # a study stopping below this train loss trains to the limit (price_limit)


def stops_at(ctx: StudyContext) -> float:
    return float(ctx.config["stopping"]["loss_threshold"])


def limit_only(ctx: StudyContext) -> str | None:
    """``not_applicable`` of the limit claims: a study that stops at the paper's protocol."""
    if stops_at(ctx) >= LIMIT_LOSS:
        return (
            f"the study stops at train loss {stops_at(ctx):g} (the paper's protocol), where "
            "the normalised margin is still about log(n) / log(1/(n L)) from its t -> inf "
            "limit; the limit is judged in a study trained to a loss below "
            f"{LIMIT_LOSS:g} (configs: study price_limit)"
        )
    return None


def protocol_only(ctx: StudyContext) -> str | None:
    """``not_applicable`` of the protocol claims: they need the paper's stopping rule (a
    common, moderate train loss)."""
    if stops_at(ctx) < LIMIT_LOSS:
        return (
            f"the study trains to the limit (stopping loss {stops_at(ctx):g} < {LIMIT_LOSS:g}); "
            "the paper's generalization claims are judged in studies that stop at its "
            "protocol's common train loss"
        )
    return None


def needs_regime(ctx: StudyContext, regime: str) -> str | None:
    """``applies``: not run in a study without a dataset of that sparsity regime."""
    return None if regime in regimes(ctx) else f"the study has no {regime} regime"


def regime_name(ctx: StudyContext, regime: str, default: str | None = None) -> str:
    """The study's dataset of a sparsity regime (:func:`regimes`), else ``default`` (else
    the regime's own name): a claim's setting."""
    return regimes(ctx).get(regime, regime if default is None else default)


MEASURES = {
    "robust_edge": robust_edge,
    "growth_cells": growth_cells,
    "edge_cells": edge_cells,
    "edge_change": edge_change,
    "small_n_edge": small_n_edge,
    "tradeoff_cells": tradeoff_cells,
    "near_margin_edge": fixed(near_margin_edge),
    "limit_trend": limit_trend,
}
CONTEXT = {
    "protocol_only": protocol_only,
    "limit_only": limit_only,
    "needs_regime": needs_regime,
    "regime_name": regime_name,
}
CONSTANTS = {"robust_erm_max": ROBUST_ERM_MAX, "fig1_fraction": FIG1_FRACTION, "near_min": NEAR_MIN}
