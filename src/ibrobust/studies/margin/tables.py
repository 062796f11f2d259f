"""Study MARGIN's numbers from its outputs: the checkpoint table beside the paper's, whether
the smoothed normalized margin is non-decreasing after the data is fit, whether the
normalized margin and the robust accuracy grow across checkpoints, which attack found
each minimal distance (the audit) and whether the distances respect the certificate. Pure
pandas (no matplotlib: the figures import the paper's table from here): the summary job,
the claims and ``benchmarks/check_margin.py`` read the same functions."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

# Lyu & Li (2020), models 1-5: the paper's checkpoint table (docs/studies/margin.md,
# "The paper's numbers")
PAPER_TABLE = pd.DataFrame(
    {
        "name": ["model-1", "model-2", "model-3", "model-4", "model-5"],
        "epoch": [38, 75, 107, 935, 10000],
        "log10_train_loss": [-10.04, -15.12, -20.07, -120.01, -881.51],
        "normalized_margin": [5.65e-5, 9.50e-5, 1.30e-4, 4.61e-4, 1.18e-3],
    }
)
HISTORY_FLOATS = (
    "log10_train_loss",
    "q_min",
    "rho",
    "normalized_margin",
    "smoothed_normalized_margin",
    "train_acc",
    "alpha",
    "log10_eta",
)


def checkpoint_table(history: pd.DataFrame, checkpoints: pd.DataFrame) -> pd.DataFrame:
    """``checkpoints`` (name, epoch, ...) joined with the history row of its epoch; the last
    epoch ("final") is the paper's model-5 (the end of training) in ``paper_name``."""
    cols = ["epoch", "log10_train_loss", "normalized_margin", "smoothed_normalized_margin"]
    cols += [c for c in ("train_acc", "test_acc") if c in history]
    out = checkpoints[["name", "epoch"]].merge(history[cols], on="epoch", how="left")
    last = f"model-{len(PAPER_TABLE)}"  # the paper's last model is the end of training
    paper = set(PAPER_TABLE["name"]) - {last}
    out["paper_name"] = [
        last if n == "final" else (n if n in paper else "-") for n in out["name"]
    ]  # a threshold beyond the paper's four (e.g. 1e-300) has no paper counterpart
    return out


DECREASE_RTOL = 1e-9  # a decrease of the smoothed margin beyond float rounding (relative)


def separation(history: pd.DataFrame, rtol: float = DECREASE_RTOL) -> dict:
    """After the data is fit in the theorem's sense (the first row with L_sum < log 2, i.e.
    a positive smoothed normalized margin, and train accuracy 1): how often and by how much
    the smoothed normalized margin rho^-L log(1/L) decreases from one history row to the next
    (accepted epochs of a loss-based run, logged steps of a constant-step run). A decrease
    counts when it exceeds ``rtol`` relative to the value before it (float rounding is not a
    decrease): ``frac_decreasing`` = counted decreases / rows after the fit."""
    fit = history[(history["smoothed_normalized_margin"] > 0) & (history["train_acc"] >= 1.0)]
    out = dict(fit_epoch=math.nan, epochs_after=0, decreasing=0, frac_decreasing=math.nan)
    out.update(largest_drop=0.0, largest_rel_drop=0.0, start=math.nan, end=math.nan)
    if fit.empty:
        return out
    first = int(fit["epoch"].iloc[0])
    sm = history[history["epoch"] >= first]["smoothed_normalized_margin"].to_numpy(float)
    diff = np.diff(sm)
    dec = -diff > rtol * np.abs(sm[:-1])
    rel = -diff[dec] / np.maximum(np.abs(sm[:-1][dec]), 1e-300)
    out.update(
        fit_epoch=first,
        epochs_after=int(len(diff)),
        decreasing=int(dec.sum()),
        frac_decreasing=float(dec.mean()) if len(diff) else math.nan,
        largest_drop=float((-diff[dec]).max()) if dec.any() else 0.0,
        largest_rel_drop=float(rel.max()) if dec.any() else 0.0,
        start=float(sm[0]),
        end=float(sm[-1]),
    )
    return out


def _slope(x: np.ndarray, y: np.ndarray) -> float:
    """Least-squares slope of y on x."""
    xc = x - x.mean()
    return float((xc * (y - y.mean())).sum() / (xc * xc).sum())


def rate_theory(t: np.ndarray, degree: int) -> dict:
    """The theory's slopes at the window ``t`` (the flow's times of the fitted steps), for the
    measured slopes of :func:`flow_rates` to be compared with, fitted the same way.

    Lyu & Li: L(t) = Theta(1 / (t (ln t)^c)) with c = 2 - 2/L (L the homogeneity ``degree``)
    and rho(t) = Theta((ln t)^(1/L)). To the order the theorem fixes,
    ln(1/L(t)) = ln t + c ln ln t + const, and since rho^L ~ ln(1/L) / gamma~ with gamma~
    converging, ln rho = (1/L) ln(ln t + c ln ln t) + const. Neither is a straight line over a
    finite window: the local slope of ln L on ln t is -1 - c / ln t, and that of ln rho on
    ln ln t is (1/L) (ln t + c) / (ln t + c ln ln t) (below 1/L wherever ln ln t > 1), so a
    fixed 1/L or a slope at one midpoint is not what a least-squares fit over the window
    measures. The theory values are therefore the least-squares slopes, over the same t
    points as the measured ones, of the theory's own curves (constants drop out of a slope):

    * ``loss_rate_theory``: the slope of -(ln t + c ln ln t) on ln t;
    * ``norm_rate_theory``: the slope of (1/L) ln(ln t + c ln ln t) on ln ln t.

    Both NaN where ln ln t is undefined or ln t + c ln ln t <= 0 at a point (t <= 1, or t so
    close to 1 that the asymptotic form has no logarithm), or with fewer than 2 points."""
    t = np.asarray(t, dtype=float)
    c = 2.0 - 2.0 / degree
    out = dict(loss_rate_theory=math.nan, norm_rate_theory=math.nan)
    if len(t) < 2 or not t.min() > 1.0:
        return out
    ln_t = np.log(t)
    ln_ln_t = np.log(ln_t)
    inv_loss = ln_t + c * ln_ln_t  # ln(1/L) up to its constant
    if not inv_loss.min() > 0:
        return out
    out.update(
        loss_rate_theory=_slope(ln_t, -inv_loss),
        norm_rate_theory=_slope(ln_ln_t, np.log(inv_loss) / degree),
    )
    return out


def flow_rates(history: pd.DataFrame, degree: int) -> dict:
    """The loss and norm rates of a constant-step run (history with ``time`` = step x lr, the
    flow's time t), fitted over its last decade of steps after separation: the logged steps
    s in [S / 10, S] (S the last) at which the data is fit (:func:`separation`).

    * ``loss_rate_slope``: least-squares slope of ln L on ln t; ``loss_rate_theory``: the
      theory's slope fitted over the same t (:func:`rate_theory`);
    * ``norm_rate_slope``: slope of ln rho on ln ln t; ``norm_rate_theory``: likewise.

    All four NaN (a slope and its theory together) when fewer than 3 such steps remain, the
    window starts at t <= 1 (ln ln t undefined) or the theory is undefined on it. ln L =
    log10 L x ln 10: L itself is never formed."""
    out = dict(loss_rate_slope=math.nan, loss_rate_theory=math.nan, norm_rate_slope=math.nan,
               norm_rate_theory=math.nan, rate_t_lo=math.nan, rate_t_hi=math.nan)  # fmt: skip
    fit_epoch = separation(history)["fit_epoch"]
    if math.isnan(fit_epoch) or history.empty:
        return out
    last = int(history["epoch"].max())
    w = history[(history["epoch"] >= max(last / 10, fit_epoch)) & (history["epoch"] > 0)]
    t = w["time"].to_numpy(float)
    if len(w) < 3 or not t.min() > 1.0:
        return out
    theory = rate_theory(t, degree)
    if math.isnan(theory["loss_rate_theory"]):
        return out
    ln_t = np.log(t)
    ln_loss = w["log10_train_loss"].to_numpy(float) * math.log(10.0)
    out.update(
        loss_rate_slope=_slope(ln_t, ln_loss),
        norm_rate_slope=_slope(np.log(ln_t), np.log(w["rho"].to_numpy(float))),
        **theory,
        rate_t_lo=float(t.min()),
        rate_t_hi=float(t.max()),
    )
    return out


def schedules_table(loss_based: dict[str, pd.DataFrame], constant: dict[str, pd.DataFrame]):
    """One row per seed (``run``) with both schedules: ``epochs`` = E, the constant-step run's
    last epoch; ``log10_loss_constant`` = its log10 L there; ``log10_loss_loss_based`` = the
    loss-based run's at its last accepted epoch <= E (its last value when it stopped before E)
    and ``loss_based_epoch`` / ``loss_based_rollbacks`` = that epoch and the epochs it redid up
    to it. Arguments: run -> history."""
    rows = []
    for run, c in constant.items():
        if run not in loss_based:
            continue
        e = int(c["epoch"].max())
        lb = loss_based[run]
        at = lb[lb["epoch"] <= e].sort_values("epoch").iloc[-1]
        rows.append(dict(
            run=run, epochs=e,
            log10_loss_constant=float(c.loc[c["epoch"] == e, "log10_train_loss"].iloc[-1]),
            log10_loss_loss_based=float(at["log10_train_loss"]),
            loss_based_epoch=int(at["epoch"]),
            loss_based_rollbacks=int(at["rollbacks"]) if "rollbacks" in at else 0,
        ))  # fmt: skip
    cols = ["run", "epochs", "log10_loss_constant", "log10_loss_loss_based", "loss_based_epoch",
            "loss_based_rollbacks"]  # fmt: skip
    return pd.DataFrame(rows, columns=cols)


SCHEDULES = ("loss_based", "constant")  # the summary's ``schedule`` values


def run_table(
    history: pd.DataFrame,
    checkpoints: pd.DataFrame,
    points: pd.DataFrame | None,
    kkt: pd.DataFrame,
    radii: dict,
    schedule: str = "loss_based",
) -> tuple[pd.DataFrame, dict]:
    """One run's summary rows (one per checkpoint, :func:`checkpoint_table`) with the run-level
    numbers repeated on each: ``schedule``, ``sep_*`` (:func:`separation`), ``cert_*``
    (:func:`certificate_check`; NaN without points: the constant-step runs get no robustness
    job), the robust accuracies per split, ``kkt_residual`` and ``homogeneity`` (the KKT
    job's table), ``min_log10_loss``, ``all_finite`` and the rates of :func:`flow_rates`
    (constant-step runs; NaN for loss-based ones). Also the notes summary.md prints."""
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    degree = int(kkt["homogeneity"].iloc[0])
    sep = separation(history)
    t = checkpoint_table(history, checkpoints)
    if schedule == "constant":
        t["paper_name"] = "-"  # the paper's models are loss-based SGD checkpoints
    cc = dict(points=0, holding=0, frac_holding=math.nan, distance_over_cert_median=math.nan)
    if points is not None:
        cc = certificate_check(points)
        wide = robust_at(points, radii).pivot(index="checkpoint", columns="split")
        wide.columns = [f"{split}_{col}" for col, split in wide.columns]
        t = t.merge(wide, left_on="name", right_index=True, how="left")
    t = t.merge(kkt[["name", "kkt_residual"]], on="name", how="left")
    rates = flow_rates(history, degree) if schedule == "constant" else {}
    reached = dict(min_log10_loss=float(history["log10_train_loss"].min()),
                   all_finite=all_finite(history))  # fmt: skip
    t = t.assign(schedule=schedule, homogeneity=float(degree),
                 **{f"sep_{a}": b for a, b in sep.items()},
                 **{f"cert_{a}": b for a, b in cc.items()},
                 min_log10_loss=reached["min_log10_loss"],
                 all_finite=float(reached["all_finite"]),
                 **{k: rates.get(k, math.nan) for k in RATE_COLUMNS})  # fmt: skip
    notes = {"training": reached, "after the data is fit": sep}
    if points is not None:
        notes["certificate"] = cc
    if rates:
        notes["rates (last decade of steps)"] = rates
    return t, notes


RATE_COLUMNS = ("loss_rate_slope", "loss_rate_theory", "norm_rate_slope", "norm_rate_theory")


def all_finite(history: pd.DataFrame) -> bool:
    """Every logged value of the history is a finite number (test accuracy may be absent)."""
    vals = history[[c for c in HISTORY_FLOATS if c in history]].iloc[1:].to_numpy(float)
    return bool(np.isfinite(vals).all())


def robust_at(points: pd.DataFrame, radii: dict) -> pd.DataFrame:
    """Per checkpoint and split: clean accuracy, median distances and robust accuracy at
    the middle of each eps grid (the point where checkpoints differ most visibly)."""
    g = points.groupby(["checkpoint", "split"], sort=False)
    out = g.agg(
        clean=("margin", lambda s: float((s > 0).mean())),
        median_l2=("distance_l2", "median"),
        median_linf=("distance_linf", "median"),
        median_cert_l2=("certified_l2", "median"),
    ).reset_index()
    for norm, grid in radii.items():  # robust_<norm> at eps_<norm> (NaN: norm not attacked)
        eps = float(sorted(grid)[len(grid) // 2])
        acc = g[f"distance_{norm}"].apply(
            lambda s, e=eps: float((s > e).mean()) if s.notna().any() else math.nan
        )
        out[f"robust_{norm}"] = acc.to_numpy()
        out[f"eps_{norm}"] = eps
    return out


L2_ATTACKS = ("fab_l2", "pgd_l2_upper")  # per-point l2 distance upper bounds of the attacks


def attack_audit(points: pd.DataFrame) -> pd.DataFrame:
    """How often each l2 attack found the smallest distance (the reported ``distance_l2``
    is the minimum over them), per checkpoint and split, on the correctly classified
    points where every attack ran: ``tightest`` (ties count for each attack that reached
    the minimum), and its median and largest ratio to the minimum."""
    rows = []
    for (name, split), g in points.groupby(["checkpoint", "split"], sort=False):
        g = g[g["margin"] > 0].dropna(subset=list(L2_ATTACKS))
        best = g[list(L2_ATTACKS)].min(axis=1)
        for attack in L2_ATTACKS:
            ratio = g[attack] / best
            rows.append(
                dict(
                    checkpoint=name,
                    split=split,
                    attack=attack,
                    points=len(g),
                    tightest=float((ratio <= 1 + 1e-9).mean()) if len(g) else math.nan,
                    ratio_median=float(ratio.median()) if len(g) else math.nan,
                    ratio_max=float(ratio.max()) if len(g) else math.nan,
                )
            )
    return pd.DataFrame(rows)


def certificate_check(points: pd.DataFrame) -> dict:
    """On the correctly classified points with a certificate: how many have a minimal l2
    distance (the smallest over the attacks) at least the certified q / beta (the seeds'
    inequality R(z) >= q(z) / beta: every one should), and the median ratio."""
    b = points[(points["margin"] > 0) & points["certified_l2"].notna()]
    b = b.dropna(subset=["distance_l2"])
    holds = b["distance_l2"] >= b["certified_l2"] * (1 - 1e-9)
    return dict(
        points=len(b),
        holding=int(holds.sum()),
        frac_holding=float(holds.mean()) if len(b) else math.nan,
        distance_over_cert_median=float((b["distance_l2"] / b["certified_l2"]).median())
        if len(b)
        else math.nan,
    )


def summary_table(tables: dict) -> pd.DataFrame:
    """One row per (run, schedule, checkpoint): ours beside the paper's model of the same
    name. ``tables``: run -> its :func:`run_table` rows, or (run, schedule) -> them."""
    paper = PAPER_TABLE.rename(
        columns={
            "name": "paper_name",
            "epoch": "paper_epoch",
            "log10_train_loss": "paper_log10_train_loss",
            "normalized_margin": "paper_normalized_margin",
        }
    )
    frames = [t.assign(run=key if isinstance(key, str) else key[0]) for key, t in tables.items()]
    return pd.concat(frames, ignore_index=True).merge(paper, on="paper_name", how="left")


def summary_markdown(
    summary: pd.DataFrame, notes: dict[str, dict], audit: pd.DataFrame | None = None
) -> str:
    """summary.md: the checkpoint table beside the paper's, per run the numbers the study
    reports (``notes``: run label -> separation / certificate / rates dicts), then the attack
    audit summed over runs and checkpoints (:func:`attack_audit`)."""
    cols = ["run", "schedule", "name", "paper_epoch", "epoch", "paper_log10_train_loss",
            "log10_train_loss", "paper_normalized_margin", "normalized_margin", "test_acc",
            "kkt_residual"]  # fmt: skip
    cols = [c for c in cols if c in summary]
    lines = ["# Summary: Study MARGIN (Lyu & Li, ICLR 2020)", ""]
    lines += ["Paper: SGD on full MNIST (batch 100); ours: see the run's config.", ""]
    lines += [summary[cols].to_markdown(index=False, floatfmt=".4g"), ""]
    for run, note in notes.items():
        lines.append(f"## {run}")
        for key, d in note.items():
            txt = ", ".join(f"{k} {_fmt(v)}" for k, v in d.items())
            lines.append(f"- {key}: {txt}")
        lines.append("")
    if audit is not None and len(audit):
        lines += ["## Attack audit: which attack found the minimal l2 distance", ""]
        lines += ["The reported distance is the smallest over the attacks; `tightest` = share "
                  "of the correctly classified points (pooled over runs and checkpoints) on "
                  "which the attack reached it (ties count for both).", ""]  # fmt: skip
        tot = audit.assign(hits=audit["tightest"] * audit["points"])
        g = tot.groupby(["split", "attack"], sort=False)
        agg = pd.DataFrame({"points": g["points"].sum(), "tightest": g["hits"].sum() / g["points"].sum(),
                            "ratio_median": g["ratio_median"].median(),
                            "ratio_max": g["ratio_max"].max()}).reset_index()  # fmt: skip
        lines += [agg.to_markdown(index=False, floatfmt=".4g"), ""]
    return "\n".join(lines)


def _fmt(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def robust_curves(points: pd.DataFrame, radii: dict) -> pd.DataFrame:
    """Robust accuracy (fraction with distance > eps) per checkpoint, split, norm and eps;
    a norm whose distances are all NaN (no box: no l_inf attack) is left out."""
    rows = []
    for (name, split), g in points.groupby(["checkpoint", "split"], sort=False):
        for norm, grid in radii.items():
            d = g[f"distance_{norm}"]
            if d.isna().all():
                continue
            eps = np.asarray(grid, dtype=float)
            # R(x) > eps, as ibrobust.attacks.minimal_norm.robust_accuracy_curve (torch-free here:
            # the figure job needs no tensor)
            acc = (d.fillna(0.0).to_numpy()[None, :] > eps[:, None]).mean(1)
            rows += [
                dict(checkpoint=name, split=split, norm=norm, eps=e, robust_acc=float(a))
                for e, a in zip(eps, acc, strict=True)
            ]
    return pd.DataFrame(rows)
