"""The ledger's intervals (ibrobust.claims.intervals) against statsmodels' and scipy's own
implementations (issue 38 item 5): Newcombe's hybrid score interval, Wilson's interval,
the pooled slope with an intercept per group (OLS ``y ~ x + C(group)``) and the Student t
interval of a mean, to 1e-6 on hand-picked and random inputs, the edge counts 0 and n
included."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ibrobust.claims import intervals as iv

pytest.importorskip("statsmodels", reason="the test extra's statsmodels (pip install -e '.[test]')")
import statsmodels.formula.api as smf  # noqa: E402
from statsmodels.stats.proportion import (  # noqa: E402
    confint_proportions_2indep,
    proportion_confint,
)
from statsmodels.stats.weightstats import DescrStatsW  # noqa: E402

TOL = 1e-6
LEVELS = (0.95, 0.9, 0.99)

# (successes 1, n1, successes 2, n2): Newcombe's worked example, the edges 0 and n on
# either side, n = 1, unequal sizes and the test-set sizes of the studies
PAIRS = [
    (56, 70, 48, 80),
    (0, 10, 0, 10),
    (10, 10, 10, 10),
    (10, 10, 0, 20),
    (0, 25, 25, 25),
    (1, 1, 0, 1),
    (0, 1, 1, 1),
    (3, 7, 0, 9),
    (37, 400, 41, 400),
    (0, 1000, 3, 1000),
    (999, 1000, 1000, 1000),
    (412, 500, 377, 1000),
]


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize(("c1", "n1", "c2", "n2"), PAIRS)
def test_newcombe_matches_statsmodels(c1, n1, c2, n2, level):
    got = iv.newcombe(c1 / n1, n1, c2 / n2, n2, level)
    lo, hi = confint_proportions_2indep(
        c1, n1, c2, n2, method="newcomb", compare="diff", alpha=1 - level
    )
    assert (got.lo, got.hi) == pytest.approx((lo, hi), abs=TOL)
    assert got.center == pytest.approx(c1 / n1 - c2 / n2)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("n", [1, 2, 7, 40, 500, 10_000])
def test_wilson_matches_statsmodels(n, level):
    for k in sorted({0, 1, n // 3, n // 2, n - 1, n} & set(range(n + 1))):
        got = iv.wilson(k, n, level)
        lo, hi = proportion_confint(k, n, alpha=1 - level, method="wilson")
        assert (got.lo, got.hi) == pytest.approx((lo, hi), abs=TOL), (k, n)


def _grouped(seed: int, sizes: list[int], slope: float, noise: float) -> pd.DataFrame:
    """Sweeps of log-x values per group (seed), each group its own level, one common slope."""
    rng = np.random.default_rng(seed)
    parts = []
    for g, m in enumerate(sizes):
        x = np.log(np.sort(rng.uniform(0.1, 10.0, m)))
        y = rng.normal(0, 2) + slope * x + rng.normal(0, noise, m)
        parts.append(pd.DataFrame({"x": x, "y": y, "group": f"seed{g}"}))
    return pd.concat(parts, ignore_index=True)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize(
    ("seed", "sizes", "slope", "noise"),
    [
        (0, [6, 6, 6], 0.5, 0.1),
        (1, [4, 9, 5, 7], -1.3, 0.5),
        (2, [3, 3], 2.0, 1.0),
        (3, [12], 0.0, 0.3),  # one group: an ordinary regression
        (4, [2, 2, 2, 2, 2], 1.0, 0.05),  # two points per group: n - groups - 1 = 4 df
    ],
)
def test_pooled_slope_matches_ols_with_group_fixed_effects(seed, sizes, slope, noise, level):
    df = _grouped(seed, sizes, slope, noise)
    got = iv.slope_interval(df.x, df.y, level=level, groups=df.group)
    formula = "y ~ x + C(group)" if len(sizes) > 1 else "y ~ x"
    fit = smf.ols(formula, data=df).fit()
    lo, hi = fit.conf_int(alpha=1 - level).loc["x"]
    assert got.center == pytest.approx(fit.params["x"], abs=TOL)
    assert (got.lo, got.hi) == pytest.approx((lo, hi), abs=TOL)
    assert fit.df_resid == len(df) - len(sizes) - 1
    if len(sizes) == 1:  # without groups: the same single-intercept fit
        plain = iv.slope_interval(df.x, df.y, level=level)
        assert (plain.lo, plain.hi) == pytest.approx((lo, hi), abs=TOL)


def test_pooled_slope_without_groups_matches_ols_on_grouped_data():
    df = _grouped(5, [5, 5, 5], 0.7, 0.2)  # one intercept for all: OLS y ~ x
    got = iv.slope_interval(df.x, df.y)
    lo, hi = smf.ols("y ~ x", data=df).fit().conf_int().loc["x"]
    assert (got.lo, got.hi) == pytest.approx((lo, hi), abs=TOL)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("n", [2, 3, 5, 20, 200])
def test_t_interval_matches_statsmodels_and_scipy(n, level):
    v = np.random.default_rng(n).normal(0.3, 0.8, n)
    got = iv.t_interval(v, level=level)
    lo, hi = DescrStatsW(v).tconfint_mean(alpha=1 - level)
    assert (got.lo, got.hi) == pytest.approx((lo, hi), abs=TOL)
    lo, hi = stats.t.interval(level, df=n - 1, loc=v.mean(), scale=stats.sem(v))
    assert (got.lo, got.hi) == pytest.approx((lo, hi), abs=TOL)
