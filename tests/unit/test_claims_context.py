"""The named functions of the configuration the claim files read (each study's CONTEXT, the
rule bounds computed from a setting among them), against hand-computed values: a bound the
file takes by name is as tested as a measure."""

from __future__ import annotations

import math

import pytest

from ibrobust.claims.core import StudyContext
from ibrobust.studies.feature_averaging import claim_context as fa
from ibrobust.studies.feature_averaging_images import measures as images
from ibrobust.studies.prelu import measures as prelu
from ibrobust.studies.price_linear import measures as price
from ibrobust.studies.price_nn import measures as nn


def _fa(k: int, d: int = 1000, models=("m",), optimizers=("o",)) -> StudyContext:
    cfg = {"datasets": ["c"], "models": list(models), "optimizers": list(optimizers)}
    return StudyContext("fa", cfg, datasets={"c": {"d": d, "k": k}})


def test_fa_bounds_from_k_at_the_sources_k():
    (ds,) = fa.datasets(_fa(10))
    # 0.4 sqrt(10) = 1.2649; sqrt(10/8) = 1.1180, x 0.9 = 1.0062, x 1.1 = 1.2298
    assert (ds["robust"], ds["c"], ds["grad_lo"], ds["grad_hi"]) == (1.265, 1.118, 1.006, 1.23)
    assert ds["grad_weak_lo"] == 1.0 and ds["ref_weak"] == 0.316 and ds["ref_weak_lo"] == 0.316
    assert ds["binary_weak_hi"] == ds["universal_weak_hi"] == 1.265  # above 1.027 and 1.1
    assert ds["sum_cap"] == 1.291  # sqrt(20/12) = 1.2910
    assert ds["root_k2"] == pytest.approx(math.sqrt(5)) and ds["tag"] == "c (d=1000, k=10)"
    # the figure's readings: 12 / 17.527 = 0.6847, 18 / 17.527 = 1.0270; 34/18, 44/12
    c = fa.CONSTANTS
    assert (c["binary_lo"], c["binary_hi"], c["readout_lo"], c["readout_hi"]) == (
        0.685, 1.027, 1.89, 3.67
    )  # fmt: skip


def test_fa_scopes_at_a_small_k_and_at_the_sources_k():
    ctx = _fa(4)
    (ds,) = fa.datasets(ctx)  # 0.4 sqrt(4) = 0.8, 1/sqrt(4) = 0.5, sqrt(4/8) = 0.707
    assert fa.radius_scope(ctx, 4, ds["robust"], fa.CONSTANTS["binary_hi"]).startswith(
        "at k = 4 the robust construction's radius 0.4 sqrt(k) = 0.8 x sqrt(d/k)"
    )
    assert "sqrt(d/k) = 0.5 x sqrt(d)" in fa.reference_scope(ctx, 4, ds["ref_weak"])
    assert "sqrt(k/8) = 0.707 (less 10 %: 0.636)" in fa.gradient_scope(ctx, 4, ds["c"])
    (ten,) = fa.datasets(_fa(10))
    assert fa.radius_scope(ctx, 10, ten["robust"], 1.1) is None
    assert fa.reference_scope(ctx, 10, ten["ref_weak"]) is None
    assert fa.gradient_scope(ctx, 10, ten["c"]) is None  # 1.118 x 0.9 = 1.006 > 1


def test_fa_cells_and_readout_cases():
    assert fa.cells(_fa(10)) == [{}]
    assert fa.cells(_fa(10, models=("p1", "p3"))) == [
        {"model": "p1", "optimizer": "o"}, {"model": "p3", "optimizer": "o"}
    ]  # fmt: skip
    assert [fa.readout_case(None, r) for r in ("argmax", "sum", "log_odds")] == [
        "argmax", "sum", "other"
    ]  # fmt: skip


def test_prelu_bounds_from_k_and_the_table1_columns():
    ctx = StudyContext("prelu", {"synthetic": {"dataset": "s"}}, datasets={"s": {"k": 10}})
    assert prelu.prelu_radius_over_relu(ctx) == 2.236  # sqrt(20)/2 = 2.2361
    assert prelu.relu_radius(ctx) == pytest.approx(1 / math.sqrt(10))
    first = prelu.table1_columns(ctx)[0]
    assert (first["norm"], first["eps"], first["column"]) == ("linf", 0.05, "linf 0.05")
    assert first["strong"] == 0.381  # 0.913 - 0.512 = 0.401, less 2 points
    assert prelu.mnist_missing(StudyContext("p", {"mnist": None})) == (
        "the MNIST half is not configured"
    )  # fmt: skip


def test_price_linear_largest_robust_erm_fraction_and_the_stopping_rule():
    def ctx(fractions, loss=1e-3):
        return StudyContext("p", {"eps_fractions": fractions, "stopping": {"loss_threshold": loss}})

    assert price.robust_max(ctx([0, 0.25, 0.5, 0.75, 0.9, 0.99])) == 0.75
    assert price.robust_max(ctx([0, 0.9])) == 0.0
    assert price.protocol_only(ctx([0])) is None and price.limit_only(ctx([0])) is not None
    assert price.protocol_only(ctx([0], 1e-12)) is not None
    assert price.limit_only(ctx([0], 1e-12)) is None


def test_price_nn_grid_functions():
    ctx = StudyContext("n", {"cnn": {"n_train": [50, 100], "eps": [0.0, 0.1, 0.2]}})
    assert nn.grid_n(ctx, "cnn") == [50, 100] and nn.robust_eps(ctx, "cnn") == [0.1, 0.2]
    assert nn.needs_half(ctx, "fc") == "the study has no fc half"
    assert nn.grid_lacks(ctx, "cnn", ns=3).startswith("the cnn grid has 2 training-set size(s)")
    assert nn.grid_lacks(ctx, "cnn", erm=True) is None


def test_fa_images_paper_cells_and_rule_basis():
    ctx = StudyContext(
        "i", {"datasets": ["mnist", "other"], "paper_tasks": {"mnist": "mnist_parity"},
              "models": ["cnn"]}, models={"cnn": {"kind": "small_cnn"}},
    )  # fmt: skip
    cells = images.paper_cells(ctx)
    assert [(c["dataset"], c["eps"]) for c in cells] == [("mnist", 1.2), ("mnist", 1.6)]
    assert cells[0]["strong_paper"] == 0.17  # 0.80 - 0.58 = 0.22, less 0.025 + 0.025
    assert images.reading_basis(ctx, "sum") == "architecture"
    assert images.reading_basis(ctx, "argmax") == "readout"
