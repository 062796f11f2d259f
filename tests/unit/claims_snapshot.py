"""Every claim of every study, as plain data, on config.yaml and each overlay in configs/: the
fields a reader and the ledger see (id, form, setting, claim, citation, derivation, paper,
measure, rule, sources, cost, and the reasons ``applies`` / ``not_applicable`` give on the
config), for the snapshot that proves the claims' move from Python literals to claim files
(``claims.yaml``) lossless: ``tests/unit/fixtures/claims_snapshot.json`` was written by
``python tests/unit/claims_snapshot.py`` from the Python definitions before they were
deleted; tests/unit/test_claims_declared.py compares today's claims with it field by field.
A deliberate change of a claim (its rule, its text) rewrites the snapshot with the same
command, so the change shows in the fixture's diff too.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = Path(__file__).with_name("fixtures") / "claims_snapshot.json"


# variants of config.yaml that reach a branch no committed config does: name -> (study,
# key, value) set on the validated config
VARIANTS = {"config.yaml#fa_images_resnet18": ("fa_images", "models", ["resnet18"])}


def configs() -> list[str]:
    overlays = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "configs").glob("*.yaml"))
    return ["config.yaml", *overlays, *VARIANTS]


def _bound(v: float) -> float | str:
    return v if math.isfinite(v) else ("inf" if v > 0 else "-inf")


def record(c, ctx) -> dict:
    """One claim's fields as JSON-able data (its compute is a function: not comparable)."""
    r = c.rule
    return {
        "id": c.id,
        "form": c.form,
        "setting": c.setting,
        "claim": c.claim,
        "citation": {
            "document": c.citation.document.key,
            "where": c.citation.where,
            "quote": c.citation.quote,
            "scope": c.citation.scope,
        },
        "derivation": c.derivation,
        "paper": c.paper,
        "measure": c.measure,
        "rule": {
            "what": r.what,
            "strong": [_bound(b) for b in r.strong],
            "weak": [_bound(b) for b in r.weak],
            "strict": r.strict,
            "basis": r.basis,
        },
        "sources": list(c.sources),
        "cost": c.cost,
        "applies": c.applies(ctx) if c.applies else None,
        "not_applicable": c.not_applicable(ctx) if c.not_applicable else None,
    }


def declared(config: str) -> list[tuple[str, dict]]:
    """(study, record) of every claim of every study of ``config`` (an overlay merged on
    config.yaml), every study enabled, as test_claims_citations.py builds them."""
    sys.path.insert(0, str(ROOT / "tests" / "unit"))
    from config_helpers import merged

    from ibrobust.config import load_schema, validate_config
    from ibrobust.ledger.table import CLAIMS, study_outputs

    base = yaml.safe_load((ROOT / "config.yaml").read_text())
    name = config.split("#")[0]
    raw = base if name == "config.yaml" else merged(base, yaml.safe_load((ROOT / name).read_text()))
    cfg = validate_config(raw, load_schema(ROOT / "schemas" / "config.schema.yaml"))
    for st in cfg["studies"].values():
        st["enabled"] = True
    if config in VARIANTS:
        study, k, value = VARIANTS[config]
        cfg["studies"][study][k] = value
    return [
        (so.ctx.name, record(c, so.ctx))
        for so in study_outputs(cfg, "results")
        for c in CLAIMS[so.kind].claims(so.ctx)
    ]


def key(rec: dict) -> str:
    return hashlib.sha1(json.dumps(rec, sort_keys=True).encode()).hexdigest()[:12]


def snapshot() -> dict:
    """{"configs": {config: {study: [record key, ...]}}, "records": {key: record}}."""
    records: dict[str, dict] = {}
    out: dict[str, dict[str, list[str]]] = {}
    for config in configs():
        per: dict[str, list[str]] = {}
        for study, rec in declared(config):
            k = key(rec)
            records[k] = rec
            per.setdefault(study, []).append(k)
        out[config] = per
    return {"configs": out, "records": dict(sorted(records.items()))}


if __name__ == "__main__":
    SNAPSHOT.parent.mkdir(exist_ok=True)
    SNAPSHOT.write_text(json.dumps(snapshot(), indent=1, sort_keys=True) + "\n")
    print(SNAPSHOT)
