"""Study FA-IMAGES glue: the summary table and the paper's numbers to compare with.

Li, Pan, Lyu, Li (ICLR 2025), Fig. 2/3 (ResNet-18, l2 PGD, robust accuracy of the binary
task in %, read off the figure; docs/studies/fa_images.md, "The paper's numbers"): MNIST
parity at radius 1.2: ~80 (10-class training) vs ~58 (2-class); 1.6: ~56 vs ~24. CIFAR-10
first-5-vs-last-5 at 0.4: ~79 vs ~67.5; 0.8: 43.5 vs 31.
"""

from __future__ import annotations

import pandas as pd

from ibrobust.stages.tables import mean_std

# task -> radius -> supervision -> robust accuracy (fraction), the paper's ResNet-18
PAPER_ROBUST_ACC: dict[str, dict[float, dict[str, float]]] = {
    "mnist_parity": {
        1.2: {"multiclass": 0.80, "binary": 0.58},
        1.6: {"multiclass": 0.56, "binary": 0.24},
    },
    "cifar10_halves": {
        0.4: {"multiclass": 0.79, "binary": 0.675},
        0.8: {"multiclass": 0.435, "binary": 0.31},
    },
}


def summary_table(
    curves: pd.DataFrame,
    train: pd.DataFrame,
    report_radii: dict[str, list[float]],
    paper_tasks: dict[str, str],
) -> pd.DataFrame:
    """Long table, one row per (dataset, model, optimizer, supervision, eps) with eps = 0
    (clean accuracy of the binary task under the attacked readout) and each report radius:
    robust accuracy of the worst case and of each attack (mean and std over seeds), the
    paper's ResNet-18 number where it has one, and the fine-class test accuracy of k-class
    models (from training).

    ``curves``: tidy attack tables (dataset, model, optimizer, supervision, seed, attack, eps,
    robust_acc); ``train``: per-run metrics (same keys + test.fine_acc for k-class models);
    ``paper_tasks``: dataset -> key of :data:`PAPER_ROBUST_ACC` it reproduces.
    """
    unknown = sorted(set(paper_tasks.values()) - set(PAPER_ROBUST_ACC))
    if unknown:
        raise ValueError(f"no paper numbers for {unknown}; known: {sorted(PAPER_ROBUST_ACC)}")
    keys = ["dataset", "model", "optimizer", "supervision"]
    if "readout" in curves:  # one block per binary readout (issue 11)
        keys.insert(3, "readout")
    eps_r = curves.eps.round(9)
    wanted = pd.Series(False, index=curves.index)
    for ds, radii in report_radii.items():
        wanted |= (curves.dataset == ds) & eps_r.isin([0.0, *(round(float(r), 9) for r in radii)])
    wanted |= ~curves.dataset.isin(list(report_radii)) & (eps_r == 0.0)
    wide = (
        curves[wanted]
        .assign(eps=eps_r[wanted])
        .pivot_table(index=[*keys, "seed", "eps"], columns="attack", values="robust_acc")
        .reset_index()
    )
    attacks = [
        "worst",
        *sorted(c for c in wide.columns if c not in (*keys, "seed", "eps", "worst")),
    ]
    table = mean_std(wide, [*keys, "eps"], attacks).rename(columns={"n": "seeds"})
    table = table.rename(
        columns={f"{a}.{m}": f"robust_acc.{a}.{m}" for a in attacks for m in ("mean", "std")}
    )
    table["paper_resnet18"] = [
        PAPER_ROBUST_ACC.get(paper_tasks.get(r.dataset, ""), {})
        .get(float(r.eps), {})
        .get(r.supervision)
        for r in table.itertuples()
    ]
    if "test.fine_acc" in train:
        fine = (
            train.groupby([k for k in keys if k in train], dropna=False)["test.fine_acc"]
            .mean()
            .rename("test.fine_acc.mean")
        )
        table = table.merge(fine.reset_index(), on=[k for k in keys if k in train], how="left")
    return table
