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
