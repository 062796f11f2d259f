"""Study FA's claim-file functions (ibrobust.studies.feature_averaging.claim_context): the
bounds its rules take from d and k, against hand-computed values, and the scopes where a
claim is testable."""

from __future__ import annotations

import math

import pytest

from ibrobust.claims.core import StudyContext
from ibrobust.studies.feature_averaging import claim_context as cc


def test_the_bounds_at_the_studys_d_and_k_are_the_hand_computed_ones():
    b = cc.dataset_bounds(1000, 10)
    # 0.4 sqrt(10) = 1.26491; 1.1 x (1 + 1.2816 sqrt(0.01)) = 1.1 x 1.12816 = 1.240976
    assert b["robust"] == 1.265
    assert b["binary_hi"] == 1.241 and b["binary_weak_hi"] == 1.265
    assert b["universal_hi"] == pytest.approx(1.1) and b["universal_weak_hi"] == 1.265
    assert b["inv_k_rounded"] == 0.1
    assert b["block"] == pytest.approx(0.44721, abs=1e-5)  # 1 / sqrt(5)
    assert b["averaging_mid_rounded"] == 0.72  # (1 + 0.44721) / 2 = 0.7236
    assert (b["readout_lo"], b["readout_hi"]) == (2.01, 2.46)  # sqrt(5) x 0.9, x 1.1
    assert b["sum_cap"] == 1.291  # sqrt(20 / 12) = 1.29099
    assert b["reference_weak"] == 0.316  # min(0.4, 1 / sqrt(10) = 0.31623)
    # sqrt(10 / 8) = 1.11803 -> 1.118; x 0.9 = 1.0062, x 1.1 = 1.2298
    assert (b["gradient_ratio"], b["gradient_lo"], b["gradient_hi"]) == (1.118, 1.006, 1.23)
    assert b["gradient_weak_lo"] == 1.0


def test_at_a_small_k_the_weak_end_is_the_strong_one():
    b = cc.dataset_bounds(1000, 4)
    assert b["robust"] == 0.8  # 0.4 x 2
    assert b["binary_weak_hi"] == b["binary_hi"] == round(1.1 * (1 + 1.2816 * math.sqrt(0.004)), 3)
    assert b["reference_weak"] == 0.4  # 1 / sqrt(4) = 0.5 > 0.4
    assert b["gradient_weak_lo"] == round(math.sqrt(0.5) * 0.9, 3)  # 0.636 < 1


def test_the_scopes_name_why_a_small_k_cannot_be_judged():
    ctx = StudyContext("fa", {})
    assert cc.radius_scope(ctx, 10, 1.241) is None
    assert cc.radius_scope(ctx, 10, 1.1) is None
    reason = cc.radius_scope(ctx, 4, 1.1)
    assert "k = 4" in reason and "0.8 x sqrt(d/k)" in reason and "end 1.1" in reason
    assert cc.reference_scope(ctx, 10) is None
    assert "0.5 x sqrt(d)" in cc.reference_scope(ctx, 4)
    assert cc.gradient_scope(ctx, 10) is None  # 1.118 x 0.9 = 1.006 > 1
    assert "sqrt(k/8) = 0.707" in cc.gradient_scope(ctx, 4)


def test_cells_restrict_only_a_study_of_several_trained_nets():
    one = StudyContext("fa", {"models": ["m"], "optimizers": ["gd"]})
    assert cc.cells(one) == [{}]
    two = StudyContext("fa", {"models": ["p1", "p3"], "optimizers": ["gd"]})
    assert cc.cells(two) == [
        {"model": "p1", "optimizer": "gd"},
        {"model": "p3", "optimizer": "gd"},
    ]


def test_each_readout_takes_its_rule_case():
    ctx = StudyContext("fa", {"readouts": ["sum", "argmax", "log_odds"]})
    assert [(r["name"], r["readout_case"]) for r in cc.readouts(ctx)] == [
        ("sum", "sum"),
        ("argmax", "argmax"),
        ("log_odds", "other"),
    ]


def test_a_sweep_claim_names_the_missing_sweep():
    assert cc.scaling_missing(StudyContext("fa", {}), "d") == "the study has no scaling sweep"
    ctx = StudyContext("fa", {"scaling": {"sweeps": {"k": [2, 4]}}})
    assert cc.scaling_missing(ctx, "k") is None
    assert "not d" in cc.scaling_missing(ctx, "d")
