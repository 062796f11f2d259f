"""Read-off brackets of quantities read off a grid (ibrobust.analysis.readoff)."""

import math

import pytest

from ibrobust.analysis.readoff import first_crossing_bracket, grid_bracket, interpolated_bracket
from ibrobust.analysis.robustness import critical_radius

GRID = [0.0, 0.1, 0.2, 0.3, 0.4, 0.6]


def test_grid_bracket_is_the_cell_of_an_interpolated_crossing():
    import numpy as np

    acc = np.array([1.0, 0.95, 0.9, 0.7, 0.4, 0.1])
    r = critical_radius(np.array(GRID), acc)  # 0.3 + 0.2 / 0.3 x 0.1 = 0.3667
    assert r == pytest.approx(0.36667, abs=1e-4)
    assert grid_bracket(GRID, r) == (0.3, 0.4)
    assert grid_bracket(GRID, 0.4) == (0.3, 0.4)  # on a grid point: the cell below it
    assert grid_bracket(GRID, 0.0) == (0.0, 0.0)  # misclassified clean: exact
    assert grid_bracket(GRID, 0.5) == (0.4, 0.6)
    assert grid_bracket(GRID, 0.7) == (0.7, math.inf)
    with pytest.raises(ValueError, match="below"):
        grid_bracket([0.1, 0.2], 0.05)


def test_interpolated_bracket_spans_the_two_neighbours():
    acc = [1.0, 1.0, 0.9, 0.7, 0.4, 0.1]
    assert interpolated_bracket(GRID, acc, 0.35) == (0.4, 0.7)
    assert interpolated_bracket(GRID, acc, 0.3) == (0.7, 0.7)
    with pytest.raises(ValueError, match="off the grid"):
        interpolated_bracket(GRID, acc, 0.7)


def test_first_crossing_bracket():
    epochs = [0, 10, 20, 30]
    assert first_crossing_bracket(epochs, 20) == (10.0, 20.0)
    assert first_crossing_bracket([10, 20], 10) == (0.0, 10.0)
    with pytest.raises(ValueError):
        first_crossing_bracket(epochs, 15)
