"""The placeholders of a claim file's text (:mod:`ibrobust.claims.declared`): ``{name}`` and
``{name:spec}`` (Python's format spec, e.g. ``{eps:g}``, ``{gap:+.3f}``) of the variables a
claim's expansion binds. A string that is exactly ``{name}`` is the variable's value itself
(a number stays a number: a rule's bound, a measure's argument). Braces that name no bound
variable are an error (a typo is not left in a ledger). Verbatim text (a quote: the source's
LaTeX, e.g. ``\\sqrt{d}``) takes only a whole ``{name}``; any other brace in it stays as
written. No expressions: ``{a[0]}``, ``{a.b}`` or
``{a + 1}`` are not placeholders. Pure functions."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

PLACEHOLDER = re.compile(r"\{([A-Za-z_]\w*)(?::([^{}]*))?\}")


class TemplateError(ValueError):
    """A placeholder that names no bound variable, or whose format spec does not fit it."""


def _whole(v: str) -> str | None:
    """The variable a string consists of (``"{x}"``, no spec), else None."""
    m = PLACEHOLDER.fullmatch(v)
    return m.group(1) if m and m.group(2) is None else None


def fill_text(v: str, env: Mapping[str, Any], verbatim: bool = False) -> str:
    """``v`` with every placeholder replaced by its variable, formatted (a string)."""
    name = _whole(v)
    if name is not None and name in env:
        if not isinstance(env[name], str):
            raise TemplateError(f"a string expected, {v} is {env[name]!r}")
        return env[name]
    if verbatim:
        return v

    def sub(m: re.Match) -> str:
        name, spec = m.group(1), m.group(2)
        if name not in env:
            raise TemplateError(f"{{{name}}} is not a bound variable (bound: {sorted(env)})")
        try:
            return format(env[name], spec or "")
        except (ValueError, TypeError) as e:
            raise TemplateError(f"{m.group(0)}: {e}") from e

    return PLACEHOLDER.sub(sub, v)


def fill(v: Any, env: Mapping[str, Any]) -> Any:
    """A value with its placeholders filled: ``"{x}"`` is x itself, any other string is
    :func:`fill_text`'s, lists and mappings element by element, anything else as it is."""
    if isinstance(v, str):
        name = _whole(v)
        if name is None:
            return fill_text(v, env)
        if name not in env:
            raise TemplateError(f"{v} is not a bound variable (bound: {sorted(env)})")
        return env[name]
    if isinstance(v, list):
        return [fill(x, env) for x in v]
    if isinstance(v, dict):
        return {k: fill(x, env) for k, x in v.items()}
    return v
