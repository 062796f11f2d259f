"""Study FA-IMAGES glue: the summary table and the paper's numbers to compare with.

Li, Pan, Lyu, Li (ICLR 2025), Fig. 2/3 (ResNet-18, l2 PGD, robust accuracy of the binary
task in %, read off the figure; SPEC.md): MNIST parity at radius 1.2: ~80 (10-class
training) vs ~58 (2-class); 1.6: ~56 vs ~24. CIFAR-10 first-5-vs-last-5 at 0.4: ~79 vs
~67.5; 0.8: 43.5 vs 31.
"""

from __future__ import annotations

import pandas as pd

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
    """One row per (dataset, model, optimizer, supervision): clean accuracies and the robust
    accuracy at each report radius (worst case and each attack), mean and std over seeds,
    with the paper's number where it has one.

    ``curves``: tidy attack tables (dataset, model, optimizer, supervision, seed, attack, eps,
    robust_acc); ``train``: per-run metrics (same keys + test.binary_acc, test.fine_acc);
    ``paper_tasks``: dataset -> key of :data:`PAPER_ROBUST_ACC` it reproduces.
    """
    unknown = sorted(set(paper_tasks.values()) - set(PAPER_ROBUST_ACC))
    if unknown:
        raise ValueError(f"no paper numbers for {unknown}; known: {sorted(PAPER_ROBUST_ACC)}")
    keys = ["dataset", "model", "optimizer", "supervision"]
    rows = []
    for key, g in curves.groupby(keys, sort=False):
        row = dict(zip(keys, key, strict=True))
        row["seeds"] = g.seed.nunique()
        t = train.set_index(keys).loc[[key]] if not train.empty else None
        if t is not None:
            for col in ("test.binary_acc", "test.fine_acc"):
                if col in t and t[col].notna().any():
                    row[f"{col}.mean"] = t[col].mean()
                    row[f"{col}.std"] = t[col].std(ddof=1) if len(t) > 1 else 0.0
        task = paper_tasks.get(key[0])
        for r in report_radii.get(key[0], []):
            at = g[g.eps.round(9) == round(float(r), 9)]
            for att, ga in at.groupby("attack", sort=False):
                row[f"robust_acc@{r:g}.{att}.mean"] = ga.robust_acc.mean()
                row[f"robust_acc@{r:g}.{att}.std"] = (
                    ga.robust_acc.std(ddof=1) if len(ga) > 1 else 0.0
                )
            paper = PAPER_ROBUST_ACC.get(task or "", {}).get(float(r), {}).get(key[3])
            row[f"robust_acc@{r:g}.paper_resnet18"] = paper
        rows.append(row)
    return pd.DataFrame(rows)
