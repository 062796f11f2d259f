"""What a job's run records about its files, decided on the job side (standard library only):

* a **model file** the job wrote (:func:`model_record`): the tag ``ibrobust.model_path``
  (its path relative to the project, always) and the file itself as an artifact under
  ``model/`` when it is at most the size cap (config ``mlflow.model_artifact_max_mb``); the
  tag ``ibrobust.model_artifact`` names the artifact, or says that and why it was skipped;
* a **dataset file** the job read (:func:`dataset_record`): MLflow's dataset input - a
  name (``tiny_clusters/seed0`` for ``results/datasets/tiny_clusters/seed0/data.npz``), a
  digest (the first 16 hex digits of the file's sha256: from the dataset job's
  ``meta.json`` beside it when that was written after the file, else hashed here) and the
  source (the file's absolute path).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

MODEL_PATH_TAG = "ibrobust.model_path"
MODEL_ARTIFACT_TAG = "ibrobust.model_artifact"
MODEL_FOLDER = "model"
DATASETS_DIR = Path("results") / "datasets"
DIGEST_HEX = 16
MB = 1024 * 1024


def project_path(path: str | os.PathLike) -> str:
    """``path`` relative to the project (the working directory jobs run in), where it is
    inside it; else absolute."""
    absolute = Path(path).resolve()
    try:
        return str(absolute.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(absolute)


@dataclass(frozen=True)
class ModelRecord:
    tags: dict[str, str]
    artifact: bool  # log the file under model/
    size_mb: float


def model_record(path: str | os.PathLike, max_mb: float) -> ModelRecord:
    """The tags of a model file and whether the file itself goes to the run (at most
    ``max_mb`` MB; 0 logs no model file)."""
    size_mb = Path(path).stat().st_size / MB
    artifact = size_mb <= max_mb and max_mb > 0
    if artifact:
        where = f"{MODEL_FOLDER}/{Path(path).name}"
    else:
        where = (
            f"not logged: {size_mb:.1f} MB > {max_mb:g} MB (mlflow.model_artifact_max_mb); "
            "the file stays at ibrobust.model_path"
        )
    return ModelRecord(
        {MODEL_PATH_TAG: project_path(path), MODEL_ARTIFACT_TAG: where}, artifact, size_mb
    )


@dataclass(frozen=True)
class DatasetRecord:
    name: str
    digest: str
    source: str


def dataset_name(path: str | os.PathLike) -> str:
    """``tiny_clusters/seed0`` for ``results/datasets/tiny_clusters/seed0/data.npz``; other
    files: their project path without ``results/`` and the suffix."""
    rel = Path(project_path(path))
    if rel.parts[:2] == DATASETS_DIR.parts and len(rel.parts) > 3:
        return "/".join(rel.parts[2:-1])
    parts = rel.with_suffix("").parts
    return "/".join(parts[1:] if parts[0] == "results" else parts)


def file_digest(path: str | os.PathLike) -> str:
    """The first 16 hex digits of the file's sha256: the dataset job's ``meta.json`` beside
    it says it (``sha256``) when that was written after the file, else it is hashed."""
    path = Path(path)
    meta = path.with_name("meta.json")
    try:
        if meta.stat().st_mtime_ns >= path.stat().st_mtime_ns:
            sha = json.loads(meta.read_text()).get("sha256")
            if isinstance(sha, str) and len(sha) == 64:
                return sha[:DIGEST_HEX]
    except (OSError, ValueError):
        pass
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(MB):
            h.update(chunk)
    return h.hexdigest()[:DIGEST_HEX]


def dataset_record(path: str | os.PathLike) -> DatasetRecord:
    return DatasetRecord(dataset_name(path), file_digest(path), str(Path(path).resolve()))
