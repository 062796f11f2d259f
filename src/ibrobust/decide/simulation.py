"""The wrong-verdict rate over repeated looks, simulated: does a method keep the level?

A row whose true effect sits exactly on its rule's threshold ``b`` should never be decided:
an interval wholly above ``b`` reads as a wrong "holds", one wholly below as a wrong "does
not hold". Each replication starts with ``first`` units (normal, mean ``b``: unbounded
values of unknown variance, as the ledger's seeds are) and is judged at look 1; while it is
undecided, the planner's rule adds units (:func:`ibrobust.decide.power.units_for` at the
next look's level: the fewest units with a ``target`` chance of deciding, at least one more,
at most ``growth`` times the units it has, as a budget spread over looks allows, and at most
``cap`` in all) and it is judged again, up to ``looks`` looks. A replication that
reaches ``cap`` undecided stops (no new units, no new look). The rate by look K is the share
of replications decided (wrongly) at some look <= K. Seeded: the same arguments give the
same table. Pure numpy; the t interval over units, as the ledger's ``t over seeds``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from ibrobust.decide.power import chance_to_decide, critical

SIM_COLUMNS = ["looks", "wrong_holds", "wrong_fails", "wrong", "mean_units"]


def simulate_looks(
    level_at: Callable[[int], float],
    looks: int = 10,
    reps: int = 20000,
    first: int = 3,
    cap: int = 200,
    target: float = 0.8,
    growth: float = 2.0,
    seed: int = 0,
) -> pd.DataFrame:
    """The cumulative wrong-verdict rates by look 1..``looks`` (:data:`SIM_COLUMNS`):
    ``wrong_holds`` (interval wholly above the true value), ``wrong_fails`` (wholly below),
    ``wrong`` (either), ``mean_units`` (units per replication by then). ``level_at(k)``:
    the level look k is judged at (a :class:`~ibrobust.decide.spending.Spending`'s
    ``level_at``, or a constant for the naive repeated interval)."""
    if not 2 <= first <= cap:
        raise ValueError(f"need 2 <= first <= cap, got first={first}, cap={cap}")
    if not growth > 1:
        raise ValueError(f"growth must be > 1 (each look adds a unit at least), got {growth}")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((reps, cap))  # (reps, cap): true value b = 0, sigma 1
    s1, s2 = np.cumsum(x, axis=1), np.cumsum(x * x, axis=1)  # (reps, cap)
    n = np.full(reps, first)
    active = np.ones(reps, dtype=bool)  # undecided and still growing
    above = np.zeros(reps, dtype=bool)
    below = np.zeros(reps, dtype=bool)
    rows = []
    idx = np.arange(reps)
    for k in range(1, looks + 1):
        level = level_at(k)
        mean = s1[idx, n - 1] / n
        sd = np.sqrt(np.maximum(s2[idx, n - 1] - n * mean**2, 0) / (n - 1))
        half = critical(level, n - 1) * sd / np.sqrt(n)
        up, down = active & (mean - half > 0), active & (mean + half < 0)
        above |= up
        below |= down
        active &= ~(up | down)
        rows.append([k, above.mean(), below.mean(), (above | below).mean(), n.mean()])
        if k == looks:
            break
        grow = active & (n < cap)
        active &= grow  # at the cap: no new units, no new look
        nxt = _next_units(mean[grow], sd[grow], n[grow], level_at(k + 1), target, cap)
        n[grow] = np.minimum(nxt, np.floor(growth * n[grow]).astype(int))
    return pd.DataFrame(rows, columns=SIM_COLUMNS)


def _next_units(
    center: np.ndarray, sd: np.ndarray, n: np.ndarray, level: float, target: float, cap: int
) -> np.ndarray:
    """The planner's units for each replication: the fewest m in (n, cap] whose predicted
    chance of deciding reaches ``target``, else ``cap``."""
    ms = np.arange(1, cap + 1)[None, :]  # (1, cap)
    p = chance_to_decide(center[:, None], sd[:, None], n[:, None], np.maximum(ms, 2), level)
    ok = (p >= target) & (ms > n[:, None])  # (rows, cap)
    first_ok = np.where(ok.any(axis=1), ok.argmax(axis=1) + 1, cap)
    return np.clip(first_ok, n + 1, cap)


def looks_table(
    method: Callable[[int], float], naive_level: float, ks=(1, 2, 3, 5, 10), **kw
) -> pd.DataFrame:
    """The wrong-verdict rate at each K of ``ks``, the method beside the naive repeated
    interval at ``naive_level``: columns K, method_*, naive_* (wrong, wrong_holds,
    wrong_fails, mean_units)."""
    looks = max(ks)
    ours = simulate_looks(method, looks=looks, **kw).set_index("looks")
    naive = simulate_looks(lambda k: naive_level, looks=looks, **kw).set_index("looks")
    out = pd.DataFrame({"K": list(ks)})
    for name, t in (("method", ours), ("naive", naive)):
        for col in SIM_COLUMNS[1:]:
            out[f"{name}_{col}"] = t.loc[list(ks), col].to_numpy()
    return out
