"""Snakemake profiles: profiles/default (local runs, one GPU job at a time), profiles/slurm
and profiles/slurm-gpu (the same but a GPU for exactly the rules that use the config key
``device``); every rule declares threads and resources (figure and table rules: the
defaults), set-resources names only existing rules and its expressions evaluate for
attempts 1-3."""

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


def _device_rules() -> set[str]:
    """The rules whose jobs use the config key ``device`` (``device=DEVICE`` in params; the
    same rules claim the local ``gpu`` resource), with the per-study
    ``attack_readouts_<study>`` of every shipped config's studies with ``readouts``."""
    rules = _rules()
    static = {name for name, body in rules.items() if "device=DEVICE" in body}
    for name in static:  # who uses the device claims the gpu resource, and only they do
        assert "gpu=GPU_JOB" in rules[name], name
    assert not {n for n, b in rules.items() if "gpu=GPU_JOB" in b} - static
    studies = set()
    for f in [REPO / "config.yaml", *sorted((REPO / "configs").glob("*.yaml"))]:
        cfg = yaml.safe_load(f.read_text()).get("studies") or {}
        studies |= {s for s, st in cfg.items() if isinstance(st, dict) and st.get("readouts")}
    return static | {f"attack_readouts_{s}" for s in studies}


def test_device_rules_are_every_job_that_computes_with_torch():
    """The list the schema's ``device`` description gives (rules/attack.smk's per-study rule
    sits in attack's body: its name is built in a loop)."""
    assert _device_rules() >= {
        "train", "attack", "margin_train", "margin_flow", "margin_robustness", "fa_margin_gradient",
        "attack_readouts_fa", "attack_readouts_fa_images",
    }  # fmt: skip
    assert "device=DEVICE" in _rules()["attack"].split("for _study in NET_STUDIES")[1]
    assert not _device_rules() & {"dataset", "analyze", "decompose", "price_train", "margin_kkt"}


def test_default_profile_allows_one_gpu_job():
    assert _load("default")["resources"] == ["gpu=1"]


def test_gpu_profile_is_the_slurm_profile_plus_gpus():
    """The same as profiles/slurm, plus gpu: 1 on exactly the rules that use the device
    (their other resources as under profiles/slurm: its line, or the rule's own)."""
    cpu, gpu = _load("slurm"), _load("slurm-gpu")
    assert {k: v for k, v in gpu.items() if k != "set-resources"} == {
        k: v for k, v in cpu.items() if k != "set-resources"
    }
    assert set(cpu["set-resources"]) <= set(gpu["set-resources"])
    with_gpu = {r for r, res in gpu["set-resources"].items() if res.get("gpu") == 1}
    assert with_gpu == _device_rules()
    assert all(res.get("gpu", 1) == 1 for res in gpu["set-resources"].values())
    for rule, res in gpu["set-resources"].items():
        assert {k: v for k, v in res.items() if k != "gpu"} == cpu["set-resources"].get(rule, {})
