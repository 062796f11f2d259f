"""A study's output files as the ledger reads them: a :class:`Source` is one file and its
columns (the one place a study's column mapping lives). :func:`load_source` refuses, with an
error naming the file and the column, a file whose columns are missing, non-numeric, NaN
where a value is required, out of their valid range, or inconsistent with each other (e.g.
a worst case over attacks that is not the smallest, :func:`not_above`) - so a malformed
summary stops the ledger instead of printing a wrong verdict."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd


class SummaryError(ValueError):
    """A study output the ledger cannot trust (names the file and the column)."""


@dataclass(frozen=True)
class Column:
    """A numeric column and its valid range; ``nan_ok`` when NaN is a legitimate value (a
    critical radius NaN means "robust accuracy never fell to 50 % on the grid")."""

    name: str
    lo: float = -math.inf
    hi: float = math.inf
    nan_ok: bool = False
    required: bool = True


Check = Callable[[pd.DataFrame], str | None]  # an invariant: None, or what is wrong


@dataclass(frozen=True)
class Source:
    """One output file of a study (``path``, relative to ``results/<study>/``) with the
    text columns it must have (``keys``, with their allowed values when given), its numeric
    :class:`Column` s and cross-column invariants (``checks``)."""

    path: str
    keys: Mapping[str, tuple[str, ...] | None]
    numeric: tuple[Column, ...]
    checks: tuple[Check, ...] = ()
    built_by: str = ""  # which target builds it, for "not run: output absent" reasons
    empty_ok: bool = False  # a header without rows is valid (a study without that part)


def load_source(path: str | Path, source: Source) -> pd.DataFrame:
    """The file at ``path`` checked against ``source`` (:class:`SummaryError` naming the file
    and the column for anything malformed)."""
    path = Path(path)
    try:
        df = pd.read_csv(path)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise SummaryError(f"{path}: cannot read it as CSV ({err})") from None
    if df.empty and not source.empty_ok:
        raise SummaryError(f"{path}: no rows")
    for key, allowed in source.keys.items():
        if key not in df:
            raise SummaryError(f"{path}: missing column {key!r} (has {list(df.columns)})")
        if df[key].isna().any():
            raise SummaryError(f"{path}: column {key!r} has empty values")
        if allowed is not None:
            bad = sorted(set(df[key].astype(str)) - set(allowed))
            if bad:
                raise SummaryError(
                    f"{path}: column {key!r} has values {bad}, expected one of {list(allowed)}"
                )
    for col in source.numeric:
        if col.name not in df:
            if col.required:
                raise SummaryError(f"{path}: missing column {col.name!r} (has {list(df.columns)})")
            continue
        vals = pd.to_numeric(df[col.name], errors="coerce")
        text = df[col.name].notna() & vals.isna()
        if text.any():
            raise SummaryError(
                f"{path}: column {col.name!r} is not numeric "
                f"(e.g. {df[col.name][text].iloc[0]!r} in row {int(np.argmax(text.to_numpy()))})"
            )
        if not col.nan_ok and vals.isna().any():
            raise SummaryError(
                f"{path}: column {col.name!r} has NaN in rows "
                f"{np.nonzero(vals.isna().to_numpy())[0].tolist()[:5]}"
            )
        out = vals.notna() & ((vals < col.lo) | (vals > col.hi))
        if out.any():
            raise SummaryError(
                f"{path}: column {col.name!r} has {vals[out].iloc[0]!r} outside its valid "
                f"range [{col.lo}, {col.hi}]"
            )
        df[col.name] = vals.astype(float)
    for check in source.checks:
        problem = check(df)
        if problem:
            raise SummaryError(f"{path}: {problem}")
    return df


def not_above(lower: str, others: Sequence[str], nan_is_inf: bool = False) -> Check:
    """Invariant: column ``lower`` <= every column of ``others`` present (a worst case over
    attacks cannot beat any attack). With ``nan_is_inf``, NaN counts as +inf."""

    def check(df: pd.DataFrame) -> str | None:
        if lower not in df:
            return None
        lo = df[lower].fillna(math.inf) if nan_is_inf else df[lower]
        for other in others:
            if other not in df:
                continue
            hi = df[other].fillna(math.inf) if nan_is_inf else df[other]
            bad = (lo > hi + 1e-9) & lo.notna() & hi.notna()
            if bad.any():
                i = int(np.argmax(bad.to_numpy()))
                return (
                    f"column {lower!r} ({lo.iloc[i]}) exceeds column {other!r} ({hi.iloc[i]}) "
                    f"in row {i}: the worst case over attacks must be the smallest"
                )
        return None

    return check
