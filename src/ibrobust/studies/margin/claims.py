"""Claims of Study MARGIN (Lyu & Li, ICLR 2020, as presented in J. Li's CSML 2024 and ITCS
2024 talks; docs/studies/margin.md, "Claims"), kind ``margin``.

Runs: every seed trains with the paper's loss-based learning rate (schedule ``loss_based``)
and, where the study configures it (``training.flow``), once more with a small constant step
(schedule ``constant``), the gradient flow's stand-in: the flow theorems (the smoothed margin's
monotonicity, the loss and norm rates) are judged on those runs only. Whether the loss-based
SGD schedule keeps the smoothed margin monotone too is the project's own question (the
sources state monotonicity for gradient flow only): the study's summary reports it as an
observation (``sep_frac_decreasing`` of the loss-based runs), with no ledger row. A claim that needs an interval over runs is "not
applicable" in a study of one run.

The measurements and the output tables they read (``SOURCES``) are in
:mod:`ibrobust.studies.margin.measures`; this module is the catalog: each claim with its
citation, derivation and rule, and when a claim is not applicable. A study that is not
enabled (the default: it needs MNIST) has its claims "not run" with the reason.
"""

from __future__ import annotations

import numpy as np

from ibrobust.claims.citations import LYU_LI_2020, Citation
from ibrobust.claims.core import (
    ASYMPTOTIC,
    BOUND,
    DIRECTION,
    Claim,
    StudyContext,
    along,
    at_least,
    at_most,
    between,
)
from ibrobust.studies.margin.claims_rates import FLOW, TOL, rate_claims
from ibrobust.studies.margin.measures import (
    CONSTANT,
    PAPER_EPOCHS,
    SOURCES,
    certificate,
    constant_stalls,
    epochs_ratio,
    loss_reached,
    margin_trend,
    robust_area,
    run_column,
)

__all__ = ["SOURCES", "claims", "robust_area", "stops_before"]


def stops_before(limit: float):
    def why(ctx: StudyContext) -> str | None:
        stop = ctx.config.get("training", {}).get("stop_log10_loss")
        if stop is not None and stop > limit:
            return (
                f"the study stops at log10 L = {stop:g} (training.stop_log10_loss) by "
                f"configuration, before {limit:g}"
            )
        return None

    return why


def _no_flow(ctx: StudyContext) -> str | None:
    if ctx.config.get("training", {}).get("flow") is None:
        return "the study trains no constant-step run (training.flow unset)"
    return None


def _paper_scale(ctx: StudyContext) -> str | None:
    """The table's epoch counts hold for its 600 SGD steps per epoch (60,000 images, batch
    100); an epoch of another size is another unit of time."""
    ds = ctx.datasets.get(ctx.config["datasets"][0], {})
    n, batch = ds.get("n_train"), ctx.config.get("training", {}).get("batch_size")
    if n != 60000 or batch != 100:
        return (
            f"epoch counts depend on the SGD steps per epoch: the paper's 600 (60,000 images, "
            f"batch 100) against this study's {n} images, batch {batch}; judged with the "
            "paper-scale overlay configs/margin_paper.yaml"
        )
    return None


# ---- where the claims come from -------------------------------------------------------------
EXPERIMENT = (
    "the CNN conv32-5x5, max-pool, conv64-3x3, max-pool, fc1024, fc10 (bias only in the first "
    "layer) on MNIST, SGD with the loss-based learning rate, one run"
)


def _cite(where: str, quote: str, scope: str) -> Citation:
    return Citation(LYU_LI_2020, where, quote, scope)


THEOREM = _cite(
    "CSML 2024 talk '# Implicit Bias: Margin Maximization' (Theorem: smooth normalized margin "
    "increases monotonically)",
    "**Theorem: Smooth normalized margin increases monotonically.**",
    FLOW,
)
TABLE = _cite(
    "CSML 2024 talk '# Robustness' / ITCS 2024 talk 'Margin maximization and Robustness' "
    "(table of models 1-5)",
    "model-5\t10000\t$10^{-881.51}$\t$1.18 \\times 10^{-3}$",
    EXPERIMENT,
)
ROBUST = _cite(
    "CSML 2024 talk '# Robustness'",
    "Hence, training longer is slightly useful in improving the robustness.",
    EXPERIMENT + "; l2 robust accuracy of models 1-5 on train and test points",
)


def claims(ctx: StudyContext) -> list[Claim]:
    return (
        _training_claims() + _flow_claims() + rate_claims() + _limit_claims() + _robustness_claims()
    )


def _training_claims() -> list[Claim]:
    return [
        Claim(
            id="margin.loss_below_float64",
            form=BOUND,
            setting="loss-based runs",
            claim="The loss-based learning rate drives the train loss below float64's range "
            "(log10 L recorded, never L) with every logged value finite.",
            citation=_cite(
                "ITCS 2024 talk 'Experiments'; the table of models 1-5 (model 5: 10^-881.51)",
                "Training loss so small. modify Tensorflow to deal with numerical issues",
                EXPERIMENT,
            ),
            derivation="The table's losses go far below what a float64 can hold (model 5: "
            "10^-881.51; float64's smallest normal number is 10^-307.65): strong: the lowest "
            "log10 L <= -308, with every logged value finite. Weak: the table's model 4, "
            "<= -120. A study configured to stop above -308 cannot test it (not applicable).",
            paper="10^-881.51 after 10000 epochs (model 5)",
            measure="lowest log10 train loss per loss-based run (all_finite must be 1)",
            rule=at_most("log10 L", -308.0, -120.0),
            compute=loss_reached,
            not_applicable=stops_before(-308.0),
        ),
        Claim(
            id="margin.normalized_grows",
            form=ASYMPTOTIC,
            setting="loss-based runs, checkpoints",
            claim="The normalized margin grows with training, at the rate of the paper's "
            "models 1 to 5.",
            citation=TABLE,
            derivation="A trend over the checkpoints (the table's loss thresholds), not two "
            "points: the slope of log10 normalized margin on log10(-log10 L), common to the "
            "runs, on the checkpoints at the table's models 1-4 (10^-10, -15, -20, -120: the "
            "window every CPU-scale study reaches; the table's relation is concave, so the "
            "window must match). The table's models 1-4 give 0.81 with the 95 % interval "
            "[0.48, 1.14] of their own fit (its spread: the regression interval over one "
            "published run's four rows, not a spread over runs): strong (P1). Weak (the same "
            "direction): > 0.",
            paper="models 1-4: 5.65e-5 -> 4.61e-4 over log10 L -10 -> -120: slope 0.81 "
            "[0.48, 1.14] (models 1-5: 0.66 [0.47, 0.85])",
            measure="least-squares slope of log10 normalized margin on log10(-log10 L) over "
            "each run's checkpoints at log10 L within one decade of -10, -15, -20, -120, an "
            "intercept per run",
            rule=between(
                "slope",
                (0.48, 1.14),
                (0.0, np.inf),
                strict=True,
                basis="the table's own numbers (models 1-4: normalized margin against log10 L) "
                "and the 95 % interval of their fit",
            ),
            compute=along(
                margin_trend("normalized_margin", window=tuple(PAPER_EPOCHS)),
                "log10(-log10 L) over the checkpoints",
            ),
        ),
        *_training_claims_rest(),
    ]


def _training_claims_rest() -> list[Claim]:
    return [
        Claim(
            id="margin.epochs_to_threshold",
            form=BOUND,
            setting="loss-based runs, the table's loss thresholds",
            claim="The loss-based rate reaches the table's loss thresholds in the table's "
            "numbers of epochs (38, 75, 107, 935 for 10^-10, -15, -20, -120).",
            citation=TABLE,
            derivation="Strong (P2, a single published run: within 10 %, a house tolerance: "
            "the source gives no spread): the mean over the "
            "thresholds of our epochs / the table's in [0.9, 1.1]. Weak: within a factor 2 "
            "(the house's), [0.5, 2]. Only at the paper's scale (the same SGD steps per "
            "epoch).",
            paper="38, 75, 107, 935 epochs",
            measure="geometric mean over the thresholds of epochs to reach it / the table's, "
            "per run",
            rule=between("epochs / the table's", (1 - TOL, 1 + TOL), (0.5, 2.0)),
            compute=epochs_ratio,
            not_applicable=_paper_scale,
            cost="the paper-scale overlay configs/margin_paper.yaml (the full CNN on all 60,000 "
            "MNIST images, SGD batch 100, 10000 epochs: days of GPU time by the overlay's "
            "own estimate)",
        ),
    ]


def _flow_claims() -> list[Claim]:
    """The smoothed margin's monotonicity under the flow's stand-in. (Whether the loss-based
    SGD schedule keeps it monotone too is the project's own question, not a claim of the
    source: the study reports it as an observation in its summary, not in the ledger.)"""
    return [
        Claim(
            id="margin.smoothed_monotone",
            form=BOUND,
            setting="constant small step (the flow's stand-in), after the data is fit",
            claim="The smoothed normalized margin never decreases once the data is fit.",
            citation=THEOREM,
            derivation="A gradient-flow theorem, judged where it applies: on the constant "
            "small-step runs (training.flow), whose steps approximate the flow. The "
            "theorem's constant (P2) is no decrease at all: strong: the fraction of steps "
            "after separation whose smoothed margin fell by more than float rounding (a "
            "relative 1e-9, the float64 training's rounding) is 0. Weak (P3, almost never): "
            "<= 0.1.",
            paper="d gamma~/dt >= 0 under gradient flow",
            measure="sep_frac_decreasing of the constant-step runs: fraction of logged steps "
            "after separation with a decrease beyond a relative 1e-9",
            rule=at_most("fraction of decreasing steps", 0.0, 0.1),
            compute=run_column("sep_frac_decreasing", CONSTANT),
        ),
    ]


def _limit_claims() -> list[Claim]:
    """The direction's limit (KKT) and the constant step against the loss-based one."""
    return [
        Claim(
            id="margin.kkt_residual_falls",
            form=ASYMPTOTIC,
            setting="loss-based runs, checkpoints",
            claim="The parameters converge in direction to a KKT point of the max-margin "
            "problem: the KKT residual falls as training proceeds.",
            citation=_cite(
                "CSML 2024 talk '# Implicit bias: Margin Maximization' (Theorem, Lyu & Li "
                "2020; Ji & Telgarsky 2020)",
                "The direction  $\\hat{\\boldsymbol{\\theta}}$  converges and for the limit "
                "direction of  $\\hat{\\boldsymbol{\\theta}}$ ,  $\\hat{\\boldsymbol{\\theta}}/"
                "q_{\\min}(\\hat{\\boldsymbol{\\theta}})^{1/L}$  is a KKT point of (P).",
                FLOW + "; t -> infinity",
            ),
            derivation="For a homogeneous net the KKT stationarity of (P) at the normalised "
            "parameters holds with the loss gradient's multipliers exactly when theta is "
            "parallel to -grad L; the residual 1 - cos(theta, -grad L) -> 0 as the direction "
            "converges. A trend over the checkpoints: the slope of log10 residual on "
            "log10(-log10 L), common to the runs. No rate in the source: strong = weak (P5): "
            "< 0. Judged on the loss-based runs, whose checkpoints span the loss thresholds "
            "(Lyu & Li prove the direction's convergence for gradient descent with the "
            "loss-based step as well as for the flow).",
            paper="the limit direction is a KKT point of the max-margin problem",
            measure="least-squares slope of log10 kkt_residual (1 - cos(theta, -grad L), full "
            "training set) on log10(-log10 L) over each run's checkpoints, an intercept per run",
            rule=at_most("slope", 0.0, 0.0, strict=True),
            compute=along(margin_trend("kkt_residual"), "log10(-log10 L) over the checkpoints"),
        ),
        Claim(
            id="margin.constant_lr_stalls",
            form=DIRECTION,
            setting="each seed: loss-based run vs constant small step, the same epochs",
            claim="With a constant learning rate the loss decreases very slowly; the "
            "loss-based rate goes much further in the same epochs.",
            citation=_cite(
                "ITCS 2024 talk 'Experiments' (CNN, MNIST, constant learning rate)",
                "Constant LR: Gradient very small, loss decreases very slowly",
                "the CNN on MNIST, SGD at a constant learning rate against the loss-based rate",
            ),
            derivation="No number in the source: strong = weak (P5, the direction): log10 L "
            "of the loss-based run minus the constant-step run's at the constant run's last "
            "epoch < 0.",
            paper="the loss decreases very slowly at a constant rate",
            measure="per seed: log10 L (loss-based, at the constant run's last epoch; its last "
            "value where it stopped earlier) - log10 L (constant step, last epoch)",
            rule=at_most("log10 L difference", 0.0, 0.0, strict=True),
            compute=constant_stalls,
            sources=("schedules",),
            not_applicable=_no_flow,
        ),
    ]


def _robustness_claims() -> list[Claim]:
    out = []
    for split in ("train", "test"):
        out.append(
            Claim(
                id=f"margin.robust_rises_{split}",
                form=ASYMPTOTIC,
                setting=f"loss-based runs, checkpoints, {split} points, l2",
                claim=f"Longer training raises l2 robust accuracy slightly ({split} points).",
                citation=ROBUST,
                derivation="'Slightly useful' gives no number: strong = weak (P5, the "
                "direction): > 0. A trend over the whole eps grid and every checkpoint, as "
                "the table's models 1-5: the area under each checkpoint's robust-accuracy "
                "curve over [0, the grid's top] (the mean over points of their minimal l2 "
                "distance capped at the top, over the top), and its slope on log10(-log10 L) "
                "over the checkpoints.",
                paper="slightly higher for later models (robustness figure)",
                measure=f"slope over the checkpoints of the mean over {split} points of min(R, "
                "r) / r (R = the smallest distance over the attacks, r = the l2 grid's top) on "
                "log10(-log10 L), an intercept per run",
                rule=at_least("slope of the robust-accuracy area", 0.0, 0.0, strict=True),
                compute=along(robust_area(split), "log10(-log10 L) over the checkpoints"),
                sources=("summary", "points"),
            )
        )
    out.append(
        Claim(
            id="margin.certificate",
            form=BOUND,
            setting="every checkpoint, train and test points, l2",
            claim="A point's distance to the decision boundary is at least its certified "
            "radius q / beta (beta: the margin's Lipschitz constant).",
            citation=_cite(
                "ITCS 2024 talk 'Margin maximization and Robustness'; CSML 2024 talk, backup "
                "slide '# Robustness'",
                "$$R_{\\theta}(z) \\geq \\frac{q_{\\hat{\\theta}}(z)}{\\beta}$$",
                "any net whose margin q is beta-Lipschitz in the input; R the l2 distance to "
                "the nearest misclassified point",
            ),
            derivation="An identity (the theory's constant: every pair satisfies it); a "
            "violation is a bookkeeping error of beta or of the attacks. Our distances are "
            "upper bounds found by attacks to a bisection tolerance, so a pair whose true "
            "distance equals its certificate can read just below it: strong: share >= 0.99; "
            "weak >= 0.95.",
            paper="R(z) >= q(z) / beta",
            measure="share of correctly classified (point, checkpoint) pairs whose minimal l2 "
            "distance (the smallest over every attack that ran) is >= q / beta",
            rule=at_least("share", 0.99, 0.95),
            compute=certificate,
            sources=("points",),
        )
    )
    return out
