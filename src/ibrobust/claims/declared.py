"""Claims declared as data: a study's ``claims.yaml`` read into :class:`~ibrobust.claims.core.Claim` s.

A study kind's claims are one YAML file beside its code (``ibrobust/studies/<kind>/claims.yaml``),
read by a referee without Python: per claim its id, the citation (document key, place, quote,
scope), the form, the setting, the claim in one sentence, the derivation of the rule, the
paper's number, our measure in words, the rule (family, quantity, strong and weak bounds) and
the *name* of the measure that computes our number with its arguments. Its pre-registration is
the commit of that file (:mod:`ibrobust.ledger.prereg`). The measures are named, tested
functions of the study (its ``MEASURES`` registry, name -> factory of a ``compute``); what a
claim reads from the configuration (the study's K, its readouts, the paper tasks it runs) are
named functions of the study context (its ``CONTEXT`` registry). :func:`load_claims` resolves
both and refuses, before any compute, an unknown key, measure or function, a value of the
wrong type, and a rule that does not fit the form, naming the file, the claim and the key.

The file has ``study`` (the kind, checked), ``vars`` (constants every text may use),
``defaults`` (keys every claim has unless it sets them; a mapping such as the citation is
merged key by key) and ``claims``; docs/studies/README.md ("Claim files") shows one claim.

**Expansion.** A claim that stands for several (one per p, per Table-1 column, per dataset
and radius) declares ``for_each``: a list of steps, nested in order, each ``{variable:
values}`` where ``values`` is a literal list or the name of a ``CONTEXT`` function returning
one (called with the context and the variables bound so far). An item that is a mapping
binds each of its keys as a variable (and the step's variable to the whole item's ``name``
key if it has one). ``let: {variable: function}`` (or ``{fn: name, args: {...}}``) binds one
value of a ``CONTEXT`` function; ``when: function`` declares the claim only where that
function is true (a study part that is configured). ``cases: {by: variable, <value>:
{key: value, ...}}`` overrides keys by a variable's value (a mapping such as the rule key
by key; e.g. the derivation where the source's number applies vs where only its direction
does).

**Text.** Every string takes ``{variable}`` / ``{variable:spec}`` placeholders of the bound
variables (:mod:`ibrobust.claims.templates`; exactly ``"{variable}"`` is the value itself, a
number stays a number); a citation's quote and place keep braces that name no variable (the
source's LaTeX). No expressions: a number computed from the configuration is a ``CONTEXT``
function, named and tested.

**Rule.** ``family`` is ``at_least`` / ``at_most`` (``strong``, ``weak``: numbers) or
``between`` (``strong``, ``weak``: [lo, hi]); ``what`` names the quantity; ``strict`` and
``basis`` as :class:`~ibrobust.claims.rules.Rule`. ``compute: {name, args, along}``: the
``MEASURES`` factory called with ``args``; ``along`` marks its measurement as a trend along
that variable (:func:`ibrobust.claims.forms.along`). ``applies`` / ``not_applicable``: the
name of a ``CONTEXT`` function returning None or the reason (or ``{fn, args}``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from ibrobust.claims import forms
from ibrobust.claims.citations import DOCUMENTS, Citation
from ibrobust.claims.core import Claim, StudyContext
from ibrobust.claims.rules import Rule, at_least, at_most, between
from ibrobust.claims.templates import TemplateError, fill, fill_text

FILE = "claims.yaml"
TOP_KEYS = {"study", "vars", "defaults", "claims"}
CLAIM_KEYS = {
    "id", "form", "setting", "claim", "citation", "derivation", "paper", "measure", "rule",
    "compute", "sources", "applies", "not_applicable", "cost", "for_each", "let", "when",
    "cases", "note",
}  # fmt: skip
CITATION_KEYS = {"document", "where", "quote", "scope"}
RULE_KEYS = {"family", "what", "strong", "weak", "strict", "basis"}
COMPUTE_KEYS = {"name", "args", "along"}
FAMILIES = {"at_least": at_least, "at_most": at_most, "between": between}
NUMBER_OR_DIRECTION = "number_or_direction"  # a form fixed by the rule (forms.number_or_direction)
VERBATIM = ("quote", "where")  # citation fields whose braces are the source's (LaTeX)
TEXT_KEYS = ("id", "setting", "claim", "derivation", "paper", "measure", "cost")


class ClaimFileError(ValueError):
    """A claim file that cannot be read into claims: names the file, the claim and the key."""


class ClaimFileFormError(ClaimFileError, forms.FormError):
    """A declared rule that does not fit the claim's form (a FormError, naming the file)."""


Registry = Mapping[str, Callable[..., Any]]


def fixed(compute: Callable) -> Callable[[], Callable]:
    """A measure that takes no arguments (a ``compute`` itself), as a MEASURES entry."""
    return lambda: compute


def claims_file(package_file: str | Path) -> Path:
    """The claim file beside a study package's module (``__file__`` of its claims module)."""
    return Path(package_file).with_name(FILE)


@cache
def read(path: Path) -> dict:
    """The parsed claim file (cached: the file is read once per process)."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise ClaimFileError(f"{_name(path)}: not valid YAML: {e}") from e
    if not isinstance(data, dict):
        raise ClaimFileError(f"{_name(path)}: a mapping with keys {sorted(TOP_KEYS)} expected")
    unknown = set(data) - TOP_KEYS
    if unknown:
        raise ClaimFileError(f"{_name(path)}: unknown top-level key(s) {sorted(unknown)}")
    if not isinstance(data.get("claims"), list):
        raise ClaimFileError(f"{_name(path)}: key claims: a list of claims expected")
    return data


def _name(path: Path | str) -> str:
    """The file as messages name it: from ``ibrobust/`` on (the package path)."""
    parts = Path(path).parts
    return "/".join(parts[parts.index("ibrobust") :]) if "ibrobust" in parts else str(path)


def load_claims(
    path: str | Path,
    ctx: StudyContext,
    measures: Registry,
    context: Registry | None = None,
    kind: str | None = None,
    constants: Mapping[str, Any] | None = None,
) -> list[Claim]:
    """Every claim the file at ``path`` declares for the study ``ctx``, expanded, in the
    file's order; ``measures`` and ``context`` are the study's registries (module docstring),
    ``constants`` the study's named numbers its texts may show (e.g. a grid cell its measures
    read), bound like the file's ``vars``.
    ClaimFileError (ClaimFileFormError for a rule that misfits its form) names the file, the
    claim and the key."""
    path = Path(path)
    data = read(path)
    if kind is not None and data.get("study") != kind:
        raise ClaimFileError(f"{_name(path)}: key study: {data.get('study')!r}, expected {kind!r}")
    clash = sorted(set(constants or {}) & set(data.get("vars") or {}))
    if clash:
        raise ClaimFileError(f"{_name(path)}: key vars: {clash} are the study's constants")
    reader = _Reader(path, ctx, measures, context or {},
                     {**(constants or {}), **(data.get("vars") or {})})  # fmt: skip
    defaults = data.get("defaults") or {}
    out: list[Claim] = []
    for i, raw in enumerate(data["claims"]):
        if not isinstance(raw, dict):
            raise ClaimFileError(f"{_name(path)}: claims[{i}]: a mapping expected")
        entry = _merged(defaults, raw)
        out += reader.claims(entry, f"claims[{i}] ({raw.get('id', '?')})")
    ids = [c.id for c in out]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated and not _distinct_settings(out):
        raise ClaimFileError(f"{_name(path)}: claim ids repeat with the same setting: {repeated}")
    return out


def _distinct_settings(claims: Sequence[Claim]) -> bool:
    keys = [(c.id, c.setting) for c in claims]
    return len(set(keys)) == len(keys)


def _merged(defaults: Mapping, raw: Mapping) -> dict:
    out = copy.deepcopy(dict(defaults))
    for k, v in raw.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict) and k != "cases":
            out[k] = {**out[k], **v}
        else:
            out[k] = v
    return out


class _Reader:
    def __init__(self, path: Path, ctx: StudyContext, measures: Registry, context: Registry,
                 consts: Mapping[str, Any]) -> None:  # fmt: skip
        self.path, self.ctx, self.measures, self.context = path, ctx, measures, context
        self.consts = dict(consts)

    def fail(self, where: str, key: str, what: str) -> ClaimFileError:
        return ClaimFileError(f"{_name(self.path)}: {where}: key {key}: {what}")

    # ---- expansion ---------------------------------------------------------------------
    def claims(self, entry: Mapping, where: str) -> list[Claim]:
        unknown = set(entry) - CLAIM_KEYS
        if unknown:
            raise self.fail(
                where, ",".join(sorted(unknown)), f"unknown (known: {sorted(CLAIM_KEYS)})"
            )
        if "when" in entry and not self.call(entry["when"], dict(self.consts), where, "when"):
            return []
        out = []
        for env in self.environments(entry.get("for_each") or [], where):
            env = self.bind(entry.get("let") or {}, env, where)
            e = self.cased(entry, env, where)
            out.append(self.claim(e, env, f"{where} -> {self.text(e.get('id'), env, where, 'id')}"))
        return out

    def environments(self, steps: Any, where: str) -> list[dict]:
        if not isinstance(steps, list):
            raise self.fail(where, "for_each", "a list of {variable: values} steps expected")
        envs = [dict(self.consts)]
        for j, step in enumerate(steps):
            if not isinstance(step, dict) or len(step) != 1:
                raise self.fail(where, f"for_each[{j}]", "one {variable: values} mapping expected")
            ((var, values),) = step.items()
            nxt = []
            for env in envs:
                items = values if isinstance(values, list) else self.call(values, env, where,
                                                                          f"for_each[{j}].{var}")  # fmt: skip
                if not isinstance(items, (list, tuple)):
                    raise self.fail(
                        where, f"for_each[{j}].{var}", f"a list expected, got {items!r}"
                    )
                for item in items:
                    if isinstance(item, Mapping):
                        nxt.append({**env, **item, var: item.get("name", dict(item))})
                    else:
                        nxt.append({**env, var: item})
            envs = nxt
        return envs

    def bind(self, let: Any, env: dict, where: str) -> dict:
        if not isinstance(let, dict):
            raise self.fail(where, "let", "a mapping {variable: function} expected")
        env = dict(env)
        for var, spec in let.items():
            env[var] = self.call(spec, env, where, f"let.{var}")
        return env

    def cased(self, entry: Mapping, env: Mapping, where: str) -> dict:
        e = {k: v for k, v in entry.items() if k not in ("for_each", "let", "when", "cases")}
        cases = entry.get("cases")
        if cases is None:
            return e
        if not isinstance(cases, dict) or "by" not in cases:
            raise self.fail(
                where, "cases", "a mapping {by: variable, <value>: {key: value}} expected"
            )
        by = cases["by"]
        if by not in env:
            raise self.fail(where, "cases.by", f"{by!r} is not a bound variable")
        value = env[by]
        if value not in cases:
            raise self.fail(where, "cases", f"no case for {by} = {value!r} (cases: "
                            f"{sorted(str(k) for k in cases if k != 'by')})")  # fmt: skip
        over = cases[value]
        unknown = set(over) - CLAIM_KEYS
        if unknown:
            raise self.fail(where, f"cases.{value}", f"unknown key(s) {sorted(unknown)}")
        return _merged(e, over)

    def named(self, spec: Any, env: Mapping, where: str, key: str) -> tuple[Callable, dict]:
        """The CONTEXT function ``spec`` names (a name, or {fn, args}) and its filled args."""
        if isinstance(spec, str):
            name, args = spec, {}
        elif isinstance(spec, dict) and "fn" in spec and set(spec) <= {"fn", "args"}:
            name, args = spec["fn"], spec.get("args") or {}
        else:
            raise self.fail(where, key, f"a function name or {{fn, args}} expected, got {spec!r}")
        if name not in self.context:
            raise self.fail(
                where, key, f"unknown function {name!r} (known: {sorted(self.context)})"
            )
        return self.context[name], self.value(args, env, where, f"{key}.args")

    def call(self, spec: Any, env: Mapping, where: str, key: str) -> Any:
        fn, args = self.named(spec, env, where, key)
        return fn(self.ctx, **args)

    # ---- values ------------------------------------------------------------------------
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
    def claim(self, e: Mapping, env: Mapping, where: str) -> Claim:
        for key in ("id", "claim", "citation", "derivation", "paper", "measure", "rule",
                    "compute", "form"):  # fmt: skip
            if key not in e:
                raise self.fail(where, key, "missing")
        t = {k: self.text(e[k], env, where, k) for k in TEXT_KEYS if k in e}
        rule = self.rule(e["rule"], env, where)
        form = self.text(e["form"], env, where, "form")
        if form == NUMBER_OR_DIRECTION:
            form = forms.number_or_direction(rule)
        fields = dict(
            id=t["id"], claim=t["claim"], citation=self.citation(e["citation"], env, where),
            derivation=t["derivation"], paper=t["paper"], measure=t["measure"], rule=rule,
            compute=self.compute(e["compute"], env, where), form=form,
            setting=t.get("setting", ""), cost=t.get("cost", ""),
        )  # fmt: skip
        if "sources" in e:
            src = self.value(e["sources"], env, where, "sources")
            if not isinstance(src, list) or not all(isinstance(s, str) for s in src):
                raise self.fail(where, "sources", f"a list of source names expected, got {src!r}")
            fields["sources"] = tuple(src)
        for key in ("applies", "not_applicable"):
            if e.get(key) is not None:
                fields[key] = self.condition(e[key], env, where, key)
        try:
            return Claim(**fields)
        except forms.FormError as err:
            raise ClaimFileFormError(f"{_name(self.path)}: {where}: key rule/form: {err}") from err
        except ValueError as err:
            raise self.fail(where, "derivation", str(err)) from err

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

    def condition(self, spec: Any, env: Mapping, where: str, key: str) -> Callable:
        fn, args = self.named(spec, env, where, key)
        return lambda ctx: fn(ctx, **args)
