"""Snakemake profiles: profiles/default (local runs), profiles/slurm and profiles/slurm-gpu
(the same but a GPU for training and attacks); every rule declares threads and resources
(figure and table rules: the defaults),
set-resources names only existing rules and its expressions evaluate for attempts 1-3."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import yaml

REPO = Path(__file__).resolve().parents[2]
PROFILES = REPO / "profiles"


def _load(name: str) -> dict:
    return yaml.safe_load((PROFILES / name / "config.yaml").read_text())


def _rules() -> dict[str, str]:
    """rule name -> body, from rules/*.smk."""
    out = {}
    for smk in (REPO / "rules").glob("*.smk"):
        parts = re.split(r"^rule (\w+):\s*$", smk.read_text(), flags=re.M)
        out.update(dict(zip(parts[1::2], parts[2::2], strict=True)))
    return out


def _figure_or_table(body: str) -> bool:
    """Every output of the rule is under results/{study}/figures/."""
    outs = re.search(r"^    output:\n((?:        .*\n)+)", body, flags=re.M)
    paths = re.findall(r'"(results/[^"]*)"', outs.group(1)) if outs else []
    return bool(paths) and all(p.startswith("results/{study}/figures/") for p in paths)


def test_every_rule_that_runs_declares_threads_and_resources():
    """A rule declares its log and env; its threads and resources too, except a figure or
    table rule, which runs under the defaults (one thread; the profiles' default-resources)."""
    lean = set()
    for name, body in _rules().items():
        if "script:" not in body and "shell:" not in body and "run:" not in body:
            continue  # a target (rule all, fa, ...)
        for key in ("log:", "conda:"):
            assert key in body, f"rule {name} declares no {key}"
        if _figure_or_table(body) and "resources:" not in body:
            lean.add(name)  # a figure or table rule that needs no more than the defaults
            continue
        for key in ("threads:", "resources:"):
            assert key in body, f"rule {name} declares no {key}"
    assert {"prelu_figures", "fa_images_figures", "margin_figures", "attack_audit_table"} <= lean
    # a lean rule runs under the SLURM default-resources, not a set-resources line
    assert not lean & set(_load("slurm")["set-resources"])


def test_default_profile_is_for_local_runs():
    prof = _load("default")
    assert prof["cores"] == "all" and prof["keep-going"] is True
    assert "executor" not in prof
    # disjoint from the cluster profile, so `--profile profiles/slurm` merges cleanly
    assert not set(prof) & set(_load("slurm"))


def test_slurm_profile_resources():
    prof = _load("slurm")
    assert prof["executor"] == "slurm"
    assert prof["retries"] >= 1
    rules = _rules()
    for rule, res in prof["set-resources"].items():
        assert rule in rules, f"set-resources names no rule: {rule}"
        for key, expr in res.items():
            for attempt in (1, 2, 3):
                value = eval(  # as Snakemake evaluates resource expressions
                    str(expr), {"attempt": attempt, "input": SimpleNamespace(size_mb=100.0)}
                )
                assert value > 0, (rule, key, expr)
            if key in ("mem_mb", "runtime"):
                assert "attempt" in str(expr), f"{rule}.{key} does not grow with attempt"
    for key in ("mem_mb", "runtime"):
        assert "attempt" in str(prof["default-resources"][key])


def test_gpu_profile_is_the_slurm_profile_plus_gpus():
    cpu, gpu = _load("slurm"), _load("slurm-gpu")
    assert {k: v for k, v in gpu.items() if k != "set-resources"} == {
        k: v for k, v in cpu.items() if k != "set-resources"
    }
    assert set(gpu["set-resources"]) == set(cpu["set-resources"])
    with_gpu = {r for r, res in gpu["set-resources"].items() if "gpu" in res}
    assert with_gpu == {"train", "attack"}
    for rule, res in gpu["set-resources"].items():
        assert {k: v for k, v in res.items() if k != "gpu"} == cpu["set-resources"][rule]
