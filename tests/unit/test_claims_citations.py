"""Every claim quotes its source: on the repository's config.yaml (every study enabled) and
on each overlay in configs/, every claim of every study kind carries a
:class:`~ibrobust.claims.citations.Citation` of one of the published documents, a place in
it, a quote, a scope and the derivation of its rule, none pointing at a file a clone of the
repository lacks; a number read off a figure is marked as such, never passed off as a quote;
a claim without a citation or a derivation cannot be built."""

from __future__ import annotations

import dataclasses
import functools
import re
from pathlib import Path

import pytest
import yaml
from claims_fixtures import ROOT
from config_helpers import merged
from test_self_contained import ABSOLUTE, OUTSIDE_DOCS, tracked_files

from ibrobust.claims.citations import DOCUMENTS, FIGURE_READING, LI_2025, Citation, Document
from ibrobust.claims.core import Claim, Measurement, at_least
from ibrobust.config import load_schema, validate_config
from ibrobust.ledger.table import CLAIMS, study_outputs

CONFIGS = ["config.yaml", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "configs").glob("*.yaml"))]  # fmt: skip
# the workspace around a checkout, not the repository (spelled as test_self_contained.py does)
FORBIDDEN = ("seeds/", "shared/", ABSOLUTE, *OUTSIDE_DOCS)
MD_PATH = re.compile(r"[\w./-]+\.md\b")


@functools.cache
def _claims(config: str) -> list[tuple[str, Claim]]:
    """(study, claim) of every study of ``config`` (an overlay merged on config.yaml as
    Snakemake's --configfile merges it), every study enabled."""
    base = yaml.safe_load((ROOT / "config.yaml").read_text())
    raw = (
        base
        if config == "config.yaml"
        else merged(base, yaml.safe_load((ROOT / config).read_text()))
    )
    cfg = validate_config(raw, load_schema(ROOT / "schemas" / "config.schema.yaml"))
    for st in cfg["studies"].values():
        st["enabled"] = True
    return [
        (so.ctx.name, c)
        for so in study_outputs(cfg, "results")
        for c in CLAIMS[so.kind].claims(so.ctx)
    ]


def verbatim(c: Citation) -> bool:
    """A quote is verbatim unless it is marked as a figure's reading."""
    return not c.quote.startswith(FIGURE_READING)


@pytest.mark.parametrize("config", CONFIGS)
def test_every_claim_cites_a_published_document(config):
    claims = _claims(config)
    assert claims, config
    for study, c in claims:
        where = f"{config}: {study} {c.id} ({c.setting})"
        cit = c.citation
        assert isinstance(cit, Citation), where
        assert cit.document in DOCUMENTS, where
        for field in ("where", "quote", "scope"):
            assert str(getattr(cit, field)).strip(), f"{where}: empty {field}"
        assert c.derivation.strip(), f"{where}: no derivation"
        assert c.paper.strip() and c.measure.strip(), where
        # a figure's reading is a prefix, never text inside a quote
        assert FIGURE_READING not in cit.quote[len(FIGURE_READING) :], where
        if not verbatim(cit):
            assert cit.quote[len(FIGURE_READING) :].strip(), f"{where}: a reading says how"


@pytest.mark.parametrize("config", CONFIGS)
def test_no_citation_points_at_a_file_a_clone_lacks(config):
    tracked = set(tracked_files())
    for study, c in _claims(config):
        where = f"{config}: {study} {c.id}"
        cit = c.citation
        for name, text in (("quote", cit.quote), ("where", cit.where), ("scope", cit.scope),
                           ("derivation", c.derivation), ("paper", c.paper),
                           ("measure", c.measure)):  # fmt: skip
            for bad in FORBIDDEN:
                assert bad not in text, f"{where}: {name} points at {bad!r}: {text!r}"
            for path in MD_PATH.findall(text):
                assert path in tracked, f"{where}: {name} cites {path}, not in the repository"


def test_the_documents_are_references_a_reader_finds():
    keys = [d.key for d in DOCUMENTS]
    assert len(set(keys)) == len(keys) == 4
    for d in DOCUMENTS:
        assert re.search(r"\b(19|20)\d\d\b", d.key), d  # author and year
        assert len(d.reference) > len(d.key) and "arXiv:" in d.reference, d
        for bad in (*FORBIDDEN, ".md"):
            assert bad not in d.reference, d
    used = {c.citation.document for config in CONFIGS for _, c in _claims(config)}
    assert used == set(DOCUMENTS)  # every document is cited by some claim


def test_a_rule_read_off_a_figure_marks_the_papers_number_as_a_reading():
    """Where the derivation reads a figure ('the figure within its reading'), the paper's
    number is given as [figure reading] ..., not as if the text said it."""
    readings = 0
    for _, c in _claims("config.yaml"):
        if "the figure within its reading" in c.derivation:
            readings += 1
            assert c.paper.startswith(FIGURE_READING) or FIGURE_READING in c.derivation, c.id
    assert readings >= 3  # fa.binary_radius, fa.cosine_blocks, fa.kclass (argmax), fa_images


def test_a_figure_reading_is_not_counted_as_verbatim():
    read = Citation(LI_2025, "Fig. 2", f"{FIGURE_READING} ~0.80 at radius 1.2 (read off the axis)",
                    "ResNet-18")  # fmt: skip
    quoted = Citation(
        LI_2025, "slides", "Blue: binary classifier trained by 10-classification task.", "x"
    )
    assert not verbatim(read) and verbatim(quoted)
    assert read.short == "Li et al. 2025, Fig. 2"
    quotes = [c.citation for config in CONFIGS for _, c in _claims(config)]
    assert sum(map(verbatim, quotes)) == len(quotes)  # today every claim quotes its source


def _claim(**kw) -> Claim:
    base = dict(
        id="x.y", claim="a claim", citation=Citation(LI_2025, "Sec. 1", "a quote", "a scope"),
        derivation="strong = weak (P5)", paper="p", measure="m", rule=at_least("x", 0.0, 0.0),
        compute=lambda src, ctx: Measurement((1.0,)), form="direction",
    )  # fmt: skip
    base.update(kw)
    return Claim(**base)


def test_a_claim_without_citation_or_derivation_cannot_be_built():
    assert _claim().citation.short == "Li et al. 2025, Sec. 1"
    fields = {f.name: f for f in dataclasses.fields(Claim)}
    for name in ("citation", "derivation", "form"):
        assert fields[name].default is dataclasses.MISSING, name  # required, no default
        kw = {k: v for k, v in vars(_claim()).items() if k != name}
        with pytest.raises(TypeError, match=name):
            Claim(**kw)
    for empty in ("", "   \n"):
        with pytest.raises(ValueError, match="derivation"):
            _claim(derivation=empty)
    for field in ("where", "quote", "scope"):
        kw = dict(where="Sec. 1", quote="q", scope="s") | {field: " "}
        with pytest.raises(ValueError, match=f"non-empty '{field}'"):
            Citation(LI_2025, **kw)
    # a citation of a document outside DOCUMENTS builds; the test above refuses its claim
    other = Citation(Document("Someone 2023", "A. Someone. A paper."), "Sec. 1", "q", "s")
    assert _claim(citation=other).citation.document not in DOCUMENTS


def test_each_claim_is_declared_once_per_setting():
    for config in CONFIGS:
        seen = {}
        for study, c in _claims(config):
            key = (study, c.id, c.setting)
            assert key not in seen, f"{config}: {key} declared twice"
            seen[key] = c


def test_the_citation_module_says_where_its_test_is():
    import ibrobust.claims.citations as citations

    assert Path(__file__).name in citations.__doc__
