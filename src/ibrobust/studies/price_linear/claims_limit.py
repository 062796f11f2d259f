"""Study PRICE-LIN's limit claims (Tsilivis et al. 2024, Sec. 4: the minimum-l1 separator
in the t -> inf limit), judged only in a study trained to the limit; part of the catalog
:mod:`ibrobust.studies.price_linear.claims`."""

from __future__ import annotations

from ibrobust.claims.citations import TSILIVIS_2024, Citation
from ibrobust.claims.core import BOUND, Claim, StudyContext, between
from ibrobust.studies.price_linear.measures import ROBUST_ERM_MAX, limit_margin

LIMIT_LOSS = 1e-10  # a study stopping below this train loss trains to the limit (price_limit)


def stops_at(ctx: StudyContext) -> float:
    return float(ctx.config["stopping"]["loss_threshold"])


def limit_only(ctx: StudyContext) -> str | None:
    if stops_at(ctx) >= LIMIT_LOSS:
        return (
            f"the study stops at train loss {stops_at(ctx):g} (the paper's protocol), where "
            "the normalised margin is still about log(n) / log(1/(n L)) from its t -> inf "
            "limit; the limit is judged in a study trained to a loss below "
            f"{LIMIT_LOSS:g} (configs: study price_limit)"
        )
    return None


def _derivation(alg: str, robust_max: float) -> str:
    return (
        "For the l1 geometry the robust max-margin problem max_{||w||_1 <= 1} "
        "min_i y_i <w, x_i> - eps ||w||_1 has the clean l1 max-margin direction as its "
        "solution at every eps < gamma* (the eps term is constant on the l1 sphere), so "
        "the limit's margin_ratio = min_i y_i <w, x_i> / (||w||_1 gamma*) is 1 (gamma* "
        "from the exact LP). Strong (P2, the theory's constant within 10 %): >= 0.9. "
        "Weak (the same direction: a robust separator at every robust-ERM eps, which "
        f"needs margin_ratio >= eps/gamma*): >= {robust_max:g}, the grid's largest "
        "robust-ERM fraction. The upper end 1.001 allows the LP's rounding. A t -> inf "
        "statement: judged only on runs trained to a loss below 1e-10. Form: a bound on "
        "the limit's property (its margin ratio, the theory's constant 1), the limit "
        "stood in for by those runs; the convergence itself, a trend along training, is "
        "not judged (the study records no checkpoints of the margin ratio)."
        + (
            ""
            if alg == "cd"
            else " For the diagonal net Corollary 4.7 gives a KKT point only; that it "
            "is the l1 minimum is the paper's stated belief (Remark 4.9); its results "
            "'suggest', a weaker word than the steepest flow's theorem, and the l1 bias "
            "of a diagonal net is known to need a small initial scale (the optimizer's "
            "alpha; a large one trains like the linearised, l2-like model). The rule is "
            "CD's (the same limit and constant); the verdict is read with that caveat."
        )
    )


def limit_claims(ctx: StudyContext) -> list[Claim]:
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
                form=BOUND,
                setting="every regime, eps < gamma*, runs trained to the limit",
                claim=f"Robust ERM with {label} {verb} the minimum-l1-norm robust separator: "
                "its normalised l_inf margin approaches the dataset's gamma*.",
                citation=Citation(
                    TSILIVIS_2024,
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
                derivation=_derivation(alg, robust_max),
                paper="the minimum-l1-norm robust separator in the limit",
                measure=f"margin_ratio of the {alg} runs that reached the stopping loss, mean "
                "over n and eps < gamma*, one value per (regime, draw)",
                rule=between("margin ratio", (0.9, 1.001), (robust_max, 1.001)),
                compute=limit_margin(alg),
                sources=("problems",),
                not_applicable=limit_only,
            )
        )
    return out
