"""Helpers shared by the figure scripts: gather per-run tables, save figure + CSV."""

from __future__ import annotations

import json
from types import SimpleNamespace

import matplotlib.pyplot as plt
import pandas as pd

from ibrobust.io import read_csv, save_csv, save_figure


def gather_csv(
    paths: list[str], runs: list[dict], model_kinds: dict[str, str] | None = None
) -> pd.DataFrame:
    """Concatenate per-run CSVs, each tagged with its run's wildcards."""
    frames = []
    for path, run in zip(paths, runs, strict=True):
        df = read_csv(path)
        for k, v in run.items():
            df[k] = v
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def gather_json(paths: list[str], runs: list[dict]) -> list[dict]:
    out = []
    for path, run in zip(paths, runs, strict=True):
        with open(path) as fh:
            out.append({**run, **json.load(fh)})
    return out


def save_outputs(job, fig: plt.Figure, table: pd.DataFrame, output, dpi: int) -> None:
    """Write CSV, PNG and PDF atomically and log them as artifacts under figures/."""
    save_csv(output.csv, table)
    save_figure(fig, output.png, output.pdf, dpi=dpi)
    plt.close(fig)
    for f in (output.png, output.pdf, output.csv):
        job.artifact(f, "figures")


def figure_files(output, prefix: str) -> SimpleNamespace:
    """The (png, pdf, csv) outputs ``<prefix>_png``, ``<prefix>_pdf``, ``<prefix>_csv`` of one
    figure, as :func:`save_outputs` takes them."""
    return SimpleNamespace(**{ext: output[f"{prefix}_{ext}"] for ext in ("png", "pdf", "csv")})
