"""The shared "one column per run" reading (ibrobust.claims.measurement.one_per_run) that
FA, PRELU and MARGIN measures use: hand-made columns."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from ibrobust.claims.measurement import one_per_run
from ibrobust.claims.verdicts import NotRun


def test_values_scaled_with_their_labels():
    v = pd.Series([0.5, 0.7], index=[3, 4])
    assert one_per_run(v, "c", "p=1", scale=math.sqrt(5)) == (
        (0.5 * math.sqrt(5), 0.7 * math.sqrt(5)), ("3", "4")
    )  # fmt: skip


def test_a_missing_value_is_an_error_naming_the_column_unless_dropped():
    v = pd.Series([0.5, float("nan"), 0.9], index=["a", "b", "c"])
    with pytest.raises(ValueError, match="column 'c' is NaN for a p=3 run"):
        one_per_run(v, "c", "p=3")
    assert one_per_run(v, "c", "p=3", drop_missing=True) == ((0.5, 0.9), ("a", "c"))


def test_no_value_at_all_is_not_run():
    with pytest.raises(NotRun, match="NaN for every run"):
        one_per_run(pd.Series([float("nan")] * 2), "c", "selected", drop_missing=True)
