"""Small table helpers shared by the studies' summary tables."""

from __future__ import annotations

import pandas as pd


def mean_std(df: pd.DataFrame, keys: list[str], cols: list[str]) -> pd.DataFrame:
    """One row per group of ``keys``: the group keys, ``n`` (rows in the group) and
    ``<col>.mean`` / ``<col>.std`` (sample std; 0 for a single value, NaN for none) for
    each column."""
    rows = []
    for key, g in df.groupby(keys, sort=False, dropna=False):
        row = dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True))
        row["n"] = len(g)
        for c in cols:
            vals = pd.to_numeric(g[c], errors="coerce") if c in g else pd.Series(dtype=float)
            row[f"{c}.mean"] = vals.mean()
            n = vals.count()
            row[f"{c}.std"] = vals.std(ddof=1) if n > 1 else (0.0 if n == 1 else float("nan"))
        rows.append(row)
    return pd.DataFrame(rows)


def per_readout(df: pd.DataFrame, readouts: list[str], col: str = "readout") -> pd.DataFrame:
    """``df`` with every row whose ``col`` is empty (a model with one binary score: two heads,
    on which every readout coincides, or one) repeated under each of ``readouts``, so each
    readout's rows are complete; rows of a readout not in ``readouts`` are dropped."""
    if col not in df:
        df = df.assign(**{col: None})
    own = df[col].isna() | (df[col] == "")
    frames = [df[~own & (df[col] == ro)] for ro in readouts]
    frames += [df[own].assign(**{col: ro}) for ro in readouts]
    out = pd.concat(frames, ignore_index=True)
    order = {ro: i for i, ro in enumerate(readouts)}
    return out.sort_values(col, key=lambda s: s.map(order), kind="stable").reset_index(drop=True)
