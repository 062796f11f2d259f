"""Study PRICE-LIN glue: data streams, problem grid, config mapping, metrics, cross-run tables,
figures (smoke)."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import torch

from ibrobust.analysis.linear_margin import linf_margin
from ibrobust.analysis.linear_metrics import robust_accuracy
from ibrobust.claims.sources import load_source
from ibrobust.data.teacher import make_teacher_batch
from ibrobust.studies.price_linear.experiment import (
    algorithm_label,
    algorithm_of,
    draw_margins,
    erm_config,
    margin_path_table,
    metrics_table,
    problem_grid,
    regime_label,
    sample_test_set,
    sample_train_draws,
    teacher_config,
    train_problems,
)
from ibrobust.studies.price_linear.measures import SOURCES
from ibrobust.studies.price_linear.plots import cosine_vs_fraction, gap_difference_heatmap, gap_vs_n
from ibrobust.studies.price_linear.tables import (
    gap_difference,
    gap_difference_table,
    mean_over_draws,
    run_cosines,
    solution_cosines,
    summary_markdown,
)
from ibrobust.training.robust_erm import (
    Checkpoints,
    RobustERMConfig,
    RobustERMResult,
    default_c,
    train_robust_erm,
)

DENSE = {"kind": "teacher", "d": 12, "k_w": 12, "k_x": 12, "entries": "pm1", "n_test": 300}
SPARSE_W = dict(DENSE, k_w=2)
STOP = {"loss_threshold": 1e-3, "max_iters": 400}


@pytest.fixture(autouse=True)
def one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def test_streams_match_make_teacher_batch_and_nest_in_n():
    cfg = teacher_config(SPARSE_W, 10)
    batch = make_teacher_batch(cfg, 3, [0, 2])
    x, y = sample_train_draws(cfg, 3, [0, 2])
    w_star, x_te, y_te = sample_test_set(cfg, 3)
    assert torch.equal(x, batch.x_train) and torch.equal(y, batch.y_train)
    assert torch.equal(w_star, batch.w_star) and torch.equal(x_te, batch.x_test)
    assert torch.equal(y_te, batch.y_test)
    # the training set of size 6 is a prefix of the one of size 10 (nested n grid)
    x6, y6 = sample_train_draws(teacher_config(SPARSE_W, 6), 3, [0, 2])
    assert torch.equal(x6, x[:, :6]) and torch.equal(y6, y[:, :6])
    with pytest.raises(ValueError, match="draws"):
        sample_train_draws(cfg, 3, [])


def test_draw_margins_are_the_lp_margins():
    x, y = sample_train_draws(teacher_config(DENSE, 8), 0, [0, 1])
    gamma, w = draw_margins(x, y)
    assert gamma.shape == (2,) and w.shape == (2, 12) and bool((gamma > 0).all())
    for r in range(2):
        assert gamma[r] == pytest.approx(linf_margin(x[r], y[r]).gamma)
        assert np.abs(w[r]).sum() == pytest.approx(1.0)


def test_problem_grid_is_draw_major_with_eps_per_draw():
    grid = problem_grid([4, 7], np.array([0.2, 0.5]), [0.0, 0.5, 0.9])
    assert len(grid) == 6
    np.testing.assert_array_equal(grid.row, [0, 0, 0, 1, 1, 1])
    np.testing.assert_array_equal(grid.draw, [4, 4, 4, 7, 7, 7])
    np.testing.assert_allclose(grid.eps_fraction, [0, 0.5, 0.9] * 2)
    np.testing.assert_allclose(grid.eps, [0, 0.1, 0.18, 0, 0.25, 0.45])
    with pytest.raises(ValueError, match="fractions"):
        problem_grid([0], np.array([0.2]), [0.0, 1.0])  # at gamma* nothing is separable
    with pytest.raises(ValueError, match="separable"):
        problem_grid([0], np.array([0.0]), [0.0])
    with pytest.raises(ValueError, match="one entry per draw"):
        problem_grid([0, 1], np.array([0.2]), [0.0])


def test_erm_config_maps_registry_entries_with_one_stopping_rule():
    steep = {"kind": "steepest", "norm": "l1", "scale": "dual", "c": None, "c_scale": 1.0,
             "lr_max": None, "tie": "split", "zero_subgradient": "min_norm"}  # fmt: skip
    diag = {"kind": "diag_gd", "alpha": 0.05, "adaptive": True, "lr": 0.01, "c": None,
            "c_scale": 4.0, "lr_max": 10.0, "zero_subgradient": "min_norm"}  # fmt: skip
    a, b = erm_config(steep, STOP), erm_config(diag, STOP)
    assert a.algorithm == "cd" and math.isinf(a.lr_max) and a.c is None
    assert b.algorithm == "diag_gd" and b.alpha == 0.05 and b.c_scale == 4.0 and b.lr_max == 10.0
    for cfg in (a, b):
        assert (cfg.loss_threshold, cfg.max_iters) == (1e-3, 400)
    assert [algorithm_of({"kind": "steepest", "norm": n}) for n in ("l2", "l1", "linf")] == [
        "gd",
        "cd",
        "sd",
    ]
    assert algorithm_label(diag) == "diag-net GD" and algorithm_label(steep) == "CD"
    with pytest.raises(ValueError, match="kind"):
        erm_config({"kind": "gd", "lr": 0.5}, STOP)
    with pytest.raises(ValueError, match="norm"):
        algorithm_of({"kind": "steepest", "norm": "l3"})


def test_regime_label():
    assert regime_label(SPARSE_W) == "(k_w, k_x) = (2, 12): 2-sparse w*, dense x"


def test_c_scale_multiplies_the_default_c_only():
    x, y = sample_train_draws(teacher_config(DENSE, 6), 0, [0])
    base = train_robust_erm(x, y, 0.0, RobustERMConfig(max_iters=0))
    scaled = train_robust_erm(x, y, 0.0, RobustERMConfig(max_iters=0, c_scale=4.0))
    torch.testing.assert_close(scaled.c, 4.0 * base.c)
    torch.testing.assert_close(base.c, default_c(x, "l2"))
    with pytest.raises(ValueError, match="c_scale"):
        RobustERMConfig(c=0.1, c_scale=2.0)
    with pytest.raises(ValueError, match="c_scale"):
        RobustERMConfig(c_scale=0.0)


def _trained(fractions=(0.0, 0.5)):
    cfg = teacher_config(DENSE, 10)
    x, y = sample_train_draws(cfg, 0, [0, 1])
    _, x_te, y_te = sample_test_set(cfg, 0)
    gamma, _ = draw_margins(x, y)
    grid = problem_grid([0, 1], gamma, list(fractions))
    res = train_problems(x, y, grid, erm_config({"kind": "steepest", "norm": "l2"}, STOP))
    return res, grid, x, y, x_te, y_te


def test_metrics_table_matches_direct_evaluation():
    res, grid, x, y, x_te, y_te = _trained()
    t = metrics_table(res, grid, x, y, x_te, y_te)
    assert len(t) == 4 and list(t.draw) == [0, 0, 1, 1]
    for b in range(4):
        r = int(grid.row[b])
        eps = float(grid.eps[b])
        tr = float(robust_accuracy(res.w[b], x[r], y[r], eps))
        te = float(robust_accuracy(res.w[b], x_te, y_te, eps))
        assert t.train_robust_acc[b] == pytest.approx(tr)
        assert t.test_robust_acc[b] == pytest.approx(te)
        assert t.robust_gap[b] == pytest.approx(tr - te)
        assert t.l1_norm[b] == pytest.approx(float(res.w[b].abs().sum()))
        assert t.iters[b] == int(res.iters[b])
        # converged means loss < threshold, which at n = 10 < 1/1e-3 forces robust fit
        assert bool(t.converged[b]) == (t.log10_loss[b] < -3)
        if t.converged[b]:
            assert tr == 1.0
        assert t.margin_ratio[b] <= 1 + 1e-9
    erm = t[t.eps_fraction == 0]
    np.testing.assert_allclose(erm.robust_gap, erm.clean_gap)  # at eps = 0 the two coincide


def _two_points():
    """z_i = y_i x_i = (2, 0) and (0, 1): gamma* = max over ||w||_1 = 1 of min(2 w_1, w_2)
    = 2/3 at w = (1/3, 2/3) (2 w_1 = w_2)."""
    x = torch.tensor([[[2.0, 0.0], [0.0, -1.0]]], dtype=torch.float64)
    y = torch.tensor([[1.0, -1.0]], dtype=torch.float64)
    return x, y


def test_margin_path_table_is_the_margin_ratio_at_each_checkpoint_hand_computed():
    x, y = _two_points()
    gamma, _ = draw_margins(x, y)
    assert gamma[0] == pytest.approx(2 / 3)
    grid = problem_grid([3], gamma, [0.0, 0.5])  # problems (draw 3, eps 0), (draw 3, eps 0.5)
    # margin ratio min(2 w_1, w_2) / ((|w_1| + |w_2|) 2/3): (1, 0) -> 0; (1, 1) -> (1/2)/(2/3)
    # = 3/4; (1, 2) -> (2/3)/(2/3) = 1; (1, -1) -> (-1/2)/(2/3) = -3/4
    ck = Checkpoints(
        problem=torch.tensor([0, 0, 1, 1]),
        step=torch.tensor([5, 9, 4, 7]),
        log_loss=torch.tensor([-1.0, -3.0, -2.0, -5.0], dtype=torch.float64) * math.log(10),
        w=torch.tensor([[1.0, 0.0], [1.0, 1.0], [1.0, -1.0], [1.0, 2.0]], dtype=torch.float64),
    )
    zeros = torch.zeros(2)
    res = RobustERMResult(w=ck.w[[1, 3]], log_loss=zeros, iters=zeros, converged=zeros,
                          diverged=zeros, c=zeros, checkpoints=ck)  # fmt: skip
    t = margin_path_table(res, grid, x, y)
    assert list(t.columns) == ["draw", "eps_fraction", "iter", "log10_loss", "margin_ratio"]
    assert list(t.draw) == [3] * 4 and list(t.eps_fraction) == [0.0, 0.0, 0.5, 0.5]
    assert list(t["iter"]) == [5, 9, 4, 7]
    np.testing.assert_allclose(t.log10_loss, [-1, -3, -2, -5])
    np.testing.assert_allclose(t.margin_ratio, [0.0, 0.75, -0.75, 1.0])
    with pytest.raises(ValueError, match="checkpoint_decades"):
        margin_path_table(RobustERMResult(**{**vars(res), "checkpoints": None}), grid, x, y)


def test_margin_path_of_a_run_ends_at_its_metrics_and_is_what_the_ledger_reads(tmp_path):
    """Trained by the study's config (erm_config records the checkpoints): the last
    checkpoint of a run stopped at 10^-3 is its stopping iterate (metrics_table's margin
    ratio); the gathered table passes the ledger's margin_path source."""
    cfg = teacher_config(DENSE, 10)
    x, y = sample_train_draws(cfg, 0, [0, 1])
    _, x_te, y_te = sample_test_set(cfg, 0)
    gamma, _ = draw_margins(x, y)
    grid = problem_grid([0, 1], gamma, [0.0, 0.5])
    erm = erm_config({"kind": "steepest", "norm": "l1"}, STOP)
    assert erm.checkpoint_decades
    res = train_problems(x, y, grid, erm)
    metrics, path = metrics_table(res, grid, x, y, x_te, y_te), margin_path_table(res, grid, x, y)
    assert bool(metrics.converged.all())
    last = path.groupby(["draw", "eps_fraction"]).tail(1).reset_index(drop=True)
    assert last["iter"].tolist() == metrics.iters.tolist()
    np.testing.assert_allclose(last.margin_ratio, metrics.margin_ratio)
    np.testing.assert_allclose(last.log10_loss, metrics.log10_loss)
    assert path.groupby(["draw", "eps_fraction"]).size().tolist() == [3] * 4  # 10^-1..10^-3
    table = path.assign(dataset="ds", optimizer="cd", n=10)
    file = tmp_path / "margin_path.csv"
    table.to_csv(file, index=False)
    loaded = load_source(file, SOURCES["margin_path"])
    assert len(loaded) == len(table)


def test_solution_cosines_pairs_and_alignment():
    w = np.array([[1.0, 0.0], [1.0, 1.0]])
    keys = {"draw": np.array([0, 0]), "eps_fraction": np.array([0.0, 0.5])}
    sols = {"a": {"w": w, **keys}, "b": {"w": 2 * w, **keys}, "c": {"w": -w, **keys}}
    t = solution_cosines(sols)
    assert (
        list(zip(t.optimizer_a, t.optimizer_b, strict=True))
        == [("a", "b")] * 2 + [("a", "c")] * 2 + [("b", "c")] * 2
    )
    np.testing.assert_allclose(t.cosine, [1, 1, -1, -1, -1, -1])
    bad = {
        "a": sols["a"],
        "b": {"w": w, "draw": np.array([0, 1]), "eps_fraction": keys["eps_fraction"]},
    }
    with pytest.raises(ValueError, match="same problems"):
        solution_cosines(bad)
    with pytest.raises(ValueError, match="two"):
        solution_cosines({"a": sols["a"]})


def _tidy(values):
    """Metrics rows for dataset ds, optimizers gd/cd, n in (8, 16), draws (0, 1), eps 0."""
    rows = []
    for (opt, n, draw), gap in values.items():
        rows.append(
            dict(dataset="ds", optimizer=opt, n=n, draw=draw, eps_fraction=0.0, robust_gap=gap)
        )
    return pd.DataFrame(rows)


def test_gap_difference_is_mean_over_n_of_draw_means():
    vals = {
        ("gd", 8, 0): 0.5, ("gd", 8, 1): 0.3, ("cd", 8, 0): 0.1, ("cd", 8, 1): 0.1,
        ("gd", 16, 0): 0.2, ("gd", 16, 1): 0.2, ("cd", 16, 0): 0.2, ("cd", 16, 1): 0.0,
    }  # fmt: skip
    t = gap_difference(_tidy(vals), "gd", "cd")
    # n=8: mean(0.4, 0.2) = 0.3; n=16: mean(0.0, 0.2) = 0.1 -> 0.2
    assert t.difference.iloc[0] == pytest.approx(0.2)
    assert t.n_values.iloc[0] == 2
    with pytest.raises(ValueError, match="sd"):
        gap_difference(_tidy(vals), "gd", "sd")


def test_gap_difference_counts_the_pairs_with_a_run_at_its_cap_and_the_heatmap_marks_them():
    vals = {("gd", 8, 0): 0.5, ("cd", 8, 0): 0.1, ("gd", 8, 1): 0.3, ("cd", 8, 1): 0.1,
            ("gd", 16, 0): 0.2, ("cd", 16, 0): 0.0, ("gd", 16, 1): 0.2, ("cd", 16, 1): 0.0}  # fmt: skip
    df = _tidy(vals)
    # CD at (8, 1) and both at (16, 0) stopped at the cap: two open (n, draw) pairs
    open_ = {("cd", 8, 1), ("gd", 16, 0), ("cd", 16, 0)}
    keys = zip(df.optimizer, df.n, df.draw, strict=True)
    df["converged"] = [k not in open_ for k in keys]
    t = gap_difference(df, "gd", "cd")
    assert t.unconverged_pairs.iloc[0] == 2
    assert t.difference.iloc[0] == pytest.approx(0.25)  # still every pair: (0.3 + 0.2) / 2
    fig = gap_difference_heatmap(t, {"ds": "dense"}, first="gd", second="cd")
    texts = [x.get_text() for x in fig.axes[0].texts]
    assert "+25.0 *2" in texts and "iteration cap" in fig.axes[0].get_title()
    plt.close(fig)
    assert "unconverged_pairs" not in gap_difference(_tidy(vals), "gd", "cd")


def test_gap_difference_table_labels_the_gap_and_the_pair():
    vals = {("gd", 8, 0): 0.5, ("cd", 8, 0): 0.1, ("gd", 16, 0): 0.2, ("cd", 16, 0): 0.0}
    t = gap_difference_table(_tidy(vals), "gd", "cd", "robust")
    assert list(t.columns[:5]) == ["dataset", "eps_fraction", "gap", "first", "second"]
    assert (t.gap.iloc[0], t["first"].iloc[0], t.second.iloc[0]) == ("robust_gap", "gd", "cd")
    assert t.difference.iloc[0] == pytest.approx(0.3)  # mean(0.4, 0.2)


def test_run_cosines_reads_each_jobs_weights_and_tags_its_run():
    # weights.npz arrays: w is (optimizer, problem, d); one problem (draw 0, eps 0) per job
    keys = {"draw": np.array([0]), "eps_fraction": np.array([0.0])}
    z1 = {"optimizer": np.array(["a", "b"]), "w": np.array([[[1.0, 0.0]], [[1.0, 1.0]]]), **keys}
    z2 = {"optimizer": np.array(["a", "b"]), "w": np.array([[[1.0, 0.0]], [[-2.0, 0.0]]]), **keys}
    t = run_cosines([z1, z2], [{"dataset": "r", "n": 8}, {"dataset": "r", "n": 16}])
    assert list(t.columns[:2]) == ["dataset", "n"] and list(t.n) == [8, 16]
    assert set(t.optimizer_a) == {"a"} and set(t.optimizer_b) == {"b"}
    np.testing.assert_allclose(t.cosine, [2**-0.5, -1.0])


def _sweep():
    """A two-algorithm, two-n metrics table and its cosines, from real (tiny) training."""
    frames, sols = [], {}
    for n in (6, 10):
        cfg = teacher_config(DENSE, n)
        x, y = sample_train_draws(cfg, 0, [0, 1])
        _, x_te, y_te = sample_test_set(cfg, 0)
        gamma, _ = draw_margins(x, y)
        grid = problem_grid([0, 1], gamma, [0.0, 0.5])
        for opt, norm in (("g", "l2"), ("c", "l1")):
            res = train_problems(x, y, grid, erm_config({"kind": "steepest", "norm": norm}, STOP))
            t = metrics_table(res, grid, x, y, x_te, y_te).assign(dataset="ds", optimizer=opt, n=n)
            frames.append(t)
            sols.setdefault(n, {})[opt] = {
                "w": res.w.numpy(),
                "draw": grid.draw,
                "eps_fraction": grid.eps_fraction,
            }
    cos = pd.concat(
        [solution_cosines(s).assign(dataset="ds", n=n) for n, s in sols.items()],
        ignore_index=True,
    )
    return pd.concat(frames, ignore_index=True), cos


def test_tables_and_figures_from_a_tiny_sweep():
    df, cos = _sweep()
    labels_d, labels_o = {"ds": "dense"}, {"g": "GD", "c": "CD"}
    means = mean_over_draws(df)
    assert len(means) == 2 * 2 * 2 and "robust_gap_mean" in means and "converged_mean" in means
    md = summary_markdown(
        df, cos, first="g", second="c", dataset_labels=labels_d, optimizer_labels=labels_o
    )
    for part in ("smallest n = 6", "robust_gap(GD) - robust_gap(CD)", "Cosine", "Stopping"):
        assert part in md
    fig = gap_vs_n(df, labels_d, labels_o)
    assert len(fig.axes) == 2  # 1 regime x 2 eps fractions
    plt.close(fig)
    fig = gap_difference_heatmap(gap_difference(df, "g", "c"), labels_d, first="g", second="c")
    plt.close(fig)
    fig = cosine_vs_fraction(cos, labels_d, labels_o, spread="minmax")
    assert len(fig.axes) == 1
    plt.close(fig)
