"""The wrong-verdict rate over K repeated looks: union-bound alpha spending vs the naive
repeated interval (``snakemake decide``'s error control, ibrobust.decide.spending).

A row whose true effect sits exactly on its rule's threshold is judged at look 1 on 3 units
and, while undecided, gets the units the planner would add (the fewest with an 80 % chance
of deciding at the next look's level, at most doubling per look, at most 200 in all) and is
judged again (ibrobust.decide.simulation). Prints, per K = 1, 2, 3, 5, 10, the share of
replications wrongly decided ("holds": interval wholly above the truth, "does not hold":
wholly below) by look K, for the declared method and for a 95 % interval at every look,
with the units spent. Seeded (the same table every run); about 7 CPU-s at 20000 reps.

Usage: .venv/bin/python benchmarks/decide_looks.py [--reps 20000] [--level 0.95]
"""

from __future__ import annotations

import argparse

from ibrobust.decide.simulation import looks_table
from ibrobust.decide.spending import spending


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=20000)
    ap.add_argument("--level", type=float, default=0.95)
    ap.add_argument("--power", type=float, default=2.0, help="decide.spending_power")
    a = ap.parse_args()
    method = spending(a.level, "union_bound", a.power)
    t = looks_table(method.level_at, a.level, reps=a.reps)
    alpha = 1 - a.level
    print(f"true effect on the threshold; {a.reps} replications; level {a.level:g}")
    print(f"union-bound spending alpha_k = {alpha:g} k^-{a.power:g} / zeta({a.power:g})\n")
    print("| K | spent alpha | spending: wrong (holds / does not hold) | units | "
          "naive 95 %: wrong (holds / does not hold) | units |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for r in t.itertuples():
        print(
            f"| {r.K} | {method.spent(r.K):.4f} | {r.method_wrong:.4f} "
            f"({r.method_wrong_holds:.4f} / {r.method_wrong_fails:.4f}) | "
            f"{r.method_mean_units:.1f} | {r.naive_wrong:.4f} ({r.naive_wrong_holds:.4f} / "
            f"{r.naive_wrong_fails:.4f}) | {r.naive_mean_units:.1f} |"
        )


if __name__ == "__main__":
    main()
