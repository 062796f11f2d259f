"""Robust-accuracy tables (ibrobust.attacks.tables) and critical radii (analysis.robustness)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from ibrobust.analysis.robustness import critical_radius
from ibrobust.attacks.tables import monotone_robust, robust_accuracy_table


def B(rows):
    return torch.tensor(rows, dtype=torch.bool)


# ---------------------------------------------------------------------------- monotone


def test_monotone_robust_unsorted_eps_hand_case():
    eps = [0.5, 0.1, 0.3]
    correct = B([[1, 1, 1, 0], [1, 0, 1, 1], [0, 1, 1, 1]])
    out = monotone_robust(correct, eps)
    assert out.dtype == torch.bool
    # sorted radii 0.1, 0.3, 0.5 -> running AND: [1,0,1,1], [0,0,1,1], [0,0,1,0]
    assert out.tolist() == B([[0, 0, 1, 0], [1, 0, 1, 1], [0, 0, 1, 1]]).tolist()
    assert torch.equal(correct, B([[1, 1, 1, 0], [1, 0, 1, 1], [0, 1, 1, 1]]))  # input untouched


def test_monotone_robust_is_identity_on_monotone_input():
    correct = B([[1, 1, 1], [1, 0, 1], [0, 0, 1]])
    assert torch.equal(monotone_robust(correct, torch.tensor([0.0, 1.0, 2.0])), correct)


# ---------------------------------------------------------------------------- table


def test_robust_accuracy_table_worst_is_and_over_attacks():
    eps = [0.1, 0.2]
    corr = {
        "pgd": B([[1, 1, 0, 1], [1, 0, 0, 1]]),
        "universal": B([[1, 0, 1, 1], [1, 1, 1, 0]]),  # example 1 recovers at 0.2: not allowed
    }
    df = robust_accuracy_table(corr, eps)
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == ["attack", "eps", "robust_acc", "n"]
    assert df["attack"].tolist() == ["pgd", "pgd", "universal", "universal", "worst", "worst"]
    assert df["eps"].tolist() == [0.1, 0.2] * 3
    assert (df["n"] == 4).all()
    # universal monotone: [1,0,1,1], [1,0,1,0]; worst = AND: [1,0,0,1], [1,0,0,0]
    np.testing.assert_allclose(df["robust_acc"], [0.75, 0.5, 0.75, 0.5, 0.5, 0.25])


def test_robust_accuracy_table_worst_with_one_attack_and_unsorted_eps():
    df = robust_accuracy_table({"a": B([[0, 1], [1, 1]])}, [0.3, 0.1])
    # eps 0.1 row is [1, 1]; eps 0.3 row [0, 1]
    got = df.set_index(["attack", "eps"])["robust_acc"]
    assert got[("a", 0.3)] == 0.5 and got[("a", 0.1)] == 1.0
    assert got[("worst", 0.3)] == 0.5 and got[("worst", 0.1)] == 1.0


def test_robust_accuracy_table_empty_raises():
    with pytest.raises(ValueError):
        robust_accuracy_table({}, [0.1])


# ---------------------------------------------------------------------------- critical radius


@pytest.mark.parametrize(
    "eps, acc, level, expected",
    [
        ([0, 1, 2], [1.0, 0.8, 0.2], 0.5, 1.5),  # linear crossing between 1 and 2
        ([2, 0, 1], [0.2, 1.0, 0.8], 0.5, 1.5),  # same, unsorted
        ([0, 1, 2, 3], [1.0, 0.8, 0.5, 0.2], 0.5, 2.0),  # exact hit on the grid
        ([0, 1, 2], [0.5, 0.3, 0.1], 0.5, 0.0),  # exact hit at the first radius
        ([0, 1], [1.0, 0.8], 0.9, 0.5),  # other level
        ([0, 1, 2, 4], [1.0, 0.6, 0.6, 0.0], 0.3, 3.0),  # plateau, then crossing in [2, 4]
        ([0, 1, 2], [1.0, 0.9, 0.6], 0.5, math.nan),  # never crosses
        ([0.5, 1, 2], [0.4, 0.3, 0.1], 0.5, math.nan),  # starts below the level
    ],
)
def test_critical_radius_hand_cases(eps, acc, level, expected):
    got = critical_radius(np.array(eps, float), np.array(acc, float), level=level)
    if math.isnan(expected):
        assert math.isnan(got)
    else:
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_mean_std_keeps_group_keys_and_flattens():
    from ibrobust.stages.tables import mean_std

    df = pd.DataFrame(
        {"setting": ["a", "a", "b"], "seed": [0, 1, 0], "r": [1.0, 3.0, 5.0], "s": [2.0, 2.0, None]}
    )
    out = mean_std(df, ["setting"], ["r", "s"])
    assert out.columns.tolist() == ["setting", "n", "r.mean", "r.std", "s.mean", "s.std"]
    a, b = out.iloc[0], out.iloc[1]
    assert (a.setting, a.n, a["r.mean"], a["s.std"]) == ("a", 2, 2.0, 0.0)
    assert a["r.std"] == pytest.approx(2**0.5)
    assert b["r.mean"] == 5.0 and b["r.std"] == 0.0 and pd.isna(b["s.mean"]) and pd.isna(b["s.std"])
