"""Rule analyze: cosines of a trained model's neurons with the class features (any model)."""

from _job import Job

from ibrobust.analysis.cosines import neuron_cosines
from ibrobust.data.dataset import dataset_from_arrays
from ibrobust.io import load_npz, load_torch, save_csv, save_json
from ibrobust.models.registry import load_model

with Job(snakemake) as job:
    job.dataset(snakemake.input.data, "evaluation")
    data = dataset_from_arrays(load_npz(snakemake.input.data), snakemake.input.data)
    net = load_model(load_torch(snakemake.input.model))
    table, summary = neuron_cosines(net, data)
    summary["supervision"] = snakemake.params.supervision
    job.log.info(
        "features: %s; mean same-class cosine %.3f, mean per-neuron max %.3f, "
        "single-feature fraction %.2f",
        summary["features"],
        summary["cosine_same_class_mean"],
        summary["cosine_max_per_neuron_mean"],
        summary["single_feature_fraction"],
    )
    job.metrics({f"analysis.{k}": v for k, v in summary.items() if isinstance(v, float)})
    save_csv(snakemake.output.cosine, table)
    save_json(snakemake.output.summary, summary)
    for f in (snakemake.output.cosine, snakemake.output.summary):
        job.artifact(f, "analysis")
