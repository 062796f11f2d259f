"""The named functions of the configuration the claim files read (each study's CONTEXT, the
rule bounds computed from a setting among them), against hand-computed values: a bound the
file takes by name is as tested as a measure."""

from __future__ import annotations

from ibrobust.claims.core import StudyContext
from ibrobust.studies.feature_averaging_images import measures as images
from ibrobust.studies.margin import measures as margin
from ibrobust.studies.price_nn import measures as nn


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


def test_margin_scopes():
    assert margin.no_flow(StudyContext("m", {"training": {}})) == (
        "the study trains no constant-step run (training.flow unset)"
    )  # fmt: skip
    small = StudyContext("m", {"datasets": ["d"], "training": {"batch_size": 100}},
                         datasets={"d": {"n_train": 20}})  # fmt: skip
    assert "against this study's 20 images, batch 100" in margin.off_paper_scale(small)
    paper = StudyContext("m", {"datasets": ["d"], "training": {"batch_size": 100}},
                         datasets={"d": {"n_train": 60000}})  # fmt: skip
    assert margin.off_paper_scale(paper) is None


def test_prelu_bounds_from_k_and_the_table1_columns():
    from ibrobust.studies.prelu import claim_context as prelu

    ctx = StudyContext("prelu", {"synthetic": {"dataset": "s"}}, datasets={"s": {"k": 10}})
    assert prelu.prelu_radius_over_relu(ctx) == 2.236  # sqrt(20)/2 = 2.2361
    assert abs(prelu.relu_radius(ctx) - 10**-0.5) < 1e-12
    first = prelu.table1_columns(ctx)[0]
    assert (first["norm"], first["eps"], first["column"]) == ("linf", 0.05, "linf 0.05")
    assert (first["p4"], first["p1"], round(first["gap"], 3)) == (0.913, 0.512, 0.401)
    assert prelu.mnist_missing(StudyContext("p", {"mnist": None})) == (
        "the MNIST half is not configured"
    )  # fmt: skip
    assert not prelu.synthetic_configured(StudyContext("p", {"synthetic": None}))


def test_price_linear_regimes_and_the_stopping_rule():
    from ibrobust.studies.price_linear import claim_context as price

    def ctx(loss):
        return StudyContext(
            "p", {"datasets": ["a"], "stopping": {"loss_threshold": loss}},
            datasets={"a": {"d": 8, "k_w": 8, "k_x": 8}},
        )  # fmt: skip

    assert price.protocol_only(ctx(1e-3)) is None and price.limit_only(ctx(1e-3)) is not None
    assert price.protocol_only(ctx(1e-12)) is not None and price.limit_only(ctx(1e-12)) is None
    assert price.regime_name(ctx(1e-3), "dense/dense") == "a"
    assert price.regime_name(ctx(1e-3), "sparse w*", "sparse teacher, dense x") == (
        "sparse teacher, dense x"
    )  # fmt: skip
    assert price.needs_regime(ctx(1e-3), "sparse x") == "the study has no sparse x regime"
