"""Study kind attack_audit: its config checks, its plan (the reference runs only) and the
audit table on hand-made attack summaries."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from config_helpers import assert_rejected, merged

from ibrobust import studies
from ibrobust.config import load_schema, validate_config
from ibrobust.studies import plan
from ibrobust.studies.attack_audit import summarize

REPO = Path(__file__).resolve().parents[2]
SCHEMA = load_schema(REPO / "schemas" / "config.schema.yaml")
BASE = yaml.safe_load((REPO / "config.yaml").read_text())


def test_plan_is_the_reference_runs():
    cfg = validate_config(BASE, SCHEMA)
    st = cfg["studies"]["attack_audit"]
    assert st["enabled"] is False and st["tolerance"] == 0.1
    assert plan.trained_runs(cfg, "attack_audit") == []
    runs = plan.main_runs(cfg, "attack_audit")
    assert [(r["model"], r["optimizer"], r["seed"]) for r in runs] == [
        ("robust_reference", "handbuilt", 0),
        ("robust_reference", "handbuilt", 1),
    ]
    assert studies.study_outputs(cfg, "attack_audit") == [
        "results/attack_audit/figures/summary.csv",
        "results/attack_audit/figures/summary.md",
    ]


@pytest.mark.parametrize(
    ("overlay", "key", "fragment"),
    [
        ({"reference": "two_layer_m5"}, "studies.attack_audit.reference", "robust_reference"),
        ({"attacks": ["pgd_ce"]}, "studies.attack_audit.attacks[0]", "no multiclass model"),
        ({"datasets": ["teacher_w4_x4"]}, "studies.attack_audit.datasets[0]", "no cluster means"),
    ],
)
def test_bad_audit_names_the_key(overlay, key, fragment):
    assert_rejected(merged(BASE, {"studies": {"attack_audit": overlay}}), SCHEMA, key, fragment)


def test_audit_table_by_hand():
    runs = [
        {"dataset": "c", "seed": 0, "analytic_critical_radius": 10.0,
         "critical_radius": {"pgd": 10.5, "weak": 13.0, "worst": 10.5}},
        {"dataset": "c", "seed": 1, "analytic_critical_radius": 8.0,
         "critical_radius": {"pgd": 8.0, "weak": 8.4, "worst": 8.0}},
    ]  # fmt: skip
    table, agg = summarize(runs, tolerance=0.1)
    assert table.gap.round(6).tolist() == [0.05, 0.3, 0.05, 0.0, 0.05, 0.0]
    row = agg.set_index("attack")
    assert row.loc["pgd", "passes"] and not row.loc["weak", "passes"]  # 13 / 10 - 1 = 0.3
    assert row.loc["weak", "gap_max"] == pytest.approx(0.3) and row.loc["pgd", "n"] == 2
    assert row.loc["pgd", "gap_mean"] == pytest.approx(0.025)
