"""Claims declared as data (ibrobust.claims.declared): the claim files read into the same claims
as the Python definitions they replaced (field by field against the snapshot taken from those
definitions, tests/unit/claims_snapshot.py), the expansion and placeholders on hand-made
files, and a clear error naming the file, the claim and the key for every kind of bad input."""

from __future__ import annotations

import importlib
import json
import math
import textwrap
from pathlib import Path

import pytest
from claims_snapshot import ROOT, SNAPSHOT, configs, declared

from ibrobust.claims.core import BOUND, DIRECTION, Measurement, StudyContext
from ibrobust.claims.declared import ClaimFileError, ClaimFileFormError, load_claims, read
from ibrobust.claims.forms import FormError
from ibrobust.kinds import STUDIES

STUDIES_DIR = ROOT / "src" / "ibrobust" / "studies"
DECLARED = sorted(p.parent.name for p in STUDIES_DIR.glob("*/claims.yaml"))


@pytest.fixture(scope="module")
def snapshot() -> dict:
    return json.loads(SNAPSHOT.read_text())


def test_some_study_declares_its_claims_as_data():
    assert "feature_averaging_images" in DECLARED


@pytest.mark.parametrize("config", configs())
def test_claims_equal_the_snapshot_of_their_python_definitions(config, snapshot):
    """Every claim of every study of the config, in order, with every field the ledger shows
    (id, form, setting, texts, citation, rule bounds, sources, applies / not applicable)."""
    want = snapshot["configs"][config]
    got: dict[str, list[dict]] = {}
    for study, rec in declared(config):
        got.setdefault(study, []).append(rec)
    assert sorted(got) == sorted(want), config
    for study, keys in want.items():
        old = [snapshot["records"][k] for k in keys]
        assert [r["id"] for r in got[study]] == [r["id"] for r in old], (config, study)
        for a, b in zip(got[study], old, strict=True):
            for field in b:
                assert _same(a[field], b[field]), (config, study, b["id"], field)


def _same(a, b) -> bool:
    """Equal; numbers to 1e-12 relative (a bound the file writes as 0.411 that the Python
    computed as 4.11 / 10 = 0.41100000000000003)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)
    return a == b and type(a) is type(b)


def test_the_snapshot_covers_every_declared_study_and_both_rule_bases(snapshot):
    recs = snapshot["records"].values()
    prefixes = {r["id"].split(".")[0] for r in recs}
    assert {"fa_images", "prelu", "price", "price_nn", "margin", "fa"} <= prefixes
    images = [r for r in recs if r["id"].startswith("fa_images.")]
    assert {r["form"] for r in images} == {BOUND, DIRECTION}  # ResNet-18 and a small CNN


@pytest.mark.parametrize("kind", DECLARED)
def test_each_claim_file_names_its_study_and_only_known_measures(kind):
    module = STUDIES.module_name(kind)
    data = read(STUDIES_DIR / kind / "claims.yaml")
    assert data["study"] == kind

    measures = importlib.import_module(f"{module}.claims")  # the registries the file reads
    used = set(_named_measures(data["claims"]))
    assert used <= set(measures.MEASURES)
    assert set(measures.MEASURES) <= used, "a registered measure no claim names"


def _named_measures(node):
    """Every measure a claim file names (compute.name, a group's restrict.keep), at any depth."""
    if isinstance(node, list):
        for x in node:
            yield from _named_measures(x)
    elif isinstance(node, dict):
        if isinstance(node.get("compute"), dict) and "name" in node["compute"]:
            yield node["compute"]["name"]
        if isinstance(node.get("restrict"), dict) and node["restrict"].get("keep"):
            yield node["restrict"]["keep"]
        for v in node.values():
            yield from _named_measures(v)


# ---- the format on hand-made files -------------------------------------------------------


def _ctx(**config) -> StudyContext:
    return StudyContext("demo", {"k": 4, **config})


def _const(value):
    return lambda src, ctx: Measurement((value, value + 0.1))


MEASURES = {"const": _const}
CONTEXT = {
    "ks": lambda ctx: [1, 2],
    "half_root_2k": lambda ctx: round(math.sqrt(2 * ctx.config["k"]) / 2, 3),
    "has_extra": lambda ctx: bool(ctx.config.get("extra")),
    "missing_part": lambda ctx, part: None if ctx.config.get(part) else f"no {part}",
}
CLAIM = """
  - id: demo.c{p:g}
    form: bound
    setting: "K={k}, p={p:g}"
    claim: A claim.
    citation: {document: Min & Vidal 2024, where: "Thm {k}", quote: "$\\\\sqrt{k}$ q", scope: s}
    derivation: Because.
    paper: "{p:.2f}"
    measure: m
    rule: {family: between, what: x, strong: [0.9, 1.1], weak: [0.0, "{top}"]}
    compute: {name: const, args: {value: "{p}"}}
    for_each: [{p: [1.0, 3.0]}]
    let: {top: half_root_2k}
"""


def _write(tmp_path: Path, body: str, name: str = "claims.yaml") -> Path:
    path = tmp_path / name
    path.write_text("study: demo\nvars: {k: 4}\nclaims:\n" + textwrap.dedent(body))
    read.cache_clear()
    return path


def test_expansion_placeholders_and_named_bounds(tmp_path):
    cs = load_claims(_write(tmp_path, CLAIM), _ctx(), MEASURES, CONTEXT, "demo")
    assert [c.id for c in cs] == ["demo.c1", "demo.c3"]
    assert cs[1].setting == "K=4, p=3"
    assert cs[1].paper == "3.00"
    assert cs[0].rule.weak == (0.0, round(math.sqrt(8) / 2, 3)) == (0.0, 1.414)
    assert cs[1].compute({}, _ctx()).values == (3.0, 3.1)  # "{p}" passes the number itself
    # a quote is verbatim: its braces are the source's LaTeX, even where they name a variable
    assert cs[0].citation.where == "Thm 4" and cs[0].citation.quote == "$\\sqrt{k}$ q"


def test_mapping_items_bind_variables_and_cases_override_keys(tmp_path):
    body = """
      - id: demo.{name}
        form: number_or_direction
        claim: c
        citation: {document: Min & Vidal 2024, where: w, quote: q, scope: s}
        derivation: d {name}
        paper: p
        measure: m
        rule: {family: at_least, what: x, strong: "{strong}", weak: 0.0, strict: true}
        compute: {name: const, args: {value: 1.0}}
        for_each: [{cell: [{name: a, strong: 0.2, kind: num}, {name: b, strong: 0.0, kind: dir}]}]
        cases:
          by: kind
          num: {derivation: "number {strong}"}
          dir: {rule: {strong: 0.0}, derivation: "direction"}
        applies: {fn: missing_part, args: {part: extra}}
    """
    cs = load_claims(_write(tmp_path, body), _ctx(), MEASURES, CONTEXT)
    assert [(c.id, c.form, c.rule.strong[0]) for c in cs] == [
        ("demo.a", BOUND, 0.2), ("demo.b", DIRECTION, 0.0)
    ]  # fmt: skip
    assert [c.derivation for c in cs] == ["number 0.2", "direction"]
    assert cs[0].applies(_ctx()) == "no extra" and cs[0].applies(_ctx(extra=1)) is None


def test_when_declares_a_claim_only_where_its_part_is_configured(tmp_path):
    path = _write(tmp_path, CLAIM.replace("    let:", "    when: has_extra\n    let:"))
    assert load_claims(path, _ctx(), MEASURES, CONTEXT) == []
    assert len(load_claims(path, _ctx(extra=True), MEASURES, CONTEXT)) == 2


@pytest.mark.parametrize(
    "old, new, message",
    [
        ("    measure: m\n", "    measure: m\n    colour: red\n", "key colour: unknown"),
        ("name: const", "name: konst", "key compute.name: unknown measure 'konst'"),
        ('args: {value: "{p}"}', 'args: {valu: "{p}"}', "key compute.args: measure const"),
        ("strong: [0.9, 1.1]", "strong: [0.9, high]", "key rule.strong[1]: a number expected"),
        ("strong: [0.9, 1.1]", "strong: 0.9", "key rule.strong: [lo, hi] expected"),
        ("family: between", "family: around", "key rule.family: 'around' is not one of"),
        ("{p:.2f}", "{q:.2f}", "key paper: {q} is not a bound variable"),
        ("half_root_2k", "root_k", "key let.top: unknown function 'root_k'"),
        ("Min & Vidal 2024", "Min 2024", "key citation.document: 'Min 2024'"),
        ("    derivation: Because.\n", "", "key derivation: missing"),
        ("[{p: [1.0, 3.0]}]", "{p: [1.0, 3.0]}", "key for_each: a list"),
    ],
)
def test_bad_input_names_the_file_the_claim_and_the_key(tmp_path, old, new, message):
    assert old in CLAIM
    path = _write(tmp_path, CLAIM.replace(old, new))
    with pytest.raises(ClaimFileError) as e:
        load_claims(path, _ctx(), MEASURES, CONTEXT)
    text = str(e.value)
    assert text.startswith(str(path)) or "claims.yaml" in text
    assert "demo.c" in text or "claims[0]" in text
    assert message in text


def test_a_rule_that_misfits_its_form_is_a_form_error_naming_the_file(tmp_path):
    path = _write(tmp_path, CLAIM.replace("form: bound", "form: direction"))
    with pytest.raises(ClaimFileFormError) as e:
        load_claims(path, _ctx(), MEASURES, CONTEXT)
    assert isinstance(e.value, FormError)
    assert "claims.yaml" in str(e.value) and "demo.c1" in str(e.value)
    assert "a direction (P5)" in str(e.value)


def test_the_file_names_its_study(tmp_path):
    with pytest.raises(ClaimFileError, match="key study: 'demo', expected 'prelu'"):
        load_claims(_write(tmp_path, CLAIM), _ctx(), MEASURES, CONTEXT, "prelu")


def test_an_unknown_top_level_key_is_refused(tmp_path):
    path = tmp_path / "claims.yaml"
    path.write_text("study: demo\nclaim: []\nclaims: []\n")
    read.cache_clear()
    with pytest.raises(ClaimFileError, match=r"unknown top-level key\(s\) \['claim'\]"):
        load_claims(path, _ctx(), MEASURES, CONTEXT)


@pytest.mark.parametrize("kind", DECLARED)
def test_the_ledger_code_hash_covers_the_claim_file(kind):
    """Editing a claim file reruns the ledger: claims.yaml is the claims module's data file
    (ibrobust.provenance.data_of), in the closure the claims rules hash."""
    from ibrobust.provenance import module_closure

    closure = module_closure(ROOT / "workflow_scripts" / "claims_ledger.py",
                             (f"{STUDIES.module_name(kind)}.claims",))  # fmt: skip
    assert (STUDIES_DIR / kind / "claims.yaml").resolve() in closure
    assert (STUDIES_DIR / kind / "measures.py").resolve() in closure


def test_a_group_expands_its_claims_in_order_and_restricts_them_to_a_cell(tmp_path):
    """Claims of a group come environment by environment (m1's two, then m2's); restricted
    to a cell, a claim computes on that cell's rows plus the shared ones, and the cell joins
    its setting."""
    import pandas as pd

    body = """
      - for_each: [{cell: [{model: m1}, {model: m2}]}]
        restrict: {cell: "{cell}", keep: shared}
        claims:
          - id: demo.{which}
            for_each: [{which: [first, second]}]
            form: bound
            claim: c
            citation: {document: Min & Vidal 2024, where: w, quote: q, scope: s}
            derivation: d
            paper: p
            measure: m
            setting: "K={k}"
            rule: {family: at_least, what: rows, strong: 2.0, weak: 1.0}
            compute: {name: rows}
    """
    measures = {
        "rows": lambda: lambda src, ctx: Measurement((float(len(src["summary"])),) * 2),
        "shared": lambda df: df["model"] == "ref",
    }
    cs = load_claims(_write(tmp_path, body), _ctx(), measures, CONTEXT)
    assert [(c.id, c.setting) for c in cs] == [
        ("demo.first", "K=4, m1"), ("demo.second", "K=4, m1"),
        ("demo.first", "K=4, m2"), ("demo.second", "K=4, m2"),
    ]  # fmt: skip
    summary = pd.DataFrame({"model": ["m1", "m1", "m2", "ref"]})
    assert cs[0].compute({"summary": summary}, _ctx()).values == (3.0, 3.0)  # m1's two + ref
    assert cs[2].compute({"summary": summary}, _ctx()).values == (2.0, 2.0)  # m2's one + ref


def test_an_empty_cell_leaves_the_claims_unrestricted(tmp_path):
    inner = textwrap.indent(textwrap.dedent(CLAIM).strip("\n"), "      ")
    body = '  - for_each: [{cell: [{}]}]\n    restrict: {cell: "{cell}"}\n    claims:\n' + inner
    cs = load_claims(_write(tmp_path, body), _ctx(), MEASURES, CONTEXT)
    assert [c.setting for c in cs] == ["K=4, p=1", "K=4, p=3"]
