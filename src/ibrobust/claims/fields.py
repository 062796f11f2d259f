"""Reading one claim's fields from a claim file (:mod:`ibrobust.claims.declared`): text with
its placeholders, numbers and [lo, hi] pairs, the citation, the rule and the measure, each
refused with a :class:`ClaimFileError` naming the file, the claim and the key."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ibrobust.claims import forms
from ibrobust.claims.citations import DOCUMENTS, Citation
from ibrobust.claims.rules import Rule, at_least, at_most, between
from ibrobust.claims.templates import TemplateError, fill, fill_text

CITATION_KEYS = {"document", "where", "quote", "scope"}
RULE_KEYS = {"family", "what", "strong", "weak", "strict", "basis"}
COMPUTE_KEYS = {"name", "args", "along"}
FAMILIES = {"at_least": at_least, "at_most": at_most, "between": between}
NUMBER_OR_DIRECTION = "number_or_direction"  # a form fixed by the rule (forms.number_or_direction)
VERBATIM = ("quote",)  # citation fields whose braces are the source's (LaTeX)
TEXT_KEYS = ("id", "setting", "claim", "derivation", "paper", "measure", "cost")


class ClaimFileError(ValueError):
    """A claim file that cannot be read into claims: names the file, the claim and the key."""


class ClaimFileFormError(ClaimFileError, forms.FormError):
    """A declared rule that does not fit the claim's form (a FormError, naming the file)."""


def file_name(path: Path | str) -> str:
    """The file as messages name it: from ``ibrobust/`` on (the package path)."""
    parts = Path(path).parts
    return "/".join(parts[parts.index("ibrobust") :]) if "ibrobust" in parts else str(path)


Registry = Mapping[str, Callable[..., Any]]  # a study's MEASURES (or CONTEXT): name -> function


class FieldReader:
    """The field readers of one claim file (``path``) and its study's measures."""

    def __init__(self, path: Path, measures: Registry) -> None:
        self.path, self.measures = path, measures

    def fail(self, where: str, key: str, what: str) -> ClaimFileError:
        return ClaimFileError(f"{file_name(self.path)}: {where}: key {key}: {what}")

    # ---- expansion ---------------------------------------------------------------------
    def text(self, v: Any, env: Mapping, where: str, key: str, verbatim: bool = False) -> str:
        if not isinstance(v, str):
            raise self.fail(where, key, f"a string expected, got {v!r}")
        try:
            return fill_text(v, env, verbatim)
        except TemplateError as e:
            raise self.fail(where, key, str(e)) from e

    def value(self, v: Any, env: Mapping, where: str, key: str) -> Any:
        """A value with its placeholders (:func:`ibrobust.claims.templates.fill`)."""
        try:
            return fill(v, env)
        except TemplateError as e:
            raise self.fail(where, key, str(e)) from e

    def number(self, v: Any, env: Mapping, where: str, key: str) -> float:
        got = self.value(v, env, where, key)
        if isinstance(got, bool) or not isinstance(got, (int, float)):
            raise self.fail(where, key, f"a number expected, got {got!r}")
        return float(got)

    def pair(self, v: Any, env: Mapping, where: str, key: str) -> tuple[float, float]:
        got = self.value(v, env, where, key)
        if not isinstance(got, (list, tuple)) or len(got) != 2:
            raise self.fail(where, key, f"[lo, hi] expected, got {got!r}")
        return (self.number(got[0], env, where, f"{key}[0]"),
                self.number(got[1], env, where, f"{key}[1]"))  # fmt: skip

    # ---- one claim ---------------------------------------------------------------------
    def citation(self, c: Any, env: Mapping, where: str) -> Citation:
        if not isinstance(c, dict):
            raise self.fail(where, "citation", "a mapping {document, where, quote, scope} expected")
        unknown, missing = set(c) - CITATION_KEYS, CITATION_KEYS - set(c)
        if unknown or missing:
            raise self.fail(
                where, "citation", f"unknown {sorted(unknown)} / missing {sorted(missing)}"
            )
        docs = {d.key: d for d in DOCUMENTS}
        key = self.text(c["document"], env, where, "citation.document")
        if key not in docs:
            raise self.fail(where, "citation.document", f"{key!r} is not one of {sorted(docs)}")
        parts = {k: self.text(c[k], env, where, f"citation.{k}", verbatim=k in VERBATIM)
                 for k in ("where", "quote", "scope")}  # fmt: skip
        try:
            return Citation(docs[key], **parts)
        except ValueError as err:
            raise self.fail(where, "citation", str(err)) from err

    def rule(self, r: Any, env: Mapping, where: str) -> Rule:
        if not isinstance(r, dict):
            raise self.fail(where, "rule", "a mapping {family, what, strong, weak, ...} expected")
        unknown = set(r) - RULE_KEYS
        missing = {"family", "what", "strong", "weak"} - set(r)
        if unknown or missing:
            raise self.fail(where, "rule", f"unknown {sorted(unknown)} / missing {sorted(missing)}")
        family = r["family"]
        if family not in FAMILIES:
            raise self.fail(where, "rule.family", f"{family!r} is not one of {sorted(FAMILIES)}")
        read = self.pair if family == "between" else self.number
        strict = self.value(r.get("strict", False), env, where, "rule.strict")
        if not isinstance(strict, bool):
            raise self.fail(where, "rule.strict", f"true or false expected, got {strict!r}")
        try:
            return FAMILIES[family](
                self.text(r["what"], env, where, "rule.what"),
                read(r["strong"], env, where, "rule.strong"),
                read(r["weak"], env, where, "rule.weak"),
                strict=strict,
                basis=self.text(r.get("basis", ""), env, where, "rule.basis"),
            )
        except ValueError as err:
            raise self.fail(where, "rule", str(err)) from err

    def compute(self, c: Any, env: Mapping, where: str) -> Callable:
        if not isinstance(c, dict) or "name" not in c or set(c) - COMPUTE_KEYS:
            raise self.fail(
                where, "compute", f"a mapping {{name, args, along}} expected, got {c!r}"
            )
        name = c["name"]
        if name not in self.measures:
            raise self.fail(where, "compute.name", f"unknown measure {name!r} (known: "
                            f"{sorted(self.measures)})")  # fmt: skip
        args = self.value(c.get("args") or {}, env, where, "compute.args")
        if not isinstance(args, dict):
            raise self.fail(where, "compute.args", f"a mapping expected, got {args!r}")
        try:
            fn = self.measures[name](**args)
        except TypeError as err:
            raise self.fail(where, "compute.args", f"measure {name}: {err}") from err
        if "along" in c:
            fn = forms.along(fn, self.text(c["along"], env, where, "compute.along"))
        return fn
