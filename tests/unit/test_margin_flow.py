"""Study MARGIN's constant-step arm and the numbers it adds, on hand-computed cases: the KKT
residual 1 - cos(theta, -grad L) of tiny homogeneous nets, one GD step of the flow's trainer,
the loss and norm rate slopes on a synthetic L(t) = 1 / (t (ln t)^a), the smoothed margin's
decreases beyond float rounding, and the two schedules' losses at the same epoch
(schedules.csv)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
from claims_fixtures import margin_flow_history, margin_history, margin_kkt
from torch import nn

from ibrobust.analysis.margin import kkt_residual, log_ce, log_mean_loss
from ibrobust.data.clusters import ClusterDataConfig, make_cluster_data
from ibrobust.models.two_layer import TwoLayerConfig, TwoLayerFixed, init_two_layer
from ibrobust.studies.margin import tables as mr
from ibrobust.training.flow import (
    SEPARATED,
    FlowConfig,
    flow_config_from_dict,
    half_decades,
    train_flow,
)

torch.set_num_threads(1)


class Linear(nn.Module):
    """Logits W x (k, d) without a bias: 1-homogeneous in W."""

    homogeneity_degree = 1

    def __init__(self, w):
        super().__init__()
        self.w = nn.Parameter(torch.tensor(w, dtype=torch.float64))

    def forward(self, x):
        return x @ self.w.T


X1, Y1 = torch.tensor([[1.0, 2.0]], dtype=torch.float64), torch.tensor([0])


# ---------------------------------------------------------------- KKT residual


def test_kkt_residual_zero_when_theta_is_along_minus_grad():
    # one point x, label 0, two classes: dL/dW_j = (p_j - [j = 0]) x, so
    # -grad L = (1 - p_0) (x; -x): W = c (x; -x) is parallel to it for every c > 0, also
    # at c = 1000, where L = log(1 + e^-10000) underflows float64 (log space keeps grad log L)
    for c in (0.01, 0.3, 5.0, 1e3):
        net = Linear([[c * 1.0, c * 2.0], [-c * 1.0, -c * 2.0]])
        assert kkt_residual(net, X1, Y1) == pytest.approx(0.0, abs=1e-15)


def test_kkt_residual_hand_computed_when_theta_is_not_along_minus_grad():
    # W = (x; 0): cos(W, (x; -x)) = |x|^2 / (|x| sqrt(2) |x|) = 1 / sqrt(2)
    net = Linear([[1.0, 2.0], [0.0, 0.0]])
    assert kkt_residual(net, X1, Y1) == pytest.approx(1 - 1 / math.sqrt(2), rel=1e-12)
    # W = (x; x): grad L's second row is -(first), so cos = 0 and the residual 1
    assert kkt_residual(Linear([[1.0, 2.0], [1.0, 2.0]]), X1, Y1) == pytest.approx(1.0)
    # W = -(x; -x): opposite to the descent direction, residual 2
    assert kkt_residual(Linear([[-1.0, -2.0], [1.0, 2.0]]), X1, Y1) == pytest.approx(2.0)


def test_kkt_residual_matches_autograd_on_the_loss_in_batches_and_in_float32():
    # a 1-homogeneous two-layer net on cluster data: 1 - cos against a direct
    # autograd of the mean cross-entropy; batch size and the net's dtype do not matter
    data = make_cluster_data(ClusterDataConfig(d=10, k=4, n_train=12, n_test=4), seed=0)
    x, y = data.train.x.double(), (data.train.y < 0).long()
    w, b = init_two_layer(10, 2, TwoLayerConfig(m=4, bias=False), seed=0)
    net = TwoLayerFixed(w.double(), b.double(), torch.tensor([1.0, -1.0]))
    params = [p for p in net.parameters() if p.requires_grad]
    loss = nn.functional.cross_entropy(net(x), y)
    g = -torch.cat([d.reshape(-1) for d in torch.autograd.grad(loss, params)])
    theta = torch.cat([p.detach().reshape(-1) for p in params])
    want = 1 - float(theta @ g / (theta.norm() * g.norm()))
    assert kkt_residual(net, x, y) == pytest.approx(want, rel=1e-10)
    assert kkt_residual(net, x, y, batch_size=5) == pytest.approx(want, rel=1e-10)
    assert kkt_residual(net.float(), x.float(), y) == pytest.approx(want, rel=1e-5)


# ---------------------------------------------------------------- the constant-step trainer


def test_half_decades():
    assert half_decades(5) == []
    assert half_decades(10) == [10]
    assert half_decades(40000) == [10, 32, 100, 316, 1000, 3162, 10000, 31623]


def test_one_flow_step_is_lr_times_grad_loss_and_the_history_has_the_flows_time():
    # x = (1, 2), label 0, logits W x: the step is W <- W - lr * grad L (mean CE)
    w0 = [[0.5, -0.25], [0.1, 0.2]]
    net, ref = Linear(w0), Linear(w0)
    loss = log_mean_loss(log_ce(ref(X1), Y1)).exp()
    (g,) = torch.autograd.grad(loss, [ref.w])
    cfg = FlowConfig(lr=0.3, epochs=1, log_every=1, checkpoint_log10_losses=())
    res = train_flow(net, X1, Y1, cfg)
    torch.testing.assert_close(net.w.detach(), ref.w.detach() - 0.3 * g)
    assert [r["epoch"] for r in res.history] == [0, 1]
    assert [r["time"] for r in res.history] == [0.0, 0.3]
    assert res.history[0]["log10_eta"] == pytest.approx(math.log10(0.3))
    assert res.history[1]["log10_train_loss"] < res.history[0]["log10_train_loss"]
    assert res.stop_reason == "epochs" and res.checkpoints[-1].name == "final"


def test_flow_checkpoints_at_thresholds_separation_half_decades_and_end():
    # W (x; -x)-aligned from the start fits the point at step 0: "separated" then, a loss
    # threshold crossed later, steps 10 and 32 (half decades), "final" at the last step;
    # rows every 5 steps besides them
    net = Linear([[0.1, 0.1], [0.0, 0.0]])
    cfg = FlowConfig(lr=1.0, epochs=40, log_every=5, checkpoint_log10_losses=(-1.0,))
    res = train_flow(net, X1, Y1, cfg, x_test=X1, y_test=Y1)
    names = [c.name for c in res.checkpoints]
    k = next(c.epoch for c in res.checkpoints if c.name == "model-1")
    marks = [f"step-{s}" for s in (10, 32) if s != k]  # half decades after the fit at 0
    assert sorted(names) == sorted([SEPARATED, "model-1", *marks, "final"])
    assert [c.epoch for c in res.checkpoints] == sorted(c.epoch for c in res.checkpoints)
    h = pd.DataFrame(res.history)
    cks = {c.name: c.epoch for c in res.checkpoints}
    assert set(cks.values()) <= set(h["epoch"])  # every checkpoint is a logged row
    assert set(range(0, 41, 5)) <= set(h["epoch"])
    k = cks["model-1"]
    assert h.loc[h.epoch == k, "log10_train_loss"].item() < -1.0
    assert h.loc[h.epoch == k, "test_acc"].item() == 1.0  # test accuracy at checkpoints
    before = res.history  # the first step below the threshold: the step before is above
    assert all(r["log10_train_loss"] >= -1.0 for r in before if r["epoch"] < k)


@pytest.mark.parametrize(
    "bad, key",
    [({"lr": 0.0}, "lr"), ({"lr": -1.0}, "lr"), ({"lr": math.nan}, "lr"),
     ({"lr": 0.1, "epochs": 0}, "epochs"), ({"lr": 0.1, "log_every": 0}, "log_every"),
     ({"lr": 0.1, "dtype": "float16"}, "dtype"), ({"lr": 0.1, "momentum": 0.9}, "momentum")],
)  # fmt: skip
def test_flow_config_names_the_bad_key(bad, key):
    with pytest.raises(ValueError, match=key):
        flow_config_from_dict(bad)


def test_flow_refuses_a_net_in_another_dtype():
    with pytest.raises(ValueError, match="dtype"):
        train_flow(Linear([[1.0, 0.0], [0.0, 1.0]]).float(), X1, Y1, FlowConfig(lr=0.1))


# ---------------------------------------------------------------- rates, decreases, schedules


def test_rate_theory_by_hand_at_three_points():
    """The theory's slopes fitted over the window's own points (L = 2, so c = 2 - 2/L = 1).

    t = exp(e^k), k = 1, 2, 3: ln ln t = 1, 2, 3 (evenly spaced), so the norm slope is the end
    points' rise over 2: (1/2) (ln(e^3 + 3) - ln(e + 1)) / 2 = 0.4565, below 1/L = 0.5. The
    loss: ln t = e, e^2, e^3 and -(ln t + ln ln t) = -(ln t + k), a slope of -1 - (the slope of
    k on ln t) = -1 - (e^3 - e) / sum of (ln t - its mean)^2 = -1.1075."""
    e = math.e
    r = mr.rate_theory(np.exp([e, e**2, e**3]), 2)
    assert r["norm_rate_theory"] == pytest.approx(0.25 * math.log((e**3 + 3) / (e + 1)))
    assert r["norm_rate_theory"] == pytest.approx(0.45648, abs=1e-5)
    x = np.array([e, e**2, e**3])
    assert r["loss_rate_theory"] == pytest.approx(-1 - (e**3 - e) / ((x - x.mean()) ** 2).sum())
    assert r["loss_rate_theory"] == pytest.approx(-1.10751, abs=1e-5)
    # ln t = 10, 20, 30 (evenly spaced): the loss slope is -1 - (ln 30 - ln 10) / 20
    r = mr.rate_theory(np.exp([10.0, 20.0, 30.0]), 2)
    assert r["loss_rate_theory"] == pytest.approx(-1 - math.log(3) / 20)
    # L = 1: c = 0, the curves are straight lines: exactly -1 and 1/L
    r = mr.rate_theory(np.exp([10.0, 20.0, 30.0]), 1)
    assert (r["loss_rate_theory"], r["norm_rate_theory"]) == pytest.approx((-1.0, 1.0))
    # undefined: t <= 1 (no ln ln t), ln t + c ln ln t <= 0 (ln t = 0.1, c = 1), one point
    for t, degree in (([0.5, 2.0, 3.0], 2), (np.exp([0.1, 10.0, 20.0]), 2), ([10.0], 2)):
        assert all(math.isnan(v) for v in mr.rate_theory(np.asarray(t), degree).values())


@pytest.mark.parametrize("a", [1.5, 0.5, 3.0])
def test_rate_slopes_recover_a_on_a_synthetic_loss(a):
    """L(t) = 1 / (t (ln t)^a), rho^4 = ln(1/L) = ln t + a ln ln t: over the last decade of
    steps (t in [200, 2000]) the slope of ln L on ln t is -1 - a / ln t at a point of the
    window, so -(slope + 1) ln t_mid recovers a (within 3 %: evenly spaced steps weight the
    window's upper end, a little above t_mid). The theory values are the same fits of the
    theorem's curves (a = c = 1.5) over the same t: at a = 1.5 measured and theory agree to
    rounding; otherwise they differ, the loss slope by (a - 1.5) / ln t."""
    hist, _ = margin_flow_history(a=a, degree=4, steps=20000, lr=0.1)
    r = mr.flow_rates(hist, 4)
    assert (r["rate_t_lo"], r["rate_t_hi"]) == (200.0, 2000.0)
    w = hist[(hist["epoch"] >= 2000)]
    assert {k: r[k] for k in ("loss_rate_theory", "norm_rate_theory")} == pytest.approx(
        mr.rate_theory(w["time"].to_numpy(), 4), rel=1e-12
    )
    t_mid = math.sqrt(200.0 * 2000.0)
    assert -(r["loss_rate_slope"] + 1) * math.log(t_mid) == pytest.approx(a, rel=0.03)
    assert -(r["loss_rate_theory"] + 1) * math.log(t_mid) == pytest.approx(1.5, rel=0.03)
    # the norm's theory is well below 1/4 at these t: (ln t + c) / (ln t + c ln ln t) < 1
    assert 0.2 < r["norm_rate_theory"] < 0.25
    if a == 1.5:  # the theorem's own rates: measured = theory
        assert r["loss_rate_slope"] == pytest.approx(r["loss_rate_theory"], rel=1e-9)
        assert r["norm_rate_slope"] == pytest.approx(r["norm_rate_theory"], rel=1e-9)
    else:
        assert abs(r["loss_rate_slope"] / r["loss_rate_theory"] - 1) > 0.05


def test_rate_window_is_after_separation_and_nan_without_a_window():
    # fit only at step 19000: the window is [19000, 20000], not [2000, 20000]
    hist, _ = margin_flow_history(steps=20000, lr=0.1, fit_step=19000)
    assert mr.flow_rates(hist, 4)["rate_t_lo"] == pytest.approx(1900.0)
    # t <= 1 in the window (lr too small for ln ln t): every rate NaN, theory included
    hist, _ = margin_flow_history(steps=2000, lr=1e-4, fit_step=0)
    hist = hist.assign(time=hist["epoch"] * 1e-4)
    r = mr.flow_rates(hist, 4)
    assert all(math.isnan(r[k]) for k in mr.RATE_COLUMNS)
    never = hist.assign(train_acc=0.5)
    assert all(math.isnan(mr.flow_rates(never, 4)[k]) for k in mr.RATE_COLUMNS)


def test_decreases_count_beyond_a_relative_1e_9_only():
    h = pd.DataFrame(
        {
            "epoch": range(6),
            "train_acc": [0.5, 1.0, 1.0, 1.0, 1.0, 1.0],
            "smoothed_normalized_margin": [-1.0, 0.1, 0.2, 0.2 * (1 - 1e-12), 0.2 * (1 - 1e-6), 0.3],
        }
    )  # fmt: skip
    s = mr.separation(h)
    # 4 steps after the fit at 1: up, down 1e-12 (rounding: not counted), down 1e-6, up
    assert (s["fit_epoch"], s["epochs_after"], s["decreasing"]) == (1, 4, 1)
    assert s["frac_decreasing"] == pytest.approx(0.25)
    assert s["largest_rel_drop"] == pytest.approx(1e-6, rel=1e-4)
    assert mr.separation(h, rtol=0.0)["decreasing"] == 2  # any decrease at all
    hist, _ = margin_flow_history(steps=1000, dips=(30, 60))
    s = mr.separation(hist)
    assert s["decreasing"] == 2 and s["epochs_after"] == len(hist) - 11


def test_schedules_table_from_hand_made_histories():
    def loss_based(last, rollbacks):
        e = np.arange(last + 1)
        return pd.DataFrame({"epoch": e, "log10_train_loss": -0.5 * e,
                             "rollbacks": np.minimum(e, rollbacks)})  # fmt: skip

    def constant(last):
        e = np.arange(0, last + 1, 10)
        return pd.DataFrame({"epoch": e, "log10_train_loss": -0.01 * e})

    t = mr.schedules_table(
        {"s0": loss_based(80, 3), "s1": loss_based(30, 7)},
        {"s0": constant(50), "s1": constant(50), "s2": constant(50)},  # s2: no loss-based run
    )
    assert t["run"].tolist() == ["s0", "s1"]
    assert t["epochs"].tolist() == [50, 50]
    assert t["log10_loss_constant"].tolist() == pytest.approx([-0.5, -0.5])
    # s0 at epoch 50: -25; s1 stopped at epoch 30: its last value, -15
    assert t["log10_loss_loss_based"].tolist() == pytest.approx([-25.0, -15.0])
    assert t["loss_based_epoch"].tolist() == [50, 30]
    assert t["loss_based_rollbacks"].tolist() == [3, 7]
    empty = mr.schedules_table({"s0": loss_based(5, 0)}, {})
    assert empty.empty and "log10_loss_constant" in empty


def test_run_table_of_a_constant_step_run():
    hist, cks = margin_flow_history(steps=20000, lr=0.1)
    kkt = margin_kkt(cks, residuals=[0.3, 0.01])
    t, notes = mr.run_table(hist, cks, None, kkt, {"l2": [0.0, 1.0]}, "constant")
    assert t["name"].tolist() == ["separated", "final"]
    assert (t["schedule"] == "constant").all() and (t["paper_name"] == "-").all()
    assert t["kkt_residual"].tolist() == [0.3, 0.01] and (t["homogeneity"] == 4.0).all()
    assert t["sep_frac_decreasing"].iloc[0] == 0.0
    assert t["cert_frac_holding"].isna().all() and "certificate" not in notes
    assert t["norm_rate_slope"].iloc[0] == pytest.approx(t["norm_rate_theory"].iloc[0])
    lb, _ = mr.run_table(*margin_history(), None, margin_kkt(margin_history()[1]), {})
    assert lb[list(mr.RATE_COLUMNS)].isna().all().all() and (lb["schedule"] == "loss_based").all()
    with pytest.raises(ValueError, match="schedule"):
        mr.run_table(hist, cks, None, kkt, {}, "sgd")
