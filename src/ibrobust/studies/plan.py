"""Planning shared by the network study kinds: the runs (dataset, model, optimizer,
supervision, seed) a study trains, part by part, and the files they write.

A network study kind's ``parts(cfg, st)`` lists its cross products; a part with a fixed
``grid`` (e.g. Study FA's scaling sweep) is attacked on that grid only and is left out of
the study's own runs unless asked for by name. Pure functions of the validated config.
"""

from __future__ import annotations

from typing import Any

from ibrobust import studies

RUN_KEYS = ("dataset", "model", "optimizer", "supervision", "seed")
RUN_DIR = "results/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}"
REFERENCE_OPTIMIZER = "handbuilt"  # the optimizer wildcard of the hand-built robust reference

Run = tuple[str, str, str, str, int]


def all_parts(cfg: dict, study: str) -> list[dict[str, Any]]:
    st = cfg["studies"][study]
    return studies.hook(st["kind"], "parts")(cfg, st)


def study_parts(cfg: dict, study: str, names: list[str] | None = None) -> list[dict[str, Any]]:
    """The parts of a study (those of a fixed grid only when ``names`` asks for them)."""
    return [
        p
        for p in all_parts(cfg, study)
        if (p["part"] in names if names is not None else "grid" not in p)
    ]


def part_of(cfg: dict, study: str, dataset: str, grid: str | None = None) -> dict[str, Any]:
    """The part of a study that trains on ``dataset`` (the part of a fixed ``grid`` first)."""
    parts = sorted(all_parts(cfg, study), key=lambda p: p.get("grid") != grid)
    for p in parts:
        if p.get("grid", grid) == grid and dataset in p["datasets"]:
            return p
    return study_parts(cfg, study)[0]


def trained_runs(
    cfg: dict,
    study: str,
    datasets: list[str] | None = None,
    seeds: list[int] | None = None,
    parts: list[str] | None = None,
) -> list[Run]:
    """(dataset, model, optimizer, supervision, seed) of every trained model of a study
    (of the named ``parts`` only, when given)."""
    return [
        (ds, m, o, sup, seed)
        for p in study_parts(cfg, study, parts)
        for ds in (datasets or p["datasets"])
        for m in p["models"]
        for o in p["optimizers"]
        for sup in p["supervisions"]
        for seed in (seeds or p["seeds"])
    ]


def reference_runs(
    cfg: dict, study: str, datasets: list[str] | None = None, seeds: list[int] | None = None
) -> list[Run]:
    """The hand-built robust reference of a study (its ``reference``) per dataset and seed."""
    st = cfg["studies"][study]
    if st.get("reference") is None:
        return []
    return [
        (ds, st["reference"], REFERENCE_OPTIMIZER, "binary", seed)
        for ds in (datasets or st["datasets"])
        for seed in (seeds or st["seeds"])
    ]


def as_dicts(runs: list[Run]) -> list[dict[str, Any]]:
    return [dict(zip(RUN_KEYS, r, strict=True)) for r in runs]


def first_seed_runs(cfg: dict, study: str) -> list[dict[str, Any]]:
    """Each part's runs of its first seed."""
    return as_dicts(
        [
            r
            for p in study_parts(cfg, study)
            for r in trained_runs(cfg, study, seeds=[p["seeds"][0]], parts=[p["part"]])
        ]
    )


def main_runs(cfg: dict, study: str) -> list[dict[str, Any]]:
    return as_dicts(trained_runs(cfg, study) + reference_runs(cfg, study))


def run_dir(study: str, dataset: str, model: str, optimizer: str, supervision: str, seed) -> str:
    return RUN_DIR.format(
        study=study,
        dataset=dataset,
        model=model,
        optimizer=optimizer,
        supervision=supervision,
        seed=seed,
    )


def files(study: str, runs: list[dict[str, Any]], tail: str) -> list[str]:
    return [f"{run_dir(study, **r)}/{tail}" for r in runs]


def readouts(cfg: dict, study: str, supervision: str) -> list[str | None]:
    """The binary readouts a model is attacked under: the study's ``readouts`` for a k-class
    model; ``[None]`` for a model with two heads (or one), on which every readout is the
    same score, and for studies without ``readouts`` (the model's own ``binary_score``)."""
    names = cfg["studies"][study].get("readouts")
    return list(names) if names and supervision == "multiclass" else [None]


def with_readouts(cfg: dict, study: str, runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``runs`` once per readout they are attacked under (key ``readout``; None: their own)."""
    return [dict(r, readout=ro) for r in runs for ro in readouts(cfg, study, r["supervision"])]


def attack_files(study: str, runs: list[dict[str, Any]], grid: str, name: str) -> list[str]:
    """attack/<grid>/[<readout>/]<name> of ``with_readouts`` runs (a k-class model's readout
    names a folder; a model attacked on its own score has none)."""
    return [
        f"{run_dir(study, **{k: r[k] for k in RUN_KEYS})}/attack/{grid}/"
        + (f"{r['readout']}/" if r.get("readout") else "")
        + name
        for r in runs
    ]
