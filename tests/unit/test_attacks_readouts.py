"""One attack judged under several binary readouts (issue 28, lead 1): ``pgd_readouts``,
``correctness_over_radii_readouts``, ``evaluate_attacks_readouts`` and the attack job's
``evaluate_robustness``.

What is asserted exactly:

* one readout is today's PGD: the same generator draws and the same examples as a frozen
  copy of the single-readout restart loop (``_reference_pgd`` below, verbatim from before
  the change), and the suite with one readout is ``evaluate_attacks`` on that readout;
* with several readouts, per readout the outcome is the worst case over the shared
  restarts: a point is fooled under readout j iff some restart's endpoint fools j, and
  skipping decided points changes no live outcome (the same fooled sets as running every
  restart on every point; the generator ends in the same state);
* a restart is skipped only where the point is fooled under every readout where it is
  alive (counted rows per restart on judges whose verdicts are fixed);
* every stored example lies in its ball (and box) and, where reported fooled under a
  readout, is misclassified under that readout;
* with deterministic starts the shared attack gives, per readout, the masks of running it
  under that readout alone (sharing changes only which random starts a point sees).
"""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
import torch
from torch import nn

from ibrobust.attacks.losses import get_attack_loss
from ibrobust.attacks.mode import attack_mode
from ibrobust.attacks.pgd import (
    PGDConfig,
    _pgd_run,
    _random_start,
    _rows,
    pgd,
    pgd_readouts,
)
from ibrobust.attacks.suite import (
    AttackContext,
    correctness_over_radii,
    correctness_over_radii_readouts,
    evaluate_attacks,
    evaluate_attacks_readouts,
    shared_across_readouts,
)
from ibrobust.attacks.tasks import get_task
from ibrobust.data.clusters import ClusterDataConfig, make_cluster_data
from ibrobust.data.dataset import dataset_from_arrays
from ibrobust.models.readout import READOUTS, with_readout
from ibrobust.models.two_layer import TwoLayerFixed
from ibrobust.seeding import torch_generator
from ibrobust.stages.robustness import evaluate_robustness

torch.set_num_threads(1)


# ---- the single-readout PGD as it was before the multi-readout one (the oracle) ------------
def _reference_pgd(model, x, y, fine, eps, loss_fn, cfg, gen, box=None, *, task, outcome_only):
    """``pgd`` and ``_pgd_chunk`` verbatim from before ``pgd_readouts`` (commit 27a2974);
    the per-restart run ``_pgd_run`` and the starts are the library's."""
    loss_fn = get_attack_loss(loss_fn) if isinstance(loss_fn, str) else loss_fn
    task = get_task(task)
    eps_t = torch.as_tensor(eps, dtype=x.dtype).reshape(-1)
    r_, n, shape = eps_t.numel(), x.shape[0], tuple(x.shape[1:])
    xf = x.reshape(n, -1)
    rest = (shape, max(1, math.ceil(cfg.l1_top * xf.shape[1])), outcome_only)
    if r_ == 1 and n <= cfg.batch_size:
        with attack_mode(model):
            eps_n = float(eps_t[0])
            x_adv = _reference_chunk(model, xf, y, fine, eps_n, loss_fn, cfg, gen, box, task, *rest)
        return x_adv.reshape(1, n, *shape)
    out = torch.empty(r_, n, xf.shape[1], dtype=x.dtype)
    with attack_mode(model):
        idx_r = torch.arange(r_).repeat_interleave(n)
        idx_n = torch.arange(n).repeat(r_)
        for lo in range(0, r_ * n, cfg.batch_size):
            sl = slice(lo, lo + cfg.batch_size)
            ir, ie = idx_r[sl], idx_n[sl]
            out[ir, ie] = _reference_chunk(
                model, xf[ie], y[ie], fine[ie], eps_t[ir, None], loss_fn, cfg, gen, box, task,
                *rest,
            )  # fmt: skip
    return out.reshape(r_, n, *shape)


def _reference_chunk(model, x, y, fine, eps, loss_fn, cfg, gen, box, task, shape, l1_k, oo):
    best = x.clone()
    best_loss = torch.full((x.shape[0],), -float("inf"), dtype=x.dtype)
    best_fooled = torch.zeros(x.shape[0], dtype=torch.bool)
    for _ in range(cfg.restarts):
        delta = (
            _random_start(x.shape, eps, cfg.norm, gen, x)
            if cfg.random_start
            else torch.zeros_like(x)
        )
        if cfg.restarts == 1:
            return _pgd_run(model, x, y, fine, eps, delta, loss_fn, cfg, box, shape, l1_k)
        skip = oo and bool(best_fooled.any())
        todo = torch.nonzero(~best_fooled).flatten() if skip else None
        if todo is not None and todo.numel() == 0:
            continue
        xs, ys, fs, es, ds = (_rows(v, todo) for v in (x, y, fine, eps, delta))
        x_adv = _pgd_run(model, xs, ys, fs, es, ds, loss_fn, cfg, box, shape, l1_k)
        with torch.no_grad():
            loss = loss_fn(model, x_adv.reshape(-1, *shape), ys, fs)
            fooled = ~task.correct(model, x_adv.reshape(-1, *shape), ys, fs)
            b_fooled, b_loss = _rows(best_fooled, todo), _rows(best_loss, todo)
            better = (fooled & ~b_fooled) | ((fooled == b_fooled) & (loss > b_loss))
            sel = torch.nonzero(better).flatten()
            rows = sel if todo is None else todo[sel]
            best[rows] = x_adv[sel]
            best_loss[rows] = loss[sel]
            best_fooled[rows] = b_fooled[sel] | fooled[sel]
    return best.detach()


# ---- fixtures ------------------------------------------------------------------------------
def k_class_net(d=10, k=4, m=5, seed=0, dtype=torch.float32):
    """A random k-class two-layer net with readout (+, -, +, -, ...): its readouts disagree."""
    g = torch_generator(seed, "test_attacks_readouts", "net")
    w = torch.randn(k, m, d, generator=g, dtype=torch.float64)
    b = 0.5 * torch.randn(k, m, generator=g, dtype=torch.float64)
    sign = torch.where(torch.arange(k) % 2 == 0, 1.0, -1.0).to(torch.float64)
    return TwoLayerFixed(w.to(dtype), b.to(dtype), sign.to(dtype))


def points(net, n=40, d=10, seed=0, box=False, dtype=torch.float32):
    """(x, y, fine): fine = the net's own argmax (clean-correct on the fine task), y its sign."""
    g = torch_generator(seed, "test_attacks_readouts", "points")
    x = torch.rand(n, d, generator=g, dtype=torch.float64)
    x = (x if box else 2 * x - 1).to(dtype)
    with torch.no_grad():
        fine = net(x).argmax(1)
    return x, net.readout[fine].to(dtype), fine


def views(net, readouts=READOUTS):
    return [with_readout(net, r) for r in readouts]


CASES = [  # (norm, restarts, outcome_only, box, batch_size)
    ("l2", 3, True, False, 4096),
    ("l2", 3, False, True, 4096),
    ("l2", 1, False, False, 4096),
    ("linf", 4, True, True, 7),  # several chunks per radius
    ("linf", 2, False, False, 4096),
    ("l1", 3, True, True, 4096),
    ("l1", 3, False, False, 11),
]


@pytest.mark.parametrize(("norm", "restarts", "outcome_only", "box", "batch"), CASES)
@pytest.mark.parametrize("loss", ["ce", "margin"])
def test_one_readout_is_the_single_readout_pgd_exactly(
    norm, restarts, outcome_only, box, batch, loss
):
    net = k_class_net()
    x, y, fine = points(net, box=box)
    cfg = PGDConfig(norm=norm, steps=4, restarts=restarts, step_size=0.4, batch_size=batch)
    eps = {"l2": [0.3, 0.8], "linf": [0.05, 0.2], "l1": [0.5, 1.5]}[norm]
    bx = (0.0, 1.0) if box else None
    for ro in ("sum", "argmax"):
        model = with_readout(net, ro)
        for radii in (eps, eps[1:]):  # several radii, and the one-chunk path of one radius
            g_ref, g_new, g_live = (torch_generator(3, "one", norm) for _ in range(3))
            ref = _reference_pgd(model, x, y, fine, radii, loss, cfg, g_ref, bx, task="binary",
                                 outcome_only=outcome_only)  # fmt: skip
            new = pgd(model, x, y, fine, radii, loss, cfg, g_new, bx, outcome_only=outcome_only)
            live = torch.ones(1, len(x), dtype=torch.bool)
            one = pgd_readouts(model, [model], x, y, fine, radii, loss, cfg, g_live, bx,
                               live=live, outcome_only=outcome_only)  # fmt: skip
            assert torch.equal(new, ref)
            assert torch.equal(one[0], ref)
            assert torch.equal(g_new.get_state(), g_ref.get_state())
            assert torch.equal(g_live.get_state(), g_ref.get_state())


def _endpoints(net, x, y, fine, eps, cfg, gen):
    """Every restart's endpoint (restarts, n, d), replaying the starts from ``gen``."""
    out = []
    with attack_mode(net):
        for _ in range(cfg.restarts):
            delta = _random_start(x.shape, eps, cfg.norm, gen, x)
            out.append(
                _pgd_run(
                    net, x, y, fine, eps, delta, get_attack_loss("ce"), cfg, None, (x.shape[1],), 1
                )  # fmt: skip
            )
    return torch.stack(out)


def _fooled(view, xa, y, fine):
    with torch.no_grad():
        return ~get_task("binary").correct(view, xa, y, fine)


@pytest.mark.parametrize("norm", ["l2", "linf"])
def test_each_readout_gets_the_worst_case_over_the_shared_restarts(norm):
    net = k_class_net(seed=1)
    x, y, fine = points(net, n=60, seed=1)
    vs = views(net)
    eps = {"l2": 0.6, "linf": 0.12}[norm]
    cfg = PGDConfig(norm=norm, steps=3, restarts=4, step_size=0.5)
    ends = _endpoints(net, x, y, fine, eps, cfg, torch_generator(4, "worst"))  # (4, n, d)
    full = pgd_readouts(net, vs, x, y, fine, [eps], "ce", cfg, torch_generator(4, "worst"))[:, 0]
    loss = get_attack_loss("ce")
    counts = []
    for j, v in enumerate(vs):
        any_fooled = torch.stack([_fooled(v, e, y, fine) for e in ends]).any(0)
        assert torch.equal(_fooled(v, full[j], y, fine), any_fooled), READOUTS[j]
        with torch.no_grad():  # not fooled: the highest loss over the restarts
            best = torch.stack([loss(net, e, y, fine) for e in ends]).amax(0)
            torch.testing.assert_close(
                loss(net, full[j], y, fine)[~any_fooled], best[~any_fooled], rtol=0, atol=0
            )
        counts.append(int(any_fooled.sum()))
    assert len(set(counts)) > 1 and 0 < min(counts) and max(counts) < len(x), counts


@pytest.mark.parametrize("norm", ["l2", "linf"])
def test_skipping_decided_points_changes_no_live_outcome(norm):
    """outcome_only with live masks: per readout the fooled set on its live points equals
    that of running every restart on every point; the generator ends in the same state."""
    net = k_class_net(seed=2)
    x, y, fine = points(net, n=60, seed=2)
    vs = views(net)
    g = torch_generator(0, "live")
    live = torch.rand(len(vs), len(x), generator=g) < 0.7
    eps = {"l2": 0.6, "linf": 0.12}[norm]
    cfg = PGDConfig(norm=norm, steps=3, restarts=4, step_size=0.5)
    g_all, g_skip = torch_generator(5, "skip"), torch_generator(5, "skip")
    full = pgd_readouts(net, vs, x, y, fine, [eps], "ce", cfg, g_all, live=live)[:, 0]
    skip = pgd_readouts(
        net, vs, x, y, fine, [eps], "ce", cfg, g_skip, live=live, outcome_only=True
    )[:, 0]
    assert torch.equal(g_all.get_state(), g_skip.get_state())
    for j, v in enumerate(vs):
        f_full, f_skip = _fooled(v, full[j], y, fine), _fooled(v, skip[j], y, fine)
        assert torch.equal(f_full[live[j]], f_skip[live[j]]), READOUTS[j]


class FixedVerdict(nn.Module):
    """A judge whose binary score is a fixed sign per point: wrong (-1) where ``wrong``."""

    def __init__(self, net: nn.Module, wrong: torch.Tensor):
        super().__init__()
        self.net, self.wrong = net, wrong

    def forward(self, x):
        return self.net(x)

    def binary_score(self, x):  # y = +1 for every point below
        return torch.where(self.wrong[: x.shape[0]], -1.0, 1.0)


class CountingLoss:
    """The ce loss, recording how many rows each call sees."""

    def __init__(self):
        self.rows: list[int] = []

    def __call__(self, model, x, y, fine):
        self.rows.append(x.shape[0])
        return get_attack_loss("ce")(model, x, y, fine)


def test_a_restart_is_skipped_only_where_fooled_under_every_live_readout():
    """Judge A calls every point wrong, judge B every point right. A point is decided after
    the first restart only where it is not alive under B; the later restarts attack the
    rest."""
    net = k_class_net(seed=3)
    n = 12
    x, _, fine = points(net, n=n, seed=3)
    y = torch.ones(n)
    a = FixedVerdict(net, torch.ones(n, dtype=torch.bool))
    b = FixedVerdict(net, torch.zeros(n, dtype=torch.bool))
    cfg = PGDConfig(norm="l2", steps=2, restarts=3, step_size=0.5)
    per_restart = cfg.steps + 1  # the steps, then the judging loss

    def rows(live):
        loss = CountingLoss()
        pgd_readouts(net, [a, b], x, y, fine, [0.5], loss, cfg, torch_generator(0, "n"),
                     live=live, outcome_only=True)  # fmt: skip
        return loss.rows[::per_restart]

    both = torch.ones(2, n, dtype=torch.bool)
    assert rows(both) == [n, n, n]  # never fooled under B: never decided
    only_a = both.clone()
    only_a[1, :5] = False  # 5 points dead under B: decided once fooled under A
    assert rows(only_a) == [n, n - 5, n - 5]
    only_a[1] = False  # dead under B everywhere: all decided after the first restart
    assert rows(only_a) == [n]
    only_b = both.clone()
    only_b[0] = False  # alive under B only, which is never fooled: nothing decided
    assert rows(only_b) == [n, n, n]


@pytest.mark.parametrize("box", [False, True])
def test_stored_examples_are_feasible_and_fooled_where_reported(box):
    net = k_class_net(seed=4)
    x, y, fine = points(net, n=50, seed=4, box=box)
    vs = views(net)
    eps = [0.4, 1.0]
    cfg = PGDConfig(norm="l2", steps=5, restarts=3, step_size=0.3, batch_size=16)
    bx = (0.0, 1.0) if box else None
    adv = pgd_readouts(net, vs, x, y, fine, eps, "ce", cfg, torch_generator(1, "feas"), bx)
    assert adv.shape == (len(vs), len(eps), *x.shape)
    for r, e in enumerate(eps):
        assert ((adv[:, r] - x).norm(dim=-1) <= e * (1 + 1e-5)).all()
        if box:
            assert ((adv >= 0) & (adv <= 1)).all()
    # the suite's masks: a point dead under a readout at a radius is misclassified there by
    # the example the suite's run judged (run_spec_readouts judges exactly those examples)
    spec = {"kind": "pgd", "loss": "ce", "norm": "l2", "steps": 5, "restarts": 3}
    ctx = AttackContext(box=bx)
    masks = correctness_over_radii_readouts(
        vs, x, y, fine, eps, spec, ctx, torch_generator(1, "feas")
    )
    clean = torch.stack([~_fooled(v, x, y, fine) for v in vs])
    assert (masks[:, 1] <= masks[:, 0]).all() and (masks[:, 0] <= clean).all()


def test_deterministic_starts_share_without_changing_any_readout():
    """Without random starts a point's trajectory depends on nothing but the point: running
    the attack once on the union of alive points gives each readout the masks of running
    it under that readout alone."""
    net = k_class_net(seed=5, dtype=torch.float64)
    x, y, fine = points(net, n=60, seed=5, dtype=torch.float64)
    vs = views(net)
    spec = {"kind": "pgd", "loss": "ce", "norm": "l2", "steps": 6, "restarts": 2,
            "random_start": False}  # fmt: skip
    radii = [0.0, 0.2, 0.5, 0.9, 1.5]
    ctx = AttackContext()
    shared = correctness_over_radii_readouts(vs, x, y, fine, radii, spec, ctx, torch_generator(0))
    for j, v in enumerate(vs):
        alone = correctness_over_radii(v, x, y, fine, radii, spec, ctx, torch_generator(0))
        assert torch.equal(shared[j], alone), READOUTS[j]
    assert len({int(s.sum()) for s in shared}) > 1  # the readouts do disagree


# ---- the suite ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def clusters():
    cfg = ClusterDataConfig(d=12, k=4, n_train=8, n_test=60, sigma=1.0)
    data = make_cluster_data(cfg, 0)
    g = torch_generator(0, "test_attacks_readouts", "cluster net")
    w = data.means.repeat_interleave(3, 0).reshape(4, 3, 12) + 0.3 * torch.randn(
        4, 3, 12, generator=g
    )
    net = TwoLayerFixed(w, 0.1 * torch.randn(4, 3, generator=g), data.sign.float())
    return net, data


SPECS = {
    "pgd_margin": {"kind": "pgd", "loss": "margin", "norm": "l2", "steps": 4, "restarts": 2},
    "pgd_ce": {"kind": "pgd", "loss": "ce", "norm": "l2", "steps": 4, "restarts": 2},
    "universal": {"kind": "universal"},
}
RADII = [0.0, 0.5, 1.0, 2.0, 3.0]


def test_which_attacks_are_shared_comes_from_the_kind_policy():
    assert shared_across_readouts(SPECS["pgd_ce"])
    assert shared_across_readouts({"kind": "pgd", "loss": "fine_margin"})
    assert not shared_across_readouts(SPECS["pgd_margin"])
    assert not shared_across_readouts({"kind": "pgd"})  # default loss: the margin
    assert not shared_across_readouts(SPECS["universal"])
    assert not shared_across_readouts({"kind": "noise"})


@pytest.mark.parametrize("readout", READOUTS)
def test_suite_with_one_readout_is_evaluate_attacks(clusters, readout):
    net, data = clusters
    te = data.test
    ctx = AttackContext(data.means, data.sign)
    tables, masks = evaluate_attacks_readouts(
        net, [readout], te.x, te.y, te.fine, RADII, SPECS, ctx, torch_generator(0, "s")
    )
    table, ref = evaluate_attacks(
        with_readout(net, readout), te.x, te.y, te.fine, RADII, SPECS, ctx, torch_generator(0, "s")
    )
    pd.testing.assert_frame_equal(tables[readout], table)
    assert masks[readout].keys() == ref.keys()
    for name in ref:
        assert torch.equal(masks[readout][name], ref[name]), name


def test_suite_tables_per_readout_worst_within_each_readout(clusters):
    net, data = clusters
    te = data.test
    ctx = AttackContext(data.means, data.sign)
    tables, masks = evaluate_attacks_readouts(
        net, ["sum", "argmax"], te.x, te.y, te.fine, RADII, SPECS, ctx, torch_generator(0, "w")
    )
    assert list(tables) == ["sum", "argmax"]
    for ro, t in tables.items():
        wide = t.pivot(index="eps", columns="attack", values="robust_acc")
        assert (wide["worst"] == wide[list(SPECS)].min(axis=1)).all(), ro
        clean = ~_fooled(with_readout(net, ro), te.x, te.y, te.fine)
        for name in SPECS:
            assert torch.equal(masks[ro][name][0], clean), (ro, name)  # radius 0: clean
            assert (masks[ro][name][1:] <= masks[ro][name][:-1]).all(), (ro, name)  # monotone
    # the readouts are read differently (else this test could not tell them apart)
    assert not tables["sum"].robust_acc.equals(tables["argmax"].robust_acc)


def test_suite_rejects_repeated_or_no_readouts(clusters):
    net, data = clusters
    te = data.test
    for bad in ([], ["sum", "sum"]):
        with pytest.raises(ValueError, match="readouts"):
            evaluate_attacks_readouts(net, bad, te.x, te.y, te.fine, RADII, SPECS,
                                      AttackContext(), torch_generator(0))  # fmt: skip


# ---- the attack job's evaluation ----------------------------------------------------------
def test_evaluate_robustness_depends_on_the_set_of_readouts_not_their_order(clusters):
    net, clusters_data = clusters
    data = dataset_from_arrays(clusters_data.arrays())  # as the attack job reads it
    state = {"kind": "two_layer", "weight": net.weight, "bias": net.bias, "readout": net.readout}
    specs = {n: SPECS[n] for n in ("pgd_margin", "pgd_ce")}
    runs = [
        evaluate_robustness(state, data, specs, RADII, 40, "binary", ros, torch_generator(0, "e"))
        for ros in (["argmax", "sum", "log_odds"], ["log_odds", "argmax", "sum"])
    ]
    for ro in READOUTS:
        pd.testing.assert_frame_equal(runs[0][ro][0], runs[1][ro][0])
        assert json.dumps(runs[0][ro][1]) == json.dumps(runs[1][ro][1])  # NaN radii too
        summary = runs[0][ro][1]
        assert summary["readout"] == ro
        assert summary["shared_readouts"] == {"pgd_ce": ["sum", "log_odds", "argmax"]}
    one = evaluate_robustness(state, data, specs, RADII, 40, "binary", ["argmax"],
                              torch_generator(0, "e"))  # fmt: skip
    assert one["argmax"][1]["shared_readouts"] == {}
    with pytest.raises(ValueError, match="readouts"):
        evaluate_robustness(state, data, specs, RADII, 40, "binary", ["max"], torch_generator(0))
