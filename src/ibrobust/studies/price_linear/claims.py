"""Claims of Study PRICE-LIN (Tsilivis, Frank, Srebro, Kempe, NeurIPS 2024, Sec. 4-5.1,
App. C, E; docs/studies/price_linear.md, "Claims"), kind ``price_linear``: the catalog (each
claim's quote, source, rule and its derivation) and which study judges which claim (the
paper's protocol at a moderate stopping loss; the limit in a study trained to it). What each
claim measures, and the files it reads (:data:`SOURCES`), is
:mod:`ibrobust.studies.price_linear.measures`.
"""

from __future__ import annotations

from ibrobust.claims.citations import TSILIVIS_2024, Citation
from ibrobust.claims.core import Claim, StudyContext, at_least, at_most, between
from ibrobust.studies.price_linear.measures import (
    FIG1_FRACTION,
    NEAR_MIN,
    ROBUST_ERM_MAX,
    SOURCES,
    edge_change,
    limit_margin,
    near_margin_edge,
    regimes,
    robust_edge,
    small_n_edge,
)

__all__ = ["SOURCES", "claims"]  # what the ledger reads (ibrobust.ledger.table)

LIMIT_LOSS = 1e-10  # a study stopping below this train loss trains to the limit (price_limit)
EQUIV = (0.01, 0.03)  # docs/studies/README.md, rule P4: "the same" within 1 (3) points


# ---- applicability ------------------------------------------------------------------------------
def _needs(regime: str):
    def applies(ctx: StudyContext) -> str | None:
        if regime not in regimes(ctx):
            return f"the study has no {regime} regime"
        return None

    return applies


def _stops_at(ctx: StudyContext) -> float:
    return float(ctx.config["stopping"]["loss_threshold"])


def _protocol_only(ctx: StudyContext) -> str | None:
    """The paper's protocol claims need its stopping rule (a common, moderate train loss)."""
    if _stops_at(ctx) < LIMIT_LOSS:
        return (
            f"the study trains to the limit (stopping loss {_stops_at(ctx):g} < {LIMIT_LOSS:g}); "
            "the paper's generalization claims are judged in studies that stop at its "
            "protocol's common train loss"
        )
    return None


def _limit_only(ctx: StudyContext) -> str | None:
    if _stops_at(ctx) >= LIMIT_LOSS:
        return (
            f"the study stops at train loss {_stops_at(ctx):g} (the paper's protocol), where "
            "the normalised margin is still about log(n) / log(1/(n L)) from its t -> inf "
            "limit; the limit is judged in a study trained to a loss below "
            f"{LIMIT_LOSS:g} (configs: study price_limit)"
        )
    return None


# ---- the claims ----------------------------------------------------------------------------
LINEAR = (
    "full-batch steepest descent (GD = l2, CD = l1) and GD on a diagonal net, linear models "
    "on teacher data, worst-case exponential loss, l_inf robust ERM, loss-adaptive step, "
    "zero init; trained until all algorithms reach the same train loss"
)


def _cite(where: str, quote: str, scope: str = LINEAR) -> Citation:
    return Citation(TSILIVIS_2024, where, quote, scope)


RISE = _cite(
    "Sec. 5.1, Results, on Fig. 2 (right)",
    "We also observe that when goes from to the edge of CD over GD grows.",
)
FALL = _cite(
    "Sec. 5.1, Results, on Fig. 2 (right); App. C.2, Lemma C.4",
    "Past a certain threshold of , the two methods will start to perform the same, since for "
    "the algorithms return the same solution (Lemma C.4).",
)
ROBUST_CELLS = f"the robust-ERM cells (0 < eps/gamma* <= {ROBUST_ERM_MAX:g})"


def claims(ctx: StudyContext) -> list[Claim]:
    """The protocol's claims (the edge of CD over GD by regime, and where it vanishes), then
    the limit's (the minimum-l1 separator)."""
    rg = regimes(ctx)
    return [
        *_gd_minus_claims(rg),
        *_edge_trend_claims(rg),
        *_regime_claims(rg),
        *_dense_claims(rg),
        _vanishes_claim(),
        *_limit_claims(ctx),
    ]


def _gd_minus_claims(rg: dict[str, str]) -> list[Claim]:
    out: list[Claim] = []
    sparse_w = rg.get("sparse w*", "sparse teacher, dense x")
    for alg, label in (("cd", "coordinate descent (l1 bias)"), ("diag_gd", "a diagonal net")):
        out.append(
            Claim(
                id=f"price.gd_minus_{alg}",
                setting=f"{sparse_w}, {ROBUST_CELLS}",
                claim=f"For l_inf robust ERM with a sparse teacher, {label} generalizes "
                "robustly better than GD's l2 bias (a smaller robust generalization gap).",
                citation=_cite(
                    "Sec. 5.1, Results, on Fig. 2 (left)",
                    "CD and diag-net-GD already outperform GD in terms of generalization when "
                    "implementing ERM, as a result of their bias towards minimum (sparse "
                    "solutions). However, in agreement with the bounds of Section 3.2, the "
                    "interval between the algorithms grows when performing robust ERM",
                ),
                derivation="The text gives no number for the gap difference: strong = weak "
                "(P5, the direction): gap(GD) - gap(" + alg + ") > 0, averaged over n and over "
                "the robust-ERM cells of the grid (the figure's own eps is not in the text).",
                paper="GD's gap exceeds CD's / the diagonal net's (Fig. 2 left)",
                measure=f"robust gap (train - test robust accuracy) of GD minus {alg}'s, paired "
                "by draw, mean over n and the robust-ERM cells: one value per draw",
                rule=at_least("gap difference", 0.0, 0.0, strict=True),
                compute=robust_edge("sparse w*", alg),
                sources=("summary", "problems"),
                applies=_needs("sparse w*"),
                not_applicable=_protocol_only,
            )
        )
    return out


def _edge_trend_claims(rg: dict[str, str]) -> list[Claim]:
    out: list[Claim] = []
    for regime in ("dense/dense", "sparse w*", "sparse/sparse"):
        ds = rg.get(regime, regime)
        out += [
            Claim(
                id="price.edge_rises_from_erm",
                setting=f"{ds}: {ROBUST_CELLS} vs eps = 0",
                claim="The edge of CD over GD (gap(GD) - gap(CD)) is larger under robust ERM "
                "than under ERM: it grows as eps rises from 0.",
                citation=RISE,
                derivation="A trend over the grid: the mean edge over every robust-ERM cell "
                "minus the edge at eps = 0 (paired by draw), not two hand-picked points. No "
                "number in the text: strong = weak (P5): > 0. Judged in the regimes where "
                "the paper shows CD ahead (Fig. 1 bottom: dense/dense; Fig. 2 left: sparse "
                "w*; Sec. 3.2 Case 4: sparse/sparse, 'as eps increases, l2 regularization "
                "starts paying'); the fourth is price.no_edge_regime.",
                paper="the edge grows as eps rises from 0 (Fig. 2 right); the interval between "
                "the algorithms grows under robust ERM (Fig. 2 left)",
                measure="per draw: [edge mean over n and the robust-ERM cells] - [edge mean "
                "over n at eps = 0]",
                rule=at_least("edge(robust ERM) - edge(ERM)", 0.0, 0.0, strict=True),
                compute=edge_change(regime, "erm", "robust"),
                sources=("summary", "problems"),
                applies=_needs(regime),
                not_applicable=_protocol_only,
            ),
            Claim(
                id="price.edge_falls_toward_margin",
                setting=f"{ds}: {ROBUST_CELLS} vs the grid's largest eps below gamma*",
                claim="Past a threshold of eps the edge shrinks again: near gamma* the two "
                "methods perform about the same.",
                citation=FALL,
                derivation="A trend over the grid: the mean edge over the robust-ERM cells "
                "minus the edge at the largest grid eps below gamma* (the approach to the "
                "margin), paired by draw. No number in the text: strong = weak (P5): > 0. "
                "Same regimes as price.edge_rises_from_erm.",
                paper="the methods perform the same past a threshold of eps (Fig. 2 right)",
                measure="per draw: [edge mean over n and the robust-ERM cells] - [edge mean "
                "over n at the largest eps/gamma* < 1]",
                rule=at_least("edge(robust ERM) - edge(near gamma*)", 0.0, 0.0, strict=True),
                compute=edge_change(regime, "near", "robust"),
                sources=("summary", "problems"),
                applies=_needs(regime),
                not_applicable=_protocol_only,
            ),
        ]
    return out


def _regime_claims(rg: dict[str, str]) -> list[Claim]:
    """The no-edge regime (dense teacher, sparse x) and the dense regime under ERM."""
    dense, sparse_x = rg.get("dense/dense", "dense/dense"), rg.get("sparse x", "sparse x")
    return [
        Claim(
            id="price.no_edge_regime",
            setting=f"{sparse_x}, {ROBUST_CELLS}",
            claim="With a dense teacher and sparse inputs CD does not beat GD under robust "
            "ERM: the problem is skewed towards dense solutions.",
            citation=_cite(
                "Sec. 5.1, Results, on Fig. 2 (right); App. E on Fig. 5 (top); Sec. 3.2 Case 3",
                "there are cases with where CD does not outperform GD (, ), because the "
                "learning problem is much more “skewed” towards dense solutions.",
            ),
            derivation="The regime is the paper's Dense, Sparse (k_w, k_x) = (512, 4) (App. E: "
            "'(512, 4) (Dense, Sparse)'; Case 3: the l1 bound is not favourable there). 'CD "
            "does not outperform GD' includes a tie: the edge gap(GD) - gap(CD) over the "
            f"robust-ERM cells at most +{EQUIV[0]:g} (strong, P4's equivalence margin) or "
            f"+{EQUIV[1]:g} (weak); it does not hold when CD is clearly ahead.",
            paper="CD does not outperform GD in the dense-teacher, sparse-x regime",
            measure="per draw: gap(GD) - gap(CD), mean over n and the robust-ERM cells",
            rule=at_most("gap difference", EQUIV[0], EQUIV[1]),
            compute=robust_edge("sparse x"),
            sources=("summary", "problems"),
            applies=_needs("sparse x"),
            not_applicable=_protocol_only,
        ),
        Claim(
            id="price.dense_erm_alike",
            setting=f"{dense}, eps = 0 (ERM)",
            claim="With dense teacher and dense inputs the algorithms generalize alike under ERM.",
            citation=_cite(
                "Sec. 5.1, Results, on Fig. 1 (bottom)",
                "the algorithms generalize similarly when implementing ERM, yet their gap "
                "between their robust generalization in robust ERM exceeds 20% in the case of "
                "few training data!",
            ),
            derivation=f"'Similarly' (P4, equivalence): the edge at eps = 0 within +-"
            f"{EQUIV[0]:g} (strong) or +-{EQUIV[1]:g} (weak), mean over n.",
            paper="GD and CD generalize similarly under ERM (Fig. 1 bottom)",
            measure="per draw: gap(GD) - gap(CD) at eps = 0, mean over n",
            rule=between("gap difference", (-EQUIV[0], EQUIV[0]), (-EQUIV[1], EQUIV[1])),
            compute=robust_edge("dense/dense", cells="erm"),
            sources=("summary", "problems"),
            applies=_needs("dense/dense"),
            not_applicable=_protocol_only,
        ),
    ]


def _dense_claims(rg: dict[str, str]) -> list[Claim]:
    """The dense regime's robust-gap difference at small n and its clean-gap trade-off."""
    dense = rg.get("dense/dense", "dense/dense")
    return [
        Claim(
            id="price.dense_robust_gap_20",
            setting=f"{dense}, smallest n, eps = {FIG1_FRACTION:g} gamma*",
            claim="With dense teacher and dense inputs the robust-gap difference between GD "
            "and CD exceeds 20 % with few training data.",
            citation=_cite(
                "Sec. 5.1, Results, on Fig. 1 (bottom)",
                "yet their gap between their robust generalization in robust ERM exceeds 20% "
                "in the case of few training data!",
            ),
            derivation="The source's number is a bound read off one figure at one eps ('exceeds "
            "20%'): strong: the edge at the grid's smallest n >= 0.20, in one cell declared "
            f"before any run (the figure's eps is lost in the text): eps = {FIG1_FRACTION:g} "
            "gamma*, the middle robust-ERM cell. Weak (the same direction): > 0.",
            paper="> 0.20 at small n (Fig. 1 bottom)",
            measure=f"per draw: gap(GD) - gap(CD) at the smallest n and eps = {FIG1_FRACTION:g} "
            "gamma* (one cell)",
            rule=at_least("gap difference", 0.20, 0.0, strict=True),
            compute=small_n_edge("dense/dense"),
            sources=("summary", "problems"),
            applies=_needs("dense/dense"),
            not_applicable=_protocol_only,
        ),
        Claim(
            id="price.clean_tradeoff",
            setting=f"{dense}, the grid's largest eps below gamma*, clean gaps",
            claim="With dense teacher and dense inputs, robust ERM by GD generalizes better "
            "than by CD on clean error although worse on robust error.",
            citation=_cite(
                "App. E, on Fig. 6 (clean-gap heatmaps)",
                "GD generalizes better than CD in terms of clean error, even though it was the "
                "other way around for robustness",
            ),
            derivation="The text names one cell of the heatmap: the Dense, Dense regime at its "
            "'bottom right corner' (its eps value is lost); the heatmaps aggregate over n and "
            "put eps on the horizontal axis, so the corner is read as the grid's largest eps "
            "below gamma*. No number: strong = weak (P5): the clean-gap edge gap_clean(GD) - "
            "gap_clean(CD) < 0 there, mean over n.",
            paper="GD's clean gap below CD's in Dense/Dense robust ERM (Fig. 6)",
            measure="per draw: clean gap (train - test clean accuracy) of GD minus CD's, mean "
            "over n, at the grid's largest eps/gamma* < 1",
            rule=at_most("clean gap difference", 0.0, 0.0, strict=True),
            compute=robust_edge("dense/dense", cells="near", gap="clean"),
            sources=("summary", "problems"),
            applies=_needs("dense/dense"),
            not_applicable=_protocol_only,
        ),
    ]


def _vanishes_claim() -> Claim:
    return Claim(
        id="price.vanishes_at_margin",
        setting="every regime, the grid's largest eps below gamma*, runs that converged",
        claim="As eps approaches the dataset's l_inf margin gamma*, every robust separator "
        "becomes max-margin, so GD and CD generalize alike.",
        citation=_cite(
            "App. C.2, Lemma C.4; Sec. 4.1",
            "Any hyperplane that separates is an max-margin separator for any .",
            scope="exactly eps = gamma*, the limit (max-margin) solutions",
        ),
        derivation="Lemma C.4 holds exactly at eps = gamma*, where no run can reach the "
        "stopping loss (every separator's robust margin is <= 0 there, so the loss stays "
        f">= 1/n): the claim is judged at the grid's largest eps below gamma* (at least "
        f"{NEAR_MIN:g} gamma*), on the "
        "(n, draw) cells where both GD and CD reached the stopping loss (converged runs, "
        f"as the lemma assumes). 'The same' (P4, equivalence): the signed edge within "
        f"+-{EQUIV[0]:g} (strong) or +-{EQUIV[1]:g} (weak).",
        paper="0 at eps = gamma* (Lemma C.4)",
        measure="per (regime, draw): signed gap(GD) - gap(CD) at the largest eps/gamma* < 1, "
        "mean over the n where both runs converged",
        rule=between("gap difference", (-EQUIV[0], EQUIV[0]), (-EQUIV[1], EQUIV[1])),
        compute=near_margin_edge,
        sources=("summary", "problems"),
        not_applicable=_protocol_only,
    )


def _limit_claims(ctx: StudyContext) -> list[Claim]:
    out: list[Claim] = []
    # robust separation at the robust-ERM cells needs margin_ratio >= eps / gamma*
    robust_max = max(
        (float(f) for f in ctx.config["eps_fractions"] if float(f) <= ROBUST_ERM_MAX), default=0.0
    )
    for alg, label, where in (
        ("cd", "coordinate descent (steepest descent w.r.t. l1)", "Theorem 4.3, Corollary 4.5"),
        ("diag_gd", "GD on the diagonal net", "Corollary 4.7, Proposition 4.8, Remark 4.9"),
    ):
        verb = "converges in direction to" if alg == "cd" else "is biased towards"
        out.append(
            Claim(
                id=f"price.limit_is_min_l1_{alg}",
                setting="every regime, eps < gamma*, runs trained to the limit",
                claim=f"Robust ERM with {label} {verb} the minimum-l1-norm robust separator: "
                "its normalised l_inf margin approaches the dataset's gamma*.",
                citation=_cite(
                    f"Sec. 4, {where}",
                    "Minimizing the loss of eq. (8) with steepest flow with respect to the norm "
                    "(on separable data) convergences to a minimum norm solution that "
                    "classifies all the points correctly."
                    if alg == "cd"
                    else "These results suggest that the bias of gradient-descent based robust "
                    "ERM over diagonal networks is towards minimum solutions",
                    scope="steepest flow (Thm 4.3) / gradient flow (Cor. 4.7), t -> inf, "
                    "separable data, worst-case exponential loss",
                ),
                derivation="For the l1 geometry the robust max-margin problem max_{||w||_1 <= 1} "
                "min_i y_i <w, x_i> - eps ||w||_1 has the clean l1 max-margin direction as its "
                "solution at every eps < gamma* (the eps term is constant on the l1 sphere), so "
                "the limit's margin_ratio = min_i y_i <w, x_i> / (||w||_1 gamma*) is 1 (gamma* "
                "from the exact LP). Strong (P2, the theory's constant within 10 %): >= 0.9. "
                "Weak (the same direction: a robust separator at every robust-ERM eps, which "
                f"needs margin_ratio >= eps/gamma*): >= {robust_max:g}, the grid's largest "
                "robust-ERM fraction. The upper end 1.001 allows the LP's rounding. A t -> inf "
                "statement: judged only on runs trained to a loss below 1e-10."
                + (
                    ""
                    if alg == "cd"
                    else " For the diagonal net Corollary 4.7 gives a KKT point only; that it "
                    "is the l1 minimum is the paper's stated belief (Remark 4.9); its results "
                    "'suggest', a weaker word than the steepest flow's theorem, and the l1 bias "
                    "of a diagonal net is known to need a small initial scale (the optimizer's "
                    "alpha; a large one trains like the linearised, l2-like model). The rule is "
                    "CD's (the same limit and constant); the verdict is read with that caveat."
                ),
                paper="the minimum-l1-norm robust separator in the limit",
                measure=f"margin_ratio of the {alg} runs that reached the stopping loss, mean "
                "over n and eps < gamma*, one value per (regime, draw)",
                rule=between("margin ratio", (0.9, 1.001), (robust_max, 1.001)),
                compute=limit_margin(alg),
                sources=("problems",),
                not_applicable=_limit_only,
            )
        )
    return out
