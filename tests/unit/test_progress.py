"""Progress of long loops (ibrobust.progress): reports throttled by a clock, the first and
the last always, and the attack suite's units (attack x radius, per readout) with ticks
between an attack's batches - a slow attack reports at the throttle interval, not only when
an attack ends. A fake clock: no sleeps."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from ibrobust.attacks import suite
from ibrobust.attacks.suite import AttackContext, evaluate_attacks, evaluate_attacks_readouts
from ibrobust.progress import Progress


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_reports_the_first_call_then_at_most_one_per_interval_and_the_last():
    clock, calls = FakeClock(), []
    progress = Progress(lambda *a: calls.append((clock.now, *a)), total=10, every=20, clock=clock)
    for i in range(10):
        progress.begin(f"unit {i}")
        for _ in range(3):  # three batches of 3 s each
            clock.now += 3
            progress.tick()
        progress.advance()
    assert [c[0] - 1000 for c in calls] == [0, 21, 42, 63, 84, 90]  # 90: the last unit
    assert calls[0][1:] == (0, 10, "unit 0") and calls[-1][1:] == (10, 10, "unit 9")
    assert all(b[0] - a[0] >= 20 for a, b in zip(calls[:-2], calls[1:-1], strict=True))


def test_without_a_report_it_only_counts():
    progress = Progress(total=2)
    progress.advance()
    progress.tick()
    assert (progress.done, progress.total) == (1, 2)
    with pytest.raises(ValueError, match="every"):
        Progress(every=-1)


class Score(nn.Module):
    """Two heads (x0, -x0) with readout (+1, -1): every point of the tests (x0 = 1, y = +1)
    is correct under every readout."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.ones(1))
        self.register_buffer("readout", torch.tensor([1.0, -1.0]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.stack([x[:, 0], -x[:, 0]], 1) * self.w

    def binary_score(self, x: torch.Tensor) -> torch.Tensor:
        return self(x) @ self.readout


class SlowAttack:
    """An attack kind whose every radius takes ``batches`` x ``seconds`` of the fake clock
    and ticks after each batch (as PGD does after each restart); it fools no point."""

    def __init__(self, clock: FakeClock, batches: int = 4, seconds: float = 7.0):
        self.clock, self.batches, self.seconds = clock, batches, seconds
        self.radii: list[float] = []

    def run_spec(self, model, x, y, fine, eps, cfg, ctx, gen):
        self.radii.append(eps)
        for _ in range(self.batches):
            self.clock.now += self.seconds
            if ctx.tick is not None:
                ctx.tick()
        return torch.ones(x.shape[0], dtype=torch.bool)


@pytest.fixture
def slow(monkeypatch):
    clock = FakeClock()
    kind = SlowAttack(clock)
    monkeypatch.setattr(suite, "parse_attack", lambda spec: (kind, None))
    monkeypatch.setattr(suite, "shared_across_readouts", lambda spec: False)
    x = torch.cat([torch.ones(5, 1), torch.zeros(5, 3)], 1)
    y, fine = torch.ones(5), torch.zeros(5, dtype=torch.long)
    return clock, kind, (x, y, fine)


def test_a_slow_attack_reports_at_the_throttle_interval(slow):
    """Two attacks x three radii > 0 (28 s each): without progress the job would say one line
    per finished attack (84 s apart); with it one every 20-28 s, naming attack and radius."""
    clock, kind, (x, y, fine) = slow
    calls = []
    progress = Progress(lambda *a: calls.append((clock.now, *a)), every=20, clock=clock)
    specs = {"pgd_a": {"kind": "slow"}, "pgd_b": {"kind": "slow"}}
    radii = [0.0, 1.0, 2.0, 3.0]
    table, _ = evaluate_attacks(
        Score(), x, y, fine, radii, specs, AttackContext(), torch.Generator(), progress=progress
    )
    assert kind.radii == [1.0, 2.0, 3.0] * 2  # radius 0 is no attack
    assert set(table.robust_acc) == {1.0}
    times = [t - 1000 for t, *_ in calls]
    assert times == [0, 21, 42, 63, 84, 105, 126, 147, 168, 168]  # + the last unit's
    gaps = [b - a for a, b in zip(times, times[1:-1], strict=False)]
    assert max(gaps) <= 28 and min(gaps) >= 20  # every <= interval + one batch (7 s)
    assert calls[-2][1:] == (7, 8, "pgd_b eps=3")  # a tick inside the last unit
    assert calls[0][1:] == (0, 8, "pgd_a eps=0")  # one unit per attack and radius
    assert calls[-1][1:] == (8, 8, "pgd_b eps=3")
    assert (2, 8, "pgd_a eps=2") in [c[1:] for c in calls]


def test_readouts_count_one_unit_per_readout_run_and_radius(slow):
    clock, kind, (x, y, fine) = slow
    calls = []
    progress = Progress(lambda *a: calls.append(a), every=20, clock=clock)
    evaluate_attacks_readouts(
        Score(), ["sum", "argmax"], x, y, fine, [0.0, 1.0], {"a": {}}, AttackContext(),
        torch.Generator(), progress=progress,
    )  # fmt: skip
    assert progress.total == 4 and calls[-1] == (4, 4, "a argmax eps=1")
    assert ("a sum eps=1") in {what for _, _, what in calls}


def test_pgd_and_autoattack_tick_between_batches_and_compute_the_same(toy_fine_net, toy_test):
    """The real kinds: PGD ticks after each restart, AutoAttack after each batch of each of
    its attacks; the masks are those of a run without progress."""
    import math

    from ibrobust.attacks.tasks import get_task
    from ibrobust.seeding import torch_generator

    net, te = toy_fine_net, toy_test
    pgd = {"kind": "pgd", "norm": "l2", "loss": "ce", "steps": 5, "restarts": 3, "step_size": 0.2}
    aa = {"kind": "autoattack", "norm": "l2", "version": "standard", "attacks": ["apgd-ce"],
          "n_iter": 5, "batch_size": 16}  # fmt: skip
    specs, radii = {"pgd": pgd, "aa": aa}, [0.0, 0.4]
    ctx = AttackContext(task="fine", box=(0.0, 1.0))
    reports = []
    progress = Progress(lambda done, total, what: reports.append(what), every=0)
    _, with_progress = evaluate_attacks(
        net, te.x, te.y, te.fine, radii, specs, ctx, torch_generator(0, "p"), progress=progress
    )
    _, without = evaluate_attacks(
        net, te.x, te.y, te.fine, radii, specs, ctx, torch_generator(0, "p")
    )
    assert all(torch.equal(with_progress[k], without[k]) for k in specs)
    with torch.no_grad():
        clean = int(get_task("fine").correct(net, te.x, te.y, te.fine).sum())
    # begin + one tick per AutoAttack batch + advance (every=0: each call reports)
    assert reports.count("aa eps=0.4") == 2 + math.ceil(clean / 16)
    assert 2 + 1 <= reports.count("pgd eps=0.4") <= 2 + 3  # restarts (a decided one skips)
    assert reports.count("pgd eps=0") == reports.count("aa eps=0") == 2  # radius 0: no attack
