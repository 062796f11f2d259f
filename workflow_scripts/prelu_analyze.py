"""Rule prelu_analyze: neuron alignment and distances to the ideal classifiers of one pReLU net."""

from _job import Job

from ibrobust.analysis.prelu import run_analysis
from ibrobust.data.dataset import dataset_from_arrays
from ibrobust.io import load_npz, load_torch, save_csv, save_json
from ibrobust.models.registry import load_model

p = snakemake.params
with Job(snakemake) as job:
    data = dataset_from_arrays(load_npz(snakemake.input.data), snakemake.input.data)
    net = load_model(load_torch(snakemake.input.model))
    table, summary = run_analysis(net, data, p.seed, **p.analysis)
    job.log.info(
        "p=%g: %d of %d neurons active, %.0f%% on a single centre, %.0f%% on a class average; "
        "d(F) %.3f, d(F^p) %.3f",
        summary["p"],
        summary["n_active"],
        summary["n_neurons"],
        100 * summary["frac_single"],
        100 * summary["frac_average"],
        summary["dist_F"],
        summary["dist_Fp"],
    )
    job.metrics({f"analysis.{k}": float(v) for k, v in summary.items()})
    save_csv(snakemake.output.alignment, table)
    save_json(snakemake.output.summary, summary)
    for f in (snakemake.output.alignment, snakemake.output.summary):
        job.artifact(f, "analysis")
