"""Study FA's measures behind the rules of fa.binary_radius (the near-zero radius of the
robust-accuracy curve), the d-trend claims (fa.other_class_small, fa.averaging_index*,
fa.decoupling_index: slopes over the scaling sweep's d) and fa.kclass_clean_accuracy, each
against hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ibrobust.claims.core import NotRun, StudyContext
from ibrobust.studies.feature_averaging.claim_context import binary_strong_hi
from ibrobust.studies.feature_averaging.measures import (
    falls_to,
    kclass_clean_accuracy,
    near_zero_radius,
)
from ibrobust.studies.feature_averaging.sweep_measures import base_cell, sweep_slope

GRID = [0.0, 5.0, 10.0, 15.0, 20.0]


def ctx(d=1000, k=10, scaling=True) -> StudyContext:
    config = {"radii": GRID, "readouts": ["sum", "argmax"]}
    if scaling:
        config["scaling"] = {"dataset": "base", "sweeps": {"d": [250, 500, 1000]}}
    return StudyContext("fa", config, datasets={"base": {"d": d, "k": k}})


# ---- falls_to: the crossing of a level and its grid bracket --------------------------------
def test_falls_to_interpolates_the_crossing_and_brackets_it_by_the_grid():
    # 0.2 at 2, 0.0 at 3: 0.1 is reached halfway, 2.5, between the grid radii 2 and 3
    assert falls_to([0, 1, 2, 3], [1.0, 0.5, 0.2, 0.0], 0.1) == (2.5, 2.0, 3.0)
    # unsorted input: the same curve
    assert falls_to([3, 0, 2, 1], [0.0, 1.0, 0.2, 0.5], 0.1) == (2.5, 2.0, 3.0)
    # exactly at the level at a grid radius: that radius, bracketed by the one before
    assert falls_to([0, 1, 2], [1.0, 0.1, 0.0], 0.1) == (1.0, 0.0, 1.0)
    # already at the level at radius 0: no bracket to speak of
    assert falls_to([0, 1], [0.05, 0.0], 0.1) == (0.0, 0.0, 0.0)


def test_falls_to_is_nan_off_the_grid_and_refuses_a_repeated_radius():
    assert all(math.isnan(v) for v in falls_to([0, 1, 2], [1.0, 0.6, 0.3], 0.1))
    with pytest.raises(ValueError, match="repeats a radius"):
        falls_to([0, 1, 1], [1.0, 0.5, 0.0], 0.1)


# ---- fa.binary_radius ------------------------------------------------------------------------
def test_binary_strong_bound_is_the_idealised_nets_ten_percent_point_plus_ten_percent():
    # 1.1 x (1 + 1.2816 sqrt(10/1000)) = 1.1 x 1.12816 = 1.24098
    assert binary_strong_hi(1000, 10) == 1.241
    # 1.1 x (1 + 1.2816 sqrt(10/3072)) = 1.1 x 1.07312 = 1.18043
    assert binary_strong_hi(3072, 10) == 1.18


def _curve(rows_per_seed, supervision="binary", model_kind="two_layer", attack="worst"):
    rows = []
    for seed, accs in rows_per_seed.items():
        for ro in ("sum", "argmax"):
            for eps, acc in zip(GRID, accs, strict=True):
                rows.append(dict(attack=attack, eps=eps, robust_acc=acc, n=400,
                                 dataset="base", model="m", supervision=supervision, seed=seed,
                                 readout=ro, model_kind=model_kind))  # fmt: skip
    return pd.DataFrame(rows)


def test_near_zero_radius_per_seed_over_sqrt_d_over_k_with_the_grid_bracket():
    # d = 1000, k = 10: sqrt(d/k) = 10. Seed 0: 0.3 at 10, 0.0 at 15: 0.1 at 10 + 5 x 2/3
    # = 13.333; seed 1: 0.1 exactly at 10 (bracket 5-10). The reference net, the k-class
    # net and the per-attack curves are not the 2-class worst case and are left out.
    binary = _curve({0: [1.0, 0.9, 0.3, 0.0, 0.0], 1: [1.0, 0.8, 0.1, 0.0, 0.0]})
    others = pd.concat([
        _curve({0: [1.0] * 5, 1: [1.0] * 5}, model_kind="robust_reference"),
        _curve({0: [1.0] * 5, 1: [1.0] * 5}, supervision="multiclass"),
        _curve({0: [1.0] * 5, 1: [1.0] * 5}, attack="pgd_margin"),
    ])  # fmt: skip
    m = near_zero_radius("base")({"curve": pd.concat([binary, others])}, ctx())
    assert m.values == pytest.approx((4 / 3, 1.0))
    assert [b for pair in m.brackets for b in pair] == pytest.approx([1.0, 1.5, 0.5, 1.0])
    assert (m.lower_bound, m.points, m.labels) == (False, 400, ("seed 0", "seed 1"))
    # the t interval of (1.3333, 1.0) widened by the brackets' reach from the mean 1.1667:
    # below to the mean lower end 0.75 (0.4167), above to the mean upper end 1.25 (0.0833)
    t = 12.706 * (1 / 3) / math.sqrt(2) / math.sqrt(2)  # t(1) x sd / sqrt(n)
    iv = m.ci(0.95)
    assert (iv.lo, iv.hi) == pytest.approx((7 / 6 - t - 5 / 12, 7 / 6 + t + 1 / 12), abs=1e-3)


def test_near_zero_radius_never_reached_is_censored_at_the_grid_top():
    binary = _curve({0: [1.0, 0.9, 0.3, 0.0, 0.0], 1: [1.0, 1.0, 0.9, 0.5, 0.2]})
    m = near_zero_radius("base")({"curve": binary}, ctx())
    assert m.values == pytest.approx((4 / 3, 2.0)) and m.lower_bound  # 20 / 10
    assert m.ci(0.95).hi == math.inf


def test_near_zero_radius_without_a_2class_curve_is_not_run():
    with pytest.raises(NotRun, match="no 2-class worst-case"):
        near_zero_radius("base")({"curve": _curve({0: [1.0] * 5}, supervision="multiclass")}, ctx())


# ---- the d-trend claims ------------------------------------------------------------------------
def _sweep(column=None, per_seed=None, label="binary"):
    rows = []
    for seed, (a, b) in (per_seed or {0: (0.5, -0.1), 1: (0.7, -0.1)}).items():
        for d in (250, 500, 1000):
            row = dict(key="d", dataset=f"base@d={d}", seed=seed, label=label, readout="sum",
                       d=d, k=10, critical_radius=1.0)  # fmt: skip
            if column is not None:
                row[column] = a + b * math.log(d)
            rows.append(row)
            rows.append(dict(row, readout="argmax"))  # 2-class rows repeat per readout
    return pd.DataFrame(rows)


def test_sweep_slope_is_the_slope_on_ln_d_common_to_the_seeds():
    # each seed: value = a_s - 0.1 ln d (intercepts 0.5, 0.7): the pooled slope is -0.1
    m = sweep_slope("binary", "other_class_ratio")({"scaling": _sweep("other_class_ratio")}, ctx())
    assert m.kind == "trend" and m.along.startswith("ln d")
    assert m.values == pytest.approx((-0.1, -0.1))
    assert m.mean == pytest.approx(-0.1)
    assert (m.unit, m.ci(0.95).n) == ("seeds", 6)  # 3 d x 2 seeds, the readouts deduplicated


def test_sweep_slope_fits_noisy_seeds_by_hand():
    # seed 0: (ln 250, 0.30), (ln 500, 0.20), (ln 1000, 0.16); seed 1: +0.1 each except the
    # last (0.22): the within-seed least-squares slope by hand
    x = np.log([250, 500, 1000])
    y0, y1 = np.array([0.30, 0.20, 0.16]), np.array([0.40, 0.30, 0.22])
    xc = x - x.mean()
    pooled = (xc @ (y0 - y0.mean()) + xc @ (y1 - y1.mean())) / (2 * xc @ xc)
    df = _sweep("fa_index")
    for seed, y in ((0, y0), (1, y1)):
        for d, v in zip((250, 500, 1000), y, strict=True):
            df.loc[(df.seed == seed) & (df.d == d), "fa_index"] = v
    m = sweep_slope("binary", "fa_index")({"scaling": df}, ctx())
    assert m.mean == pytest.approx(pooled)
    assert m.values == pytest.approx((np.polyfit(x, y0, 1)[0], np.polyfit(x, y1, 1)[0]))


def test_sweep_slope_without_the_column_is_not_run_naming_what_is_missing():
    summary = pd.DataFrame({"dataset": ["base"] * 4, "setting": ["binary"] * 3 + ["multiclass"],
                            "seed": [0, 1, 2, 0], "other_class_slope": [-0.3, -0.4, -0.2, 9.0]})  # fmt: skip
    diag = base_cell("other_class_slope", "binary", "the along-training slope")
    src = {"scaling": _sweep(), "summary": summary}
    with pytest.raises(NotRun) as err:
        sweep_slope("binary", "other_class_ratio", diagnostic=diag)(src, ctx())
    text = str(err.value)
    assert "records no 'other_class_ratio'" in text and "decompose" in text
    # the diagnostic: the base cell's 2-class mean (-0.3 - 0.4 - 0.2) / 3, not the k-class 9
    assert (
        "the along-training slope at the base d = 1000 alone (shown, not judged): -0.3 (3 seeds)"
        in text
    )
    # a column that is there but empty: the same
    with pytest.raises(NotRun, match="records no 'fa_index'"):
        sweep_slope("binary", "fa_index")(
            {"scaling": _sweep("fa_index").assign(fa_index=np.nan)}, ctx()
        )


def test_base_cell_is_empty_without_a_sweep_or_the_column():
    summary = pd.DataFrame({"dataset": ["base"], "setting": ["binary"], "seed": [0]})
    assert base_cell("fa_index", "binary", "x")({"summary": summary}, ctx()) == ""
    assert base_cell("fa_index", "binary", "x")({"summary": summary}, ctx(scaling=False)) == ""


# ---- fa.kclass_clean_accuracy ------------------------------------------------------------------
def _summary(fine=None):
    rows = []
    for seed in (0, 1):
        for ro in ("sum", "argmax"):
            row = dict(dataset="base", setting="multiclass", readout=ro, seed=seed, clean_acc=1.0,
                       n_points=400)  # fmt: skip
            if fine is not None:
                row["fine_acc"] = fine[seed]
            rows.append(row)
    return pd.DataFrame(rows)


def test_kclass_clean_accuracy_reads_fine_acc_per_seed():
    m = kclass_clean_accuracy("base")({"summary": _summary((0.97, 0.99))}, ctx())
    assert m.values == (0.97, 0.99) and m.points == 400


def test_kclass_clean_accuracy_without_fine_acc_is_not_run():
    with pytest.raises(NotRun, match="no 'fine_acc'"):
        kclass_clean_accuracy("base")({"summary": _summary()}, ctx())
