"""Study MARGIN's figures-and-tables job, from the runs' output files to its tables: per run
and schedule the checkpoint table and the numbers the study reports (:func:`.tables.run_table`:
monotonicity of the smoothed normalized margin after the data is fit, the lowest loss reached,
whether every logged value is finite, the certificate check, and for the constant-step runs
the loss and norm rates), the attack audit (which attack found each minimal distance), every
run's per-point distances, and per seed the two schedules' losses at the same epoch
(:func:`.tables.schedules_table`: header only without ``training.flow``); and the figures'
data (the first run's history, the per-point distances labelled by run). Pure pandas."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ibrobust.studies.margin import tables as mr

LOSS_BASED, CONSTANT = mr.SCHEDULES
ARM_FILES = ("history", "meta", "table", "kkt")  # one run's files per schedule
CHECKPOINT_COLUMNS = ["run", "schedule", "name", "paper_name", "epoch", "log10_train_loss",
                      "normalized_margin", "smoothed_normalized_margin", "kkt_residual"]  # fmt: skip


def run_label(r: Mapping) -> str:
    """``dataset/model/seed<seed>`` of a run's wildcards."""
    return f"{r['dataset']}/{r['model']}/seed{r['seed']}"


def first_run(history: pd.DataFrame, run: Mapping) -> pd.DataFrame:
    """The rows of ``run`` (its dataset, model and seed) in the gathered histories."""
    return history[(history["dataset"] == run["dataset"]) & (history["model"] == run["model"])
                   & (history["seed"] == run["seed"])]  # fmt: skip


def label_checkpoints(points: pd.DataFrame, runs: Sequence[Mapping]) -> pd.DataFrame:
    """With several runs, each point's checkpoint as ``<run label>:<checkpoint>`` (one curve
    per run and checkpoint); one run: unchanged. ``points`` is changed in place."""
    if len(runs) > 1:
        label = [run_label(r) for r in runs]
        run_of = dict(zip([tuple(r.values()) for r in runs], label, strict=True))
        keys = list(zip(points["dataset"], points["model"], points["seed"], strict=True))
        points["checkpoint"] = [
            f"{run_of[k]}:{c}" for k, c in zip(keys, points["checkpoint"], strict=True)
        ]
    return points


@dataclass
class Summary:
    """The summary's pieces, gathered run by run (:meth:`add_points`, :meth:`add_arm`)."""

    tables: dict = field(default_factory=dict)  # (run, schedule) -> its run_table rows
    notes: dict = field(default_factory=dict)  # "run (schedule)" -> its numbers
    audits: list = field(default_factory=list)
    points: list = field(default_factory=list)
    histories: dict = field(default_factory=lambda: {LOSS_BASED: {}, CONSTANT: {}})

    def add_points(self, run: str, points: pd.DataFrame) -> None:
        """One run's per-point distances: its attack audit and its rows of points.csv."""
        self.audits.append(mr.attack_audit(points).assign(run=run))
        self.points.append(points.assign(run=run))

    def add_arm(
        self, run: str, schedule: str, files: Mapping[str, str], points, radii: dict
    ) -> tuple[pd.DataFrame, dict]:
        """One run's schedule from its :data:`ARM_FILES` (``points``: None for the
        constant-step runs): its run_table rows and notes, the notes with the run's meta."""
        hist = pd.read_csv(files["history"])
        meta = json.loads(Path(files["meta"]).read_text())
        t, note = mr.run_table(hist, pd.read_csv(files["table"]), points,
                               pd.read_csv(files["kkt"]), radii, schedule)  # fmt: skip
        note["training"] = {**note["training"], **meta}
        self.tables[(run, schedule)], self.notes[f"{run} ({schedule})"] = t, note
        self.histories[schedule][run] = hist
        return t, note

    def outputs(self) -> dict[str, pd.DataFrame | str]:
        """summary_csv, checkpoints, audit, points, schedules (tables) and summary_md."""
        table = mr.summary_table(self.tables)
        audit = pd.concat(self.audits, ignore_index=True)
        return {
            "summary_csv": table,
            "checkpoints": table[CHECKPOINT_COLUMNS],
            "audit": audit,
            "points": pd.concat(self.points, ignore_index=True),
            "schedules": mr.schedules_table(self.histories[LOSS_BASED], self.histories[CONSTANT]),
            "summary_md": mr.summary_markdown(table, self.notes, audit),
        }


def collect(
    runs: Sequence[Mapping], inputs: Mapping[str, Sequence[str]], radii: dict, flow: bool
) -> tuple[dict[str, pd.DataFrame | str], list[tuple[int, str, dict[str, float]]]]:
    """The :meth:`Summary.outputs` of every run (``inputs``: the job's input lists by name, in
    ``runs`` order: points and the :data:`ARM_FILES`, with ``flow`` also the constant-step
    runs' ``flow_<file>``), and per run and schedule (run index, log line, tracked metrics)."""
    s, logged = Summary(), []
    for k, r in enumerate(runs):
        run, pts = run_label(r), pd.read_csv(inputs["points"][k])
        s.add_points(run, pts)
        arms = [(LOSS_BASED, "", pts)] + ([(CONSTANT, "flow_", None)] if flow else [])
        for schedule, pre, points in arms:
            files = {f: inputs[f"{pre}{f}"][k] for f in ARM_FILES}
            t, note = s.add_arm(run, schedule, files, points, radii)
            logged.append((k, arm_line(run, schedule, t, note), arm_metrics(schedule, note)))
    return s.outputs(), logged


def arm_line(run: str, schedule: str, table: pd.DataFrame, note: dict) -> str:
    """The log line of one run's schedule: its lowest loss, the margin's monotonicity after
    the data is fit and the last KKT residual."""
    training, sep = note["training"], note["after the data is fit"]
    return (
        f"{run} {schedule}: log10 L {training['min_log10_loss']:.2f} (finite "
        f"{training['all_finite']}); smoothed margin decreasing in {sep['decreasing']} of "
        f"{sep['epochs_after']} rows after fit; KKT residual at the end "
        f"{float(table['kkt_residual'].iloc[-1]):.3g}"
    )


def arm_metrics(schedule: str, note: dict) -> dict[str, float]:
    """The tracked metrics of one run's schedule."""
    return {
        f"{schedule}.min_log10_loss": note["training"]["min_log10_loss"],
        f"{schedule}.frac_decreasing": note["after the data is fit"]["frac_decreasing"],
    }
