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

**Groups.** An entry with ``claims`` is a group: its ``for_each`` / ``let`` / ``when`` bind
variables for every claim in it, expanded in the group's order within each environment (the
ledger's rows dataset by dataset, not claim by claim); ``restrict: {cell: {column: value},
keep: measure}`` computes its claims on one cell of the study (one trained net of several),
with the rows the MEASURES entry ``keep`` marks shared by every cell.

**Text.** Every string takes ``{variable}`` / ``{variable:spec}`` placeholders of the bound
variables (:mod:`ibrobust.claims.templates`; exactly ``"{variable}"`` is the value itself, a
number stays a number); a citation's quote takes only a whole ``"{variable}"`` (its other
braces are the source's LaTeX). No expressions: a number computed from the configuration is a ``CONTEXT``
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
from ibrobust.claims.core import Claim, StudyContext, restricted
from ibrobust.claims.fields import (
    NUMBER_OR_DIRECTION,
    TEXT_KEYS,
    ClaimFileError,
    ClaimFileFormError,
    FieldReader,
    Registry,
    file_name,
)

FILE = "claims.yaml"
TOP_KEYS = {"study", "vars", "defaults", "claims"}
CLAIM_KEYS = {
    "id", "form", "setting", "claim", "citation", "derivation", "paper", "measure", "rule",
    "compute", "sources", "applies", "not_applicable", "cost", "for_each", "let", "when",
    "cases", "note",
}  # fmt: skip
GROUP_KEYS = {"for_each", "let", "when", "restrict", "claims", "note"}


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
        raise ClaimFileError(f"{file_name(path)}: not valid YAML: {e}") from e
    if not isinstance(data, dict):
        raise ClaimFileError(f"{file_name(path)}: a mapping with keys {sorted(TOP_KEYS)} expected")
    unknown = set(data) - TOP_KEYS
    if unknown:
        raise ClaimFileError(f"{file_name(path)}: unknown top-level key(s) {sorted(unknown)}")
    if not isinstance(data.get("claims"), list):
        raise ClaimFileError(f"{file_name(path)}: key claims: a list of claims expected")
    return data


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
        raise ClaimFileError(
            f"{file_name(path)}: key study: {data.get('study')!r}, expected {kind!r}"
        )
    clash = sorted(set(constants or {}) & set(data.get("vars") or {}))
    if clash:
        raise ClaimFileError(f"{file_name(path)}: key vars: {clash} are the study's constants")
    reader = _Reader(path, ctx, measures, context or {},
                     {**(constants or {}), **(data.get("vars") or {})},
                     data.get("defaults") or {})  # fmt: skip
    out: list[Claim] = []
    for i, raw in enumerate(data["claims"]):
        if not isinstance(raw, dict):
            raise ClaimFileError(f"{file_name(path)}: claims[{i}]: a mapping expected")
        out += reader.entry(raw, f"claims[{i}] ({raw.get('id', 'group')})", reader.consts)
    ids = [c.id for c in out]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated and not _distinct_settings(out):
        raise ClaimFileError(
            f"{file_name(path)}: claim ids repeat with the same setting: {repeated}"
        )
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


class _Reader(FieldReader):
    def __init__(self, path: Path, ctx: StudyContext, measures: Registry, context: Registry,
                 consts: Mapping[str, Any], defaults: Mapping[str, Any]) -> None:  # fmt: skip
        super().__init__(path, measures)
        self.ctx, self.context = ctx, context
        self.consts, self.defaults = dict(consts), dict(defaults)

    def entry(self, raw: Mapping, where: str, base: Mapping) -> list[Claim]:
        """The claims of one entry of a ``claims`` list: a claim, or a group (``claims``)."""
        if not isinstance(raw, dict):
            raise self.fail(where, "claims", "a mapping expected")
        if "claims" in raw:
            return self.group(raw, where, base)
        entry = _merged(self.defaults, raw)
        unknown = set(entry) - CLAIM_KEYS
        if unknown:
            raise self.fail(
                where, ",".join(sorted(unknown)), f"unknown (known: {sorted(CLAIM_KEYS)})"
            )
        if "when" in entry and not self.call(entry["when"], base, where, "when"):
            return []
        out = []
        for env in self.environments(entry.get("for_each") or [], where, base):
            env = self.bind(entry.get("let") or {}, env, where)
            e = self.cased(entry, env, where)
            out.append(self.claim(e, env, f"{where} -> {self.text(e.get('id'), env, where, 'id')}"))
        return out

    def group(self, raw: Mapping, where: str, base: Mapping) -> list[Claim]:
        """A group: its claims expanded in order within each of its environments (so the rows
        keep the order dataset by dataset), each set restricted to a cell (``restrict``)."""
        unknown = set(raw) - GROUP_KEYS
        if unknown:
            raise self.fail(where, ",".join(sorted(unknown)), f"unknown in a group (known: "
                            f"{sorted(GROUP_KEYS)})")  # fmt: skip
        if not isinstance(raw["claims"], list):
            raise self.fail(where, "claims", "a list of claims expected")
        if "when" in raw and not self.call(raw["when"], base, where, "when"):
            return []
        out: list[Claim] = []
        for env in self.environments(raw.get("for_each") or [], where, base):
            env = self.bind(raw.get("let") or {}, env, where)
            inner: list[Claim] = []
            for j, sub in enumerate(raw["claims"]):
                name = sub.get("id", "group") if isinstance(sub, dict) else "?"
                inner += self.entry(sub, f"{where}.claims[{j}] ({name})", env)
            out += self.restrict(raw.get("restrict"), inner, env, where)
        return out

    def restrict(self, spec: Any, claims: list[Claim], env: Mapping, where: str) -> list[Claim]:
        """``restrict: {cell: {column: value}, keep: measure}``: the claims computed on the
        cell's rows plus those the MEASURES entry ``keep`` marks (rows every cell shares);
        the cell joins the setting (:func:`ibrobust.claims.core.restricted`). An empty cell
        (a study of one cell) leaves them as they are."""
        if spec is None:
            return claims
        if not isinstance(spec, dict) or set(spec) - {"cell", "keep"} or "cell" not in spec:
            raise self.fail(where, "restrict", f"a mapping {{cell, keep}} expected, got {spec!r}")
        cell = self.value(spec["cell"], env, where, "restrict.cell")
        if not isinstance(cell, dict):
            raise self.fail(
                where, "restrict.cell", f"a mapping column -> value expected, got {cell!r}"
            )
        if not cell:
            return claims
        keep = spec.get("keep")
        if keep is not None and keep not in self.measures:
            raise self.fail(where, "restrict.keep", f"unknown measure {keep!r}")
        return restricted(claims, cell, self.measures[keep] if keep else None)

    def environments(self, steps: Any, where: str, base: Mapping) -> list[dict]:
        if not isinstance(steps, list):
            raise self.fail(where, "for_each", "a list of {variable: values} steps expected")
        envs = [dict(base)]
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
            measure_call=self.call_text(e["compute"], env, where),
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
            raise ClaimFileFormError(
                f"{file_name(self.path)}: {where}: key rule/form: {err}"
            ) from err
        except ValueError as err:
            raise self.fail(where, "derivation", str(err)) from err

    def call_text(self, c: Mapping, env: Mapping, where: str) -> str:
        """The measure as the file calls it, its arguments filled: ``column(p=3.0, col=x)``."""
        args = self.value(c.get("args") or {}, env, where, "compute.args")
        text = f"{c['name']}({', '.join(f'{k}={v}' for k, v in args.items())})"
        along = (
            f" along {self.text(c['along'], env, where, 'compute.along')}" if "along" in c else ""
        )
        return text + along

    def condition(self, spec: Any, env: Mapping, where: str, key: str) -> Callable:
        fn, args = self.named(spec, env, where, key)
        return lambda ctx: fn(ctx, **args)
