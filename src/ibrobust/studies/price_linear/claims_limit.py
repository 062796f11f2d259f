"""Study PRICE-LIN's limit claims (Tsilivis et al. 2024, Sec. 4: the minimum-l1 separator
in the t -> inf limit), judged only in a study trained to the limit; part of the catalog
:mod:`ibrobust.studies.price_linear.claims`."""

from __future__ import annotations

from ibrobust.claims.citations import TSILIVIS_2024, Citation
from ibrobust.claims.core import ASYMPTOTIC, Claim, StudyContext, at_most
from ibrobust.studies.price_linear.limit_measures import limit_trend

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


def _derivation(alg: str) -> str:
    return (
        "For the l1 geometry the robust max-margin problem max_{||w||_1 <= 1} "
        "min_i y_i <w, x_i> - eps ||w||_1 has the clean l1 max-margin direction as its "
        "solution at every eps < gamma* (the eps term is constant on the l1 sphere), so "
        "the limit's margin_ratio = min_i y_i <w, x_i> / (||w||_1 gamma*) is 1 (gamma* "
        "from the exact LP). 'Converges' is a t -> inf statement (asymptotic): it is "
        "judged as a trend along training, never as a threshold at one stopping point. "
        "Per run, the least-squares slope of 1 - margin_ratio on ln(1/L) (L the train "
        "loss, falling along training) over its checkpoints with the data separated "
        "(L < 1/n); mean over n and eps < gamma*, one value per (regime, draw). No "
        "rate is stated (the normalised margin's distance from its limit falls about "
        "like log n / log(1/(n L)), with unknown constants): strong = weak (P5): slope "
        "< 0, 1 - margin_ratio falling. No weak band from 'robust separation' (margin_ratio "
        ">= eps/gamma*): every run that reaches the robust stopping loss at eps has it, so "
        "it tested the convergence filter, not the claim. Needs the margin ratio at "
        "checkpoints along training; the study records it at the stopping point only "
        "(not run until it does). The trend alone does not tell convergence to 1 from "
        "convergence to a smaller limit (GD's ratio rises too): the limit's value would "
        "need a rate, which the source does not give."
        + (
            " The theorem (steepest flow) gives the constant 1 as the limit; the rule "
            "judges the approach to it, the direction only."
            if alg == "cd"
            else " For the diagonal net Corollary 4.7 gives a KKT point only; that it "
            "is the l1 minimum is the paper's stated belief (Remark 4.9); its results "
            "'suggest' it, a weaker word than the steepest flow's theorem, and the l1 bias "
            "of a diagonal net is known to need a small initial scale (the optimizer's "
            "alpha; a large one trains like the linearised, l2-like model): direction / "
            "trend only, no constant."
        )
    )


def limit_claims(ctx: StudyContext) -> list[Claim]:
    """The limit claims; the same declaration in every study of the kind (no part of the
    rule depends on the study's config)."""
    out: list[Claim] = []
    for alg, label, where in (
        ("cd", "coordinate descent (steepest descent w.r.t. l1)", "Theorem 4.3, Corollary 4.5"),
        ("diag_gd", "GD on the diagonal net", "Corollary 4.7, Proposition 4.8, Remark 4.9"),
    ):
        verb = "converges in direction to" if alg == "cd" else "is biased towards"
        out.append(
            Claim(
                id=f"price.limit_is_min_l1_{alg}",
                form=ASYMPTOTIC,
                setting="every regime, eps < gamma*, along training to the limit",
                claim=f"Robust ERM with {label} {verb} the minimum-l1-norm robust separator: "
                "its normalised l_inf margin approaches the dataset's gamma* along training.",
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
                derivation=_derivation(alg),
                paper="the minimum-l1-norm robust separator in the limit",
                measure=f"per {alg} run: slope of 1 - margin_ratio on ln(1/L) over its "
                "checkpoints with L < 1/n; mean over n and eps < gamma*, one value per "
                "(regime, draw)",
                rule=at_most("slope of 1 - margin ratio on ln(1/L)", 0.0, 0.0, strict=True),
                compute=limit_trend(alg),
                sources=("margin_path",),
                not_applicable=limit_only,
            )
        )
    return out
