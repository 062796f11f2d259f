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
