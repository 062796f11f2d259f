"""Rule attack: robust accuracy of one model over a radius grid, every attack + worst case."""

from _job import Job

from ibrobust.analysis.robustness import critical_radius
from ibrobust.attacks.suite import AttackContext, describe_attack, evaluate_attacks
from ibrobust.attacks.tasks import correct_in_batches
from ibrobust.data.dataset import dataset_from_arrays
from ibrobust.io import load_npz, load_torch, save_csv, save_json
from ibrobust.models.readout import set_readout_mode
from ibrobust.models.registry import load_model
from ibrobust.models.robust_reference import analytic_radius
from ibrobust.seeding import torch_generator

p = snakemake.params
with Job(snakemake) as job:
    data = dataset_from_arrays(load_npz(snakemake.input.data), snakemake.input.data)
    state = load_torch(snakemake.input.model)
    net = set_readout_mode(load_model(state), p.readout)
    for prm in net.parameters():
        prm.requires_grad_(False)
    test = data.test.head(p.points)
    if p.task == "binary" and len(set(test.y.tolist())) < 2 <= len(set(data.test.y.tolist())):
        raise ValueError(
            f"{snakemake.input.data}: the first {len(test)} test points (attack_points) all "
            "have one binary label although the test split has both: the split is ordered "
            "by class (e.g. a class-sorted .npz source); shuffle the source's rows"
        )
    gen = torch_generator(p.seed, "attack", snakemake.wildcards.grid)
    job.log.info(
        "attacking %d test points at %d radii with %s", len(test), len(p.radii), list(p.attacks)
    )
    ctx = AttackContext(data.means, data.sign, task=p.task, box=data.box)
    table, correct = evaluate_attacks(
        net,
        test.x,
        test.y,
        test.fine,
        list(p.radii),
        dict(p.attacks),
        ctx,
        gen,
        on_attack=lambda a: job.log.info("attack %s done", a),
    )
    summary = {
        "n_points": len(test),
        "radii": list(p.radii),
        "critical_radius": {},
        "robust_acc": {},
    }
    for name, g in table.groupby("attack", sort=False):
        g = g.sort_values("eps")
        summary["critical_radius"][name] = critical_radius(
            g.eps.to_numpy(), g.robust_acc.to_numpy()
        )
        summary["robust_acc"][name] = dict(zip(map(str, g.eps), g.robust_acc, strict=True))
        for i, acc in enumerate(g.robust_acc):
            job.metrics({f"robust_acc.{name}": acc}, step=i)
        job.metrics({f"critical_radius.{name}": summary["critical_radius"][name]})
    summary["task"], summary["readout"] = p.task, p.readout
    # what ran: e.g. the AutoAttack version, iterations and restarts behind each number
    summary["settings"] = {name: describe_attack(spec) for name, spec in p.attacks.items()}
    summary["clean_acc"] = float(
        correct_in_batches(ctx.task, net, test.x, test.y, test.fine, 1000).float().mean()
    )
    if state.get("kind") == "robust_reference":
        r = analytic_radius(net, test.x, test.y)
        summary["analytic_radius_median"] = float(r.nanmedian())
        summary["analytic_critical_radius"] = float(r.nanquantile(0.5))
    job.log.info(
        "critical radii %s", {a: round(v, 3) for a, v in summary["critical_radius"].items()}
    )
    save_csv(snakemake.output.table, table)
    save_json(snakemake.output.summary, summary)
    for f in (snakemake.output.table, snakemake.output.summary):
        job.artifact(f, "attack")
