"""Our PGD against foolbox's (Rauber et al., JOSS 2020) on the same model, points and budget:
the shared half of tests/unit/test_attacks_crosscheck.py and
benchmarks/bench_attack_crosscheck.py (issue 38 item 5).

Ours is the workflow's own path for one radius: :func:`ibrobust.attacks.suite.
correctness_over_radii` with a ``pgd`` entry (cross-entropy on the fine label, task
``fine``, box (0, 1)), which attacks only the clean-correct points and lets a point that a
restart fooled skip the later restarts. Theirs is ``foolbox.attacks.LinfPGD`` /
``L2PGD(rel_stepsize, steps, random_start=True).repeat(restarts)`` on
``foolbox.PyTorchModel(net, bounds=(0, 1))``: the same loss (summed cross-entropy on the
label), steps, step size relative to the radius, uniform random start in the ball and
restarts (a point counts as fooled if any restart fooled it); foolbox's defaults otherwise
(it attacks every point in every restart). Both see the model in the state our attacks
put it in (:func:`ibrobust.attacks.mode.attack_mode`: eval, parameters frozen, so foolbox's
``backward`` accumulates no parameter gradients either). Their adversarial examples are
checked to lie in the ball and the box and re-judged by our task, so both robust
accuracies are counted by the same rule. Foolbox draws its starts from torch's global
generator: seeded inside ``torch.random.fork_rng``, so the caller's stream is untouched.
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn
from toy_models import CNN, MLP, ToyImages, toy_images, train_toy

from ibrobust.attacks.mode import attack_mode
from ibrobust.attacks.pgd import PGDConfig, pgd
from ibrobust.attacks.suite import AttackContext, correctness_over_radii
from ibrobust.attacks.tasks import get_task
from ibrobust.seeding import torch_generator

REPO = Path(__file__).resolve().parents[2]
BOX = (0.0, 1.0)
MODELS = {"mlp": MLP, "cnn": {**CNN, "channels_last": True}}  # NHWC: same function, faster
# Two radii per (model, norm) where robust accuracy is neither ~0 nor ~1 (measured on these
# nets: about 0.85 and 0.3 at the smaller and larger; the CNN is the less robust net)
RADII = {
    "mlp": {"linf": (0.08, 0.1), "l2": (0.55, 0.65)},
    "cnn": {"linf": (0.03, 0.05), "l2": (0.2, 0.3)},
}
_D = PGDConfig()  # the pgd kind's defaults (its schema; config.yaml's pgd / pgd_ce entries)
BUDGET = {"steps": _D.steps, "restarts": _D.restarts, "step_size": _D.step_size}
TRAIN_STEPS = 300  # Adam steps, full batch on TRAIN_POINTS toy images
TRAIN_POINTS = 1000


@dataclass(frozen=True)
class Outcome:
    robust: float  # robust accuracy over the points
    seconds: float  # wall time of the attack (clean pass and judging included)


def trained(name: str, seed: int = 0) -> nn.Module:
    """The 10-class toy net ``name`` ("mlp" or "cnn"), trained and deterministic."""
    return train_toy("fine", seed, TRAIN_STEPS, MODELS[name], TRAIN_POINTS)


def points(n: int) -> ToyImages:
    """``n`` held-out toy images (their own split: not the training or the tests' points)."""
    return toy_images(n, "crosscheck")


def head(pts: ToyImages, n: int | None) -> ToyImages:
    """The first ``n`` of ``pts`` (None: all)."""
    return pts if n is None else ToyImages(pts.x[:n], pts.y[:n], pts.fine[:n])


def ours(net: nn.Module, pts: ToyImages, norm: str, eps: float, seed: int = 0) -> Outcome:
    """Robust accuracy under our PGD (the workflow's path, module docstring)."""
    spec = {"kind": "pgd", "norm": norm, "loss": "ce", **BUDGET}
    ctx = AttackContext(task="fine", box=BOX)
    gen = torch_generator(seed, "crosscheck", norm, str(eps))
    t = time.perf_counter()
    robust = correctness_over_radii(net, pts.x, pts.y, pts.fine, [eps], spec, ctx, gen)[0]
    seconds = time.perf_counter() - t
    return Outcome(robust.float().mean().item(), seconds)


def theirs(net: nn.Module, pts: ToyImages, norm: str, eps: float, seed: int = 0) -> Outcome:
    """Robust accuracy under foolbox's PGD with the same budget (module docstring)."""
    import foolbox as fb

    attack_cls = {"linf": fb.attacks.LinfPGD, "l2": fb.attacks.L2PGD}[norm]
    attack = attack_cls(
        rel_stepsize=BUDGET["step_size"], steps=BUDGET["steps"], random_start=True
    ).repeat(BUDGET["restarts"])
    with attack_mode(net), torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        t = time.perf_counter()
        fmodel = fb.PyTorchModel(net, bounds=BOX, device=pts.x.device)
        _, x_adv, success = attack(fmodel, pts.x, pts.fine, epsilons=eps)
        seconds = time.perf_counter() - t
        with torch.no_grad():
            robust = get_task("fine").correct(net, x_adv, pts.y, pts.fine)
    delta = (x_adv - pts.x).flatten(1)
    size = delta.abs().amax(1) if norm == "linf" else delta.norm(dim=1)
    assert (size <= eps * (1 + 1e-5)).all() and x_adv.min() >= 0 and x_adv.max() <= 1
    assert torch.equal(robust, ~success), "foolbox's success disagrees with our judging"
    return Outcome(robust.float().mean().item(), seconds)


def without_random_start(
    net: nn.Module, pts: ToyImages, norm: str, eps: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Both attacks' adversarial examples (n, *s) from the clean point (no random start,
    one restart, the budget's steps and step size): deterministic, so they should agree
    to float rounding."""
    import foolbox as fb

    cfg = PGDConfig(
        norm=norm, steps=BUDGET["steps"], restarts=1, step_size=BUDGET["step_size"],
        random_start=False,
    )  # fmt: skip
    gen = torch_generator(0, "crosscheck", "unused")  # no draws without a random start
    ours_adv = pgd(net, pts.x, pts.y, pts.fine, [eps], "ce", cfg, gen, BOX, task="fine")[0]
    attack_cls = {"linf": fb.attacks.LinfPGD, "l2": fb.attacks.L2PGD}[norm]
    attack = attack_cls(rel_stepsize=BUDGET["step_size"], steps=BUDGET["steps"], random_start=False)
    with attack_mode(net):
        _, theirs_adv, _ = attack(fb.PyTorchModel(net, bounds=BOX), pts.x, pts.fine, epsilons=eps)
    return ours_adv, theirs_adv


def cells() -> list[tuple[str, str, float]]:
    """Every (model, norm, radius) of the comparison."""
    return [(m, norm, eps) for m in MODELS for norm, radii in RADII[m].items() for eps in radii]


def compare(
    nets: dict[str, nn.Module], pts: ToyImages, rounds: int = 1, limit: dict | None = None
) -> list[dict]:
    """One row per (model, norm, radius): both attacks ``rounds`` times (round r seeds both
    with r), alternating which runs first, on the first ``limit[model]`` points (default:
    all); robust accuracies are means over the rounds, times medians, ``gap`` the largest
    per-round ours - foolbox."""
    rows = []
    for i, (model, norm, eps) in enumerate(cells()):
        net, runs = nets[model], {"ours": [], "theirs": []}
        pts_m = head(pts, (limit or {}).get(model))
        for r in range(rounds):
            order = [("ours", ours), ("theirs", theirs)]
            for name, attack in order[:: -1 if (i + r) % 2 else 1]:
                runs[name].append(attack(net, pts_m, norm, eps, seed=r))
        a, b = runs["ours"], runs["theirs"]
        rows.append(
            {
                "model": model, "norm": norm, "eps": eps, "points": len(pts_m.x),
                "clean": clean_accuracy(net, pts_m),
                "ours": statistics.fmean(o.robust for o in a),
                "theirs": statistics.fmean(o.robust for o in b),
                "gap": max(o.robust - t.robust for o, t in zip(a, b, strict=True)),
                "ours_s": statistics.median(o.seconds for o in a),
                "theirs_s": statistics.median(o.seconds for o in b),
            }
        )  # fmt: skip
    return rows


def table(rows: list[dict]) -> str:
    """A markdown table of the rows :func:`compare` returns."""
    top = (
        "| model | norm | eps | points | clean | robust ours | robust foolbox | ours - foolbox "
        "| ours s | foolbox s | time ours / foolbox |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    return top + "".join(
        f"| {r['model']} | {r['norm']} | {r['eps']:g} | {r['points']} | {r['clean']:.3f} "
        f"| {r['ours']:.3f} "
        f"| {r['theirs']:.3f} | {r['ours'] - r['theirs']:+.3f} | {r['ours_s']:.2f} "
        f"| {r['theirs_s']:.2f} | {r['ours_s'] / r['theirs_s']:.2f} |\n"
        for r in rows
    )


def clean_accuracy(net: nn.Module, pts: ToyImages) -> float:
    with torch.no_grad():
        return get_task("fine").correct(net.eval(), pts.x, pts.y, pts.fine).float().mean().item()


def artifacts_dir(name: str) -> Path:
    """$IBROBUST_TEST_ARTIFACTS/<name>, else tests/artifacts/<name> (as the workflow tests'
    ops_helpers.artifacts_dir)."""
    root = Path(os.environ.get("IBROBUST_TEST_ARTIFACTS") or REPO / "tests" / "artifacts")
    out = root / name
    out.mkdir(parents=True, exist_ok=True)
    return out


def record(line: str) -> None:
    """Print a measurement and append it to <artifacts>/measurements.txt (as the workflow
    tests' ops_helpers.record: CI prints that file)."""
    print(line)
    with (artifacts_dir(".") / "measurements.txt").open("a") as fh:
        fh.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {line}\n")
