"""Fuzz test of the configuration (issue 15 item 6): malformed configs generated from the
schema, each either rejected with the offending key path in the message or accepted and
then planned without error.

A seeded generator (no Hypothesis: the cases are plain mutations of the shipped configs)
applies one mutation to config.yaml, alone or under one of the shipped overlays:

* ``type``: a value of a type the schema does not allow at that key;
* ``range``: just outside a ``minimum`` / ``maximum`` (exclusive bounds: on them);
* ``nonfinite``: NaN, +inf or -inf at any number, string or list element;
* ``float_int``: ``2.0`` where the schema wants an integer;
* ``unknown``: an unknown key added to any mapping, at every level;
* ``dangling``: a study's reference to a registry entry renamed to a missing one;
* ``empty``: a list emptied; ``duplicate``: a list's last item repeated;
* ``remove``: a key (a registry entry, a setting) deleted.

The first five must be rejected at exactly that key. The others may be fine (a default
fills a removed key, a list may repeat), so they must be rejected naming that key, one
of its ancestors or descendants, or another key whose message names what they broke
(:func:`names_what_broke`), or else plan: every dataset
(sweep variants included), optimizer and attack entry builds its typed library config,
and every attack job of every study part runs at least one attack.
"""

from __future__ import annotations

import copy
import math
import random
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from config_helpers import assert_rejected, bad_cases, merged, validated

from ibrobust import kinds, studies
from ibrobust.attacks.policy import attack_applies, grid_attacks, radius_grids
from ibrobust.config import ConfigError, load_schema
from ibrobust.config.values import key_path
from ibrobust.studies import plan as plan_of
from ibrobust.studies.expansion import derived_datasets, derived_optimizers

REPO = Path(__file__).resolve().parents[2]
SCHEMA = load_schema(REPO / "schemas" / "config.schema.yaml")
BASE = yaml.safe_load((REPO / "config.yaml").read_text())
OVERLAYS = [None, *sorted((REPO / "configs").glob("*.yaml"))]
OVERLAYS += sorted((REPO / "tests" / "workflow" / "configs").glob("*.yaml"))
STRICT = ("type", "range", "nonfinite", "float_int", "unknown")
LOOSE = ("dangling", "empty", "duplicate", "remove")
CASES_PER_SEED = 25
SEEDS = range(10)  # 250 cases per run
UNKNOWN = "zz_unknown"
MISSING = "zz_missing"
Path_ = tuple[str | int, ...]


def base_config(overlay: Path | None) -> dict:
    return BASE if overlay is None else merged(BASE, yaml.safe_load(overlay.read_text()))


# ---- the schema at a key path -----------------------------------------------------------
def _resolve(schema: dict, instance: Any) -> dict:
    """``schema`` with $ref followed and the allOf if/then branches ``instance`` takes merged."""
    while "$ref" in schema:
        schema = SCHEMA["definitions"][schema["$ref"].rsplit("/", 1)[1]]
    for branch in schema.get("allOf", []):
        kind = branch["if"]["properties"]["kind"]["const"]
        if isinstance(instance, dict) and instance.get("kind") == kind:
            return _resolve(branch["then"], instance)
    return schema


def schema_at(cfg: dict, path: Path_) -> dict | None:
    """The (resolved) schema of the value at ``path`` of ``cfg``; None where there is none.
    A scale ladder's ``overrides`` take its study's keys: below them, the study's schema."""
    schema, value = _resolve(SCHEMA, cfg), cfg
    for i, part in enumerate(path):
        if isinstance(part, int):
            sub = schema.get("items")
        elif path[i - 2 : i] == ("scale", "overrides") and path[0] == "studies" and i >= 4:
            study = _resolve(SCHEMA["definitions"]["study"], get(cfg, path[:2]))
            sub = study.get("properties", {}).get(part)
        else:
            sub = schema.get("properties", {}).get(part)
            if sub is None and isinstance(schema.get("additionalProperties"), dict):
                sub = schema["additionalProperties"]
        if sub is None:
            return None
        value = value[part]
        schema = _resolve(sub, value)
    return schema


def types_of(schema: dict) -> set[str]:
    t = schema.get("type", [])
    return set(t if isinstance(t, list) else [t])


# ---- where a mutation can go ---------------------------------------------------------------
def walk(value: Any, path: Path_ = ()):
    """(path, value) of every node below the root, parents first."""
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for k, v in items:
        yield (*path, k), v
        if isinstance(v, dict | list):
            yield from walk(v, (*path, k))


def get(cfg: dict, path: Path_) -> Any:
    for p in path:
        cfg = cfg[p]
    return cfg


def put(cfg: dict, path: Path_, value: Any) -> None:
    get(cfg, path[:-1])[path[-1]] = value


REFERENCE_FIELDS = ("datasets", "models", "optimizers", "attacks", "gap_difference")
REFERENCE_KEYS = ("reference", "dataset")


def reference_paths(cfg: dict) -> list[Path_]:
    """Names of registry entries that studies refer to."""
    out = []
    for path, v in walk(cfg["studies"], ("studies",)):
        if isinstance(v, str) and (
            (isinstance(path[-1], int) and path[-2] in REFERENCE_FIELDS)
            or path[-1] in REFERENCE_KEYS
        ):
            out.append(path)
    return out


def wrong_type_value(schema: dict, rng: random.Random) -> Any:
    allowed = types_of(schema)
    candidates = {
        "string": "zz",
        "array": [1],
        "object": {"a": 1},
        "boolean": True,
        "number": 1.5,
        "null": None,
    }
    bad = [v for t, v in candidates.items() if t not in allowed]
    if "number" in allowed or "integer" in allowed:  # a numeric string is still a string
        bad = [v for v in bad if v != 1.5]
    if "integer" in allowed and "number" not in allowed:
        bad.append(1.5)
    return rng.choice(bad)


def mutate(cfg: dict, kind: str, rng: random.Random) -> tuple[dict, Path_, str] | None:
    """(mutated copy, the mutated key path, description), or None when ``cfg`` offers no
    place for this kind of mutation."""
    cfg = copy.deepcopy(cfg)
    nodes = list(walk(cfg))
    if kind == "type":
        spots = [(p, s) for p, _ in nodes if (s := schema_at(cfg, p)) and types_of(s)]
        path, s = rng.choice(spots)
        put(cfg, path, wrong_type_value(s, rng))
    elif kind == "range":
        spots = []
        for p, v in nodes:
            s = schema_at(cfg, p)
            if s and isinstance(v, int | float) and not isinstance(v, bool):
                spots += [(p, s, b) for b in ("minimum", "exclusiveMinimum", "maximum") if b in s]
                spots += [(p, s, b) for b in ("exclusiveMaximum",) if b in s]
        path, s, bound = rng.choice(spots)
        integer = "integer" in types_of(s) and "number" not in types_of(s)
        step = 1 if integer else 0.5
        value = {
            "minimum": s.get("minimum", 0) - step,
            "exclusiveMinimum": s.get("exclusiveMinimum"),
            "maximum": s.get("maximum", 0) + step,
            "exclusiveMaximum": s.get("exclusiveMaximum"),
        }[bound]
        put(cfg, path, value)
    elif kind == "nonfinite":
        spots = [p for p, v in nodes if not isinstance(v, dict | list)]
        path = rng.choice(spots)
        put(cfg, path, rng.choice([math.nan, math.inf, -math.inf]))
    elif kind == "float_int":
        spots = [
            p
            for p, v in nodes
            if type(v) is int and (s := schema_at(cfg, p)) and "integer" in types_of(s)
        ]
        path = rng.choice(spots)
        put(cfg, path, float(get(cfg, path)))
    elif kind == "unknown":
        spots = [(), *(p for p, v in nodes if isinstance(v, dict))]
        parent = rng.choice(spots)
        get(cfg, parent)[UNKNOWN] = 1
        path = (*parent, UNKNOWN)
    elif kind == "dangling":
        path = rng.choice(reference_paths(cfg))
        put(cfg, path, MISSING)
    elif kind == "empty":
        spots = [p for p, v in nodes if isinstance(v, list) and v]
        path = rng.choice(spots)
        put(cfg, path, [])
    elif kind == "duplicate":
        spots = [p for p, v in nodes if isinstance(v, list) and v]
        path = rng.choice(spots)
        get(cfg, path).append(copy.deepcopy(get(cfg, path)[-1]))
    elif kind == "remove":
        spots = [p for p, _ in nodes if isinstance(p[-1], str)]
        path = rng.choice(spots)
        del get(cfg, path[:-1])[path[-1]]
    else:
        raise ValueError(kind)
    return cfg, path, f"{kind} at {key_path(path)}"


# ---- the oracle ------------------------------------------------------------------------------
REPORTED = re.compile(r"^config key (\S+?):")


def related(reported: str, path: Path_) -> bool:
    """The reported key is the mutated one, an ancestor (not the root, unless the mutated key
    is top-level) or a descendant."""
    mutated = key_path(path)
    if reported == "<root>":
        return len(path) == 1
    return any(
        a == b or a.startswith(b + ".") or a.startswith(b + "[")
        for a, b in ((reported, mutated), (mutated, reported))
    )


def names_what_broke(msg: str, reported: str, path: Path_) -> bool:
    """A study's key whose message names the registry entry the mutation broke (quoted), or
    a key of the same entry whose message names the mutated key (``radii has no l2 grid``)."""
    if len(path) >= 2 and repr(path[1]) in msg:
        return True
    same_entry = reported.startswith(key_path(path[:2]))
    return same_entry and re.search(rf"\b{re.escape(str(path[-1]))}\b", msg) is not None


def plan(cfg: dict) -> None:
    """What the workflow computes from a valid config before any job, through the library:
    typed configs of every dataset, optimizer and attack a study uses, the attack grids,
    and at least one attack for every attack job."""
    from ibrobust.studies.price_linear import experiment as price_linear
    from ibrobust.training.full_batch import GD_KEYS, GDConfig
    from ibrobust.training.network import NetTrainConfig, net_train_fields
    from ibrobust.training.prelu import PreluTrainConfig, prelu_train_fields

    datasets = {**cfg["datasets"], **derived_datasets(cfg)}
    optimizers = {**cfg["optimizers"], **derived_optimizers(cfg)}  # the workflow's OPTIMIZERS
    for name, ds in datasets.items():  # each kind's typed config (its check builds it)
        kinds.DATASETS.check_entry(ds, f"datasets.{name}")
    for a in cfg["attacks"].values():
        kinds.ATTACKS.load(a["kind"]).parse_spec({k: v for k, v in a.items() if k != "kind"})
    for name, st in cfg["studies"].items():
        if st["kind"] == "price_linear":
            for o in st["optimizers"]:
                price_linear.erm_config(cfg["optimizers"][o], st["stopping"])
            for d in st["datasets"]:
                for n in st["n_train"]:
                    price_linear.teacher_config(cfg["datasets"][d], n)
            continue
        if not kinds.STUDIES.of(st)["network"]:
            continue
        task_of = studies.hook(st["kind"], "task")
        for part in plan_of.all_parts(cfg, name):  # every cross product the kind plans
            for m in part["models"]:
                model = cfg["models"][m]
                for o in part["optimizers"]:
                    if o == plan_of.REFERENCE_OPTIMIZER:
                        continue
                    opt = optimizers[o]
                    path = kinds.trainer(model, opt)
                    if path == "gram_gd":
                        GDConfig(**{k: opt[k] for k in GD_KEYS if k in opt})
                    elif path == "prelu":
                        for sup in part["supervisions"]:
                            PreluTrainConfig(**prelu_train_fields(opt, sup))
                    elif path == "network":
                        NetTrainConfig(**net_train_fields(opt))
            radii = part["radii"]
            per_dataset = isinstance(radii, dict) and set(radii) & set(part["datasets"])
            for grids in (
                [radius_grids(radii[d]) for d in part["datasets"]]
                if per_dataset
                else [radius_grids(radii)]
            ):
                for grid in grids:
                    names = grid_attacks(cfg, part["attacks"], part.get("grid", grid))
                    for sup in part["supervisions"]:
                        task = task_of(sup)
                        runs = [a for a in names if attack_applies(cfg["attacks"][a], sup, task)]
                        assert runs, f"an attack job of {sup} models on grid {grid} runs no attack"


def check_case(cfg: dict, kind: str, path: Path_, what: str) -> str:
    """'rejected' or 'accepted'; AssertionError when the outcome breaks the contract."""
    try:
        valid = validated(cfg, SCHEMA)
    except ConfigError as e:
        msg = str(e)
        m = REPORTED.match(msg)
        assert m, f"{what}: message does not start with the key path: {msg}"
        reported = m.group(1)
        if kind in STRICT:
            assert reported == key_path(path), f"{what}: reported {reported!r}: {msg}"
        else:
            assert related(reported, path) or names_what_broke(msg, reported, path), (
                f"{what}: reported {reported!r}: {msg}"
            )
        return "rejected"
    except Exception as e:  # anything else is a bug of the validation
        raise AssertionError(f"{what}: {type(e).__name__} instead of a ConfigError: {e}") from e
    assert kind not in STRICT, f"{what}: accepted"
    try:
        plan(valid)
    except Exception as e:
        raise AssertionError(
            f"{what}: accepted, then planning failed: {type(e).__name__}: {e}"
        ) from e
    return "accepted"


@pytest.mark.parametrize("seed", SEEDS)
def test_malformed_configs_are_rejected_at_their_key_or_plan(seed):
    rng = random.Random(seed)
    outcomes = {"rejected": 0, "accepted": 0}
    failures = []
    for _ in range(CASES_PER_SEED):
        overlay = rng.choice(OVERLAYS)
        kind = rng.choice(STRICT + LOOSE)
        cfg, path, what = mutate(base_config(overlay), kind, rng)
        label = f"{what} (overlay {overlay.name if overlay else 'none'})"
        try:
            outcomes[check_case(cfg, kind, path, label)] += 1
        except AssertionError as e:
            failures.append(str(e))
    assert not failures, "\n".join(failures)
    assert outcomes["rejected"] >= CASES_PER_SEED // 2, outcomes  # the generator does mutate


@pytest.mark.parametrize("overlay", OVERLAYS, ids=lambda o: o.name if o else "config.yaml")
def test_shipped_configs_validate_and_plan(overlay):
    plan(validated(base_config(overlay), SCHEMA))


# what the fuzz test found accepted by the validation and failing in the attack job
FOUND = [
    ("aa-empty-list", {"attacks": {"aa_binary_l2": {"attacks": []}}}, "attacks.aa_binary_l2.attacks", "should be non-empty"),
    ("aa-custom-without-list", {"attacks": {"aa_x": {"kind": "autoattack", "version": "custom"}}}, "attacks.aa_x", "'attacks' is a required property"),
    ("aa-custom-null-list", {"attacks": {"aa_x": {"kind": "autoattack", "version": "custom", "attacks": None}}}, "attacks.aa_x.attacks", "None is not of type 'array'"),
    ("aa-standard-runs-fab", {"attacks": {"aa_x": {"kind": "autoattack", "attacks": ["apgd-ce", "fab"]}}}, "attacks.aa_x.attacks[1]", "'fab' is not one of"),
    # accepted silently (overrides: {type: object}) and dropped by the rung's merge
    ("scale-override-unknown", {"studies": {"price_nn": {"scale": {"overrides": {"cnn": {"zz_unknown": 1}}}}}}, "studies.price_nn.scale.overrides.cnn.zz_unknown", "unknown key"),
]  # fmt: skip


@pytest.mark.parametrize(("overlay", "key", "fragment"), bad_cases(FOUND))
def test_fuzz_findings_are_rejected(overlay, key, fragment):
    assert_rejected(merged(BASE, overlay), SCHEMA, key, fragment)
