"""Study PRICE-LIN's names, without torch: which robust-ERM algorithm an ``optimizers``
registry entry runs (its kind's module says: ``algorithm``), its figure label, a teacher
regime's label and the metrics' names. The training glue
(:mod:`ibrobust.studies.price_linear.experiment`) and the claims ledger (which runs in the Snakemake
process and in a torch-free job) both import them from here."""

from __future__ import annotations

from collections.abc import Mapping

from ibrobust.kinds import OPTIMIZERS

METRICS = (
    "train_robust_acc",
    "test_robust_acc",
    "train_clean_acc",
    "test_clean_acc",
    "robust_gap",
    "clean_gap",
    "l1_norm",
    "l2_norm",
    "margin_ratio",
    "iters",
    "converged",
    "diverged",
    "log10_loss",
)
# robust_erm algorithm -> figure label
ALGORITHM_LABEL = {"gd": "GD", "cd": "CD", "sd": "SD", "diag_gd": "diag-net GD"}


def linear_kind(optimizer: Mapping):
    """The module of an optimizer entry's kind, which must train linear models (capability
    ``trains: linear``; ValueError naming the kind otherwise)."""
    kind = optimizer.get("kind")
    if OPTIMIZERS.capability(kind, "trains") != "linear":
        linear = [k for k in OPTIMIZERS.kinds() if OPTIMIZERS.capability(k, "trains") == "linear"]
        raise ValueError(f"optimizer kind must be one of {linear} here, got {kind!r}")
    return OPTIMIZERS.load(kind)


def algorithm_of(optimizer: Mapping) -> str:
    """robust_erm algorithm (gd / cd / sd / diag_gd) of an ``optimizers`` registry entry."""
    return linear_kind(optimizer).algorithm(optimizer)


def algorithm_label(optimizer: Mapping) -> str:
    """Figure label: GD, CD, SD or diag-net GD."""
    return ALGORITHM_LABEL[algorithm_of(optimizer)]


def regime_label(dataset: Mapping) -> str:
    """'(k_w, k_x) = (4, 512): 4-sparse w*, dense x' from a teacher dataset entry."""
    d, kw, kx = dataset["d"], dataset["k_w"], dataset["k_x"]

    def word(k):
        return "dense" if k == d else f"{k}-sparse"

    return f"(k_w, k_x) = ({kw}, {kx}): {word(kw)} w*, {word(kx)} x"
