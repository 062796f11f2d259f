"""Study FA's summary table (ibrobust.studies.feature_averaging.tables), on hand-made run
results: one row per attacked run and readout, the decomposition and cosines joined by run."""

from __future__ import annotations

import math

import pytest

from ibrobust.studies.feature_averaging.tables import summary_markdown, summary_means, summary_table

RUN = {"dataset": "c", "model": "two_layer", "optimizer": "gd", "supervision": "binary"}
LABELS = {"two_layer": None, "robust_reference": "robust reference"}


def _attack(seed, radius, readout="", **run):
    """An attack summary tagged with its run ("" readout: the net's own, one score)."""
    return {**RUN, **run, "seed": seed, "readout": readout, "clean_acc": 1.0,
            "critical_radius": {"worst": radius}}  # fmt: skip


def test_summary_joins_by_run_and_repeats_one_score_rows_under_each_readout():
    attack = [
        _attack(0, 2.0),  # 2-class: one score
        _attack(1, 4.0),
        _attack(0, 6.0, readout="sum", supervision="multiclass"),
        _attack(0, 9.0, model="robust_reference", optimizer="handbuilt"),
    ]
    decomposition = [{**RUN, "seed": 0, "fa_index_final": 0.9, "residual_max": 0.01}]
    analysis = [{**RUN, "seed": 1, "cosine_same_class_mean": 0.7}]
    t = summary_table(attack, analysis, decomposition, LABELS, ["sum", "argmax"])
    assert len(t) == 3 * 2 + 1  # one-score rows under both readouts, the k-class one once
    assert sorted(set(t.setting)) == ["binary", "multiclass", "robust reference"]
    first = t[(t.seed == 0) & (t.setting == "binary") & (t.readout == "argmax")].iloc[0]
    assert first["critical_radius.worst"] == 2.0 and first.fa_index == 0.9
    assert math.isnan(first.other_class_ratio)  # absent from the decomposition: NaN
    second = t[(t.seed == 1) & (t.readout == "sum")].iloc[0]
    assert second.cosine_same_class_mean == 0.7 and math.isnan(second.fa_index)

    means = summary_means(t[t.setting == "binary"])
    row = means[means.readout == "sum"].iloc[0]
    assert row.n == 2 and row["critical_radius.worst.mean"] == pytest.approx(3.0)
    assert row["critical_radius.worst.std"] == pytest.approx(2**0.5)
    md = summary_markdown(means)
    assert (
        md.startswith("# Summary (mean and std over seeds; n = seeds)\n\n") and "1.414" in md
    )  # rounded to 3 digits


def test_summary_carries_the_k_class_nets_fine_accuracy_from_their_metrics():
    """test.fine_acc of each trained net's metrics.json joins its rows (every readout of a
    k-class net); a net without it (2-class, the reference) gets NaN; means over seeds."""
    multi = {"supervision": "multiclass"}
    attack = [_attack(0, 6.0, readout=ro, **multi) for ro in ("sum", "argmax")]
    attack += [_attack(1, 6.0, readout="sum", **multi), _attack(0, 2.0)]
    metrics = [{**RUN, **multi, "seed": 0, "test.fine_acc": 0.75, "test.binary_acc": 1.0},
               {**RUN, **multi, "seed": 1, "test.fine_acc": 1.0},
               {**RUN, "seed": 0, "test.binary_acc": 1.0}]  # fmt: skip
    t = summary_table(attack, [], [], LABELS, ["sum", "argmax"], metrics=metrics)
    k = t[t.setting == "multiclass"].set_index(["seed", "readout"]).fine_acc
    assert k[(0, "sum")] == 0.75 and k[(0, "argmax")] == 0.75 and k[(1, "sum")] == 1.0
    assert t[t.setting == "binary"].fine_acc.isna().all()
    means = summary_means(t[(t.setting == "multiclass") & (t.readout == "sum")])
    assert means["fine_acc.mean"].iloc[0] == pytest.approx(0.875)
    assert summary_table(attack, [], [], LABELS, ["sum"]).fine_acc.isna().all()  # no metrics


def test_checkpoint_slope_fits_the_trajectory_on_log10_step_by_hand():
    """Steps 10, 100, 1000 (log10 1, 2, 3) with ratios 0.3, 0.2, 0.1: slope -0.1 per decade;
    step 0 and a NaN checkpoint are left out; one usable checkpoint gives NaN."""
    from ibrobust.studies.feature_averaging.tables import checkpoint_slope

    traj = [{"step": 0, "r": 9.0}, {"step": 10, "r": 0.3}, {"step": 100, "r": 0.2},
            {"step": 1000, "r": 0.1}, {"step": 5000, "r": float("nan")}]  # fmt: skip
    assert checkpoint_slope(traj, "r") == pytest.approx(-0.1)
    assert math.isnan(checkpoint_slope(traj[:2], "r"))
