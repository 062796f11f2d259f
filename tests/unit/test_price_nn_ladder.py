"""benchmarks/price_nn_ladder.py: the FC learning-rate search and the fit rule, against
hand-built fit tables (which runs fit is given; the search must find the rates and train
no run it does not need)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "price_nn_ladder", REPO / "benchmarks" / "price_nn_ladder.py"
)
ladder = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ladder)

RATES = [1e-3, 1e-2, 1e-1]


def oracle(table):
    """fit(alg, lr, seed) from {(alg, lr): set of fitting seeds}; records each call."""
    calls = []

    def fit(alg, lr, seed):
        calls.append((alg, lr, seed))
        return seed in table.get((alg, lr), set())

    return fit, calls


ALL = {0, 1, 2}


def test_common_rate_is_the_largest_fitting_both():
    # GD fits at 0.1 and 0.01, SD at 0.01 and 0.001: the common rate is 0.01
    fit, calls = oracle({("gd", 0.1): ALL, ("gd", 1e-2): ALL, ("sd", 1e-2): ALL,
                         ("sd", 1e-3): ALL})  # fmt: skip
    res = ladder.search_rates(fit, RATES)
    assert res["per_algorithm"] == {"gd": 0.1, "sd": 1e-2}
    assert res["common"] == 1e-2
    assert res["lr"] == {"gd": 1e-2, "sd": 1e-2}
    assert res["fitting_seeds"] == {"gd": 3, "sd": 3}
    # exactly the runs the rule needs: GD's 0.1 on every seed, SD out at 0.1's seed 0, SD's
    # 0.01, then GD's 0.01 as the common candidate; SD at 1e-3 is never needed
    assert calls == [("gd", 0.1, s) for s in (0, 1, 2)] + [("sd", 0.1, 0)] + [
        ("sd", 1e-2, s) for s in (0, 1, 2)
    ] + [("gd", 1e-2, s) for s in (0, 1, 2)]


def test_no_common_rate_falls_back_to_each_algorithms_largest():
    # GD fits only at 0.1, SD only at 1e-3: below min(r) = 1e-3 nothing fits GD
    fit, calls = oracle({("gd", 0.1): ALL, ("sd", 1e-3): ALL, ("gd", 1e-2): {0, 1}})
    res = ladder.search_rates(fit, RATES)
    assert res["common"] is None
    assert res["lr"] == {"gd": 0.1, "sd": 1e-3}
    # GD at 1e-3 was tried (a common candidate), stopped at seed 0
    assert ("gd", 1e-3, 0) in calls and ("gd", 1e-3, 1) not in calls
    # GD at 0.01 lies above min(r) = 1e-3: no common candidate, never trained; no run twice
    assert not any(c[:2] == ("gd", 1e-2) for c in calls) and len(calls) == len(set(calls))


def test_common_rate_below_the_smaller_largest_rate():
    # SD's largest is 0.01 but GD does not fit there; both fit at 1e-3
    fit, _ = oracle({("gd", 0.1): ALL, ("gd", 1e-3): ALL, ("sd", 1e-2): ALL,
                     ("sd", 1e-3): ALL})  # fmt: skip
    res = ladder.search_rates(fit, RATES)
    assert res["per_algorithm"] == {"gd": 0.1, "sd": 1e-2}
    assert res["common"] == 1e-3 and res["lr"] == {"gd": 1e-3, "sd": 1e-3}


def test_a_common_rate_needs_both_at_that_rate_not_only_the_other():
    # below m = 0.1 GD fits at 0.01 but SD does not; both fit at 1e-3: an implementation
    # that took the first rate where the other algorithm fits would return 0.01
    fit, _ = oracle({("gd", 0.1): ALL, ("sd", 0.1): ALL, ("gd", 1e-2): ALL,
                     ("gd", 1e-3): ALL, ("sd", 1e-3): ALL})  # fmt: skip
    res = ladder.search_rates(fit, RATES)
    assert res["per_algorithm"] == {"gd": 0.1, "sd": 0.1}
    assert res["common"] == 0.1  # equal largest rates: that rate is common


def test_below_m_both_must_fit():
    fit, calls = oracle({("gd", 0.1): ALL, ("sd", 0.1): {0}, ("sd", 1e-2): ALL,
                         ("gd", 1e-3): ALL, ("sd", 1e-3): ALL})  # fmt: skip
    # m = 0.01 (SD); GD misses there, both fit at 1e-3
    res = ladder.search_rates(fit, RATES)
    assert res["per_algorithm"] == {"gd": 0.1, "sd": 1e-2}
    assert res["common"] == 1e-3 and res["lr"] == {"gd": 1e-3, "sd": 1e-3}
    assert ("gd", 1e-2, 0) in calls and ("gd", 1e-2, 1) not in calls


def test_below_m_the_first_algorithm_is_checked_too():
    # m = 0.01 (SD's largest); GD misses at 0.01, fits at 1e-3 where SD misses; both fit at
    # 1e-4. An implementation that took the first rate below m where GD fits, without
    # checking SD there, would return 1e-3.
    rates = [1e-4, 1e-3, 1e-2, 1e-1]
    fit, _ = oracle({("gd", 0.1): ALL, ("sd", 1e-2): ALL, ("gd", 1e-3): ALL,
                     ("sd", 1e-3): {0, 1}, ("gd", 1e-4): ALL, ("sd", 1e-4): ALL})  # fmt: skip
    res = ladder.search_rates(fit, rates)
    assert res["per_algorithm"] == {"gd": 0.1, "sd": 1e-2}
    assert res["common"] == 1e-4 and res["lr"] == {"gd": 1e-4, "sd": 1e-4}


def test_neither_algorithm_fits_anywhere():
    fit, calls = oracle({})
    res = ladder.search_rates(fit, RATES)
    assert res["common"] is None and res["per_algorithm"] == {"gd": None, "sd": None}
    # the fallback runs every seed at every rate and takes the largest rate on the 0-0 tie
    assert res["lr"] == {"gd": 0.1, "sd": 0.1} and res["fitting_seeds"] == {"gd": 0, "sd": 0}
    assert len(set(calls)) == 2 * len(RATES) * 3


def test_an_algorithm_that_never_fits_every_seed_gets_its_best_rate():
    # SD fits 2 seeds at 1e-2 and 1e-3 (ties -> the larger rate), one at 0.1
    fit, calls = oracle({("gd", 0.1): ALL, ("sd", 0.1): {2}, ("sd", 1e-2): {0, 2},
                         ("sd", 1e-3): {0, 1}})  # fmt: skip
    res = ladder.search_rates(fit, RATES)
    assert res["common"] is None and res["per_algorithm"]["sd"] is None
    assert res["lr"] == {"gd": 0.1, "sd": 1e-2}
    assert res["fitting_seeds"] == {"gd": 3, "sd": 2}
    # the fallback ran every seed at every rate
    assert {("sd", lr, s) for lr in RATES for s in (0, 1, 2)} <= set(calls)


@pytest.mark.parametrize(
    ("rec", "expected"),
    [
        ({"arch": "fc", "robust_train_err": 0.0, "reached": {"1e-12": None}}, True),
        ({"arch": "fc", "robust_train_err": 0.01, "reached": {"1e-12": None}}, False),
        ({"arch": "fc", "diverged": True}, False),
        ({"arch": "cnn", "robust_train_err": 0.0, "reached": {"0.1": 5, "0.01": None}}, False),
        ({"arch": "cnn", "robust_train_err": 0.0, "reached": {"0.1": 5, "0.01": 9}}, True),
        ({"arch": "cnn", "robust_train_err": 0.02, "reached": {"0.01": 9}}, False),
    ],
)
def test_fits_follows_the_studys_fit_rule(rec, expected):
    assert ladder.fits(rec) is expected


def test_without_a_common_rate_each_algorithm_stops_at_its_largest():
    # the CNN's search (the paper trains its CNN at one rate per algorithm): the table of the
    # first test, but no common-rate step: GD keeps 0.1 and no GD run below it is made
    fit, calls = oracle({("gd", 0.1): ALL, ("gd", 1e-2): ALL, ("sd", 1e-2): ALL,
                         ("sd", 1e-3): ALL})  # fmt: skip
    res = ladder.search_rates(fit, RATES, want_common=False)
    assert res["common"] is None and res["lr"] == {"gd": 0.1, "sd": 1e-2}
    assert not any(c[:2] == ("gd", 1e-2) for c in calls)
    # one algorithm alone (a search run per algorithm, each with its own grid)
    fit, _ = oracle({("sd", 1e-3): ALL})
    res = ladder.search_rates(fit, RATES, algorithms=("sd",), want_common=False)
    assert res["lr"] == {"sd": 1e-3} and res["fitting_seeds"] == {"sd": 3}
