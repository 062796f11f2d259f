# Targets: one per study kind's figure set; `rule all` collects the enabled studies.


def study_outputs(study):
    """Every figure and table of a study (what `snakemake <study>` builds)."""
    st = STUDIES[study]
    base = f"{RESULTS}/{study}/figures/"
    names = ["cosine_heatmaps", "lambda_trajectories", "robust_accuracy_vs_radius"]
    if st.get("scaling") is not None:
        names.append("critical_radius_scaling")
    out = [base + n + ext for n in names for ext in (".png", ".pdf", ".csv")]
    return out + [base + "summary.csv", base + "summary.md"]


def default_targets():
    return [f for s in ENABLED for f in study_outputs(s)]


rule fa:
    input:
        study_outputs("fa") if "fa" in STUDIES else [],
