"""Study FA's claims at a k where their derivation's regions do not nest (the tiny config's
k = 4): the ledger is built, and the claims the study cannot test there are not applicable
with the reason, while the k = 10 default keeps its verdicts."""

from __future__ import annotations

import math

import pytest
from claims_fixtures import (
    default_config,
    fa_curve,
    fa_margin_gradient,
    fa_scaling,
    fa_summary,
    ledger,
    one,
)

from ibrobust.claims.core import HOLDS, NOT_APPLICABLE

FA = ("fa", "figures/summary.csv")
FA_SCALING = ("fa", "figures/critical_radius_scaling.csv")
FA_MARGIN = ("fa", "figures/margin_gradient_summary.csv")
FA_CURVE = ("fa", "figures/robust_accuracy_vs_radius.csv")
FILES = {FA: fa_summary(), FA_SCALING: fa_scaling(), FA_MARGIN: fa_margin_gradient(),
         FA_CURVE: fa_curve()}  # fmt: skip


def config_with_k(k: int) -> dict:
    cfg = default_config()
    cfg["datasets"]["clusters_d1000"]["k"] = k
    return cfg


@pytest.mark.parametrize("k", [4, 6])
def test_radius_claims_are_not_applicable_where_the_robust_radius_is_inside_the_strong_region(
    tmp_path, k
):
    # 0.4 sqrt(4) = 0.8 and 0.4 sqrt(6) = 0.98 are below the strong ends 1.1 x (1 + 1.2816
    # sqrt(k/d)) = 1.19 / 1.21 (binary) and 1.1 (universal): a non-robust radius ~ sqrt(d/k)
    # cannot be told from the robust construction
    df = ledger(tmp_path, config_with_k(k), FILES)
    for claim in ("fa.binary_radius", "fa.universal_radius"):
        row = one(df, "fa", claim)
        assert row.verdict == NOT_APPLICABLE, (claim, row.reason)
        assert f"k = {k}" in row.reason and f"{round(0.4 * math.sqrt(k), 3)}" in row.reason


def test_the_gradient_claim_needs_k_of_ten(tmp_path):
    # sqrt(9/8) = 1.061, less 10 %: 0.955 <= 1: the direction '> 1' and the theory disagree
    row = one(ledger(tmp_path, config_with_k(9), FILES), "fa", "fa.gradient_per_margin")
    assert row.verdict == NOT_APPLICABLE and "k = 9" in row.reason and "1.061" in row.reason


def test_at_k_nine_only_the_binary_radius_is_out_of_scope(tmp_path):
    # 0.4 sqrt(9) = 1.2: above the universal radius's 1.1, not above the binary radius's
    # 1.1 x (1 + 1.2816 x sqrt(9/1000)) = 1.234 (at d = 1000 the binary claim needs k >= 10)
    df = ledger(tmp_path, config_with_k(9), FILES)
    assert one(df, "fa", "fa.universal_radius").verdict != NOT_APPLICABLE
    row = one(df, "fa", "fa.binary_radius")
    assert row.verdict == NOT_APPLICABLE and "1.234" in row.reason


def test_the_default_k_ten_is_judged(tmp_path):
    df = ledger(tmp_path, config_with_k(10), FILES)
    assert one(df, "fa", "fa.universal_radius").verdict == HOLDS
    assert one(df, "fa", "fa.binary_radius").verdict != NOT_APPLICABLE
    assert one(df, "fa", "fa.gradient_per_margin").verdict != NOT_APPLICABLE
