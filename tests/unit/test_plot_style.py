"""ibrobust.plotting.style: seaborn's style, palette and heatmap subsets without seaborn."""

from __future__ import annotations

import matplotlib
import matplotlib.pyplot as plt
import matplotlib.style
import numpy as np
import pytest

from ibrobust.plotting.style import STYLES, color_palette, heatmap, set_style

# seaborn 0.13.2's color_palette("viridis", 3): viridis at 1/4, 1/2, 3/4 (LUT rows 64, 128, 192)
VIRIDIS_3 = [
    (0.229739, 0.322361, 0.545706),
    (0.127568, 0.566949, 0.550556),
    (0.369214, 0.788888, 0.382914),
]
TAB_BLUE, TAB_ORANGE = (0x1F / 255, 0x77 / 255, 0xB4 / 255), (1.0, 0x7F / 255, 0x0E / 255)


def test_palettes_by_hand():
    assert np.allclose(color_palette("viridis", 3), VIRIDIS_3, atol=1e-6)
    assert np.allclose(color_palette("viridis", 1), [VIRIDIS_3[1]], atol=1e-6)  # the middle
    tab = color_palette("tab10", 12)
    assert len(tab) == 12 and all(len(c) == 3 for c in tab)
    assert np.allclose([tab[0], tab[1], tab[10], tab[11]], [TAB_BLUE, TAB_ORANGE] * 2)
    assert color_palette("tab10", 0) == []


@pytest.mark.parametrize("name", ["tab10", "viridis", "Set1"])
def test_palettes_equal_seaborns(name):
    sns = pytest.importorskip("seaborn")
    for n in (1, 2, 5, 10, 13):
        assert np.allclose(color_palette(name, n), sns.color_palette(name, n), atol=1e-12)


def test_set_style_applies_matplotlibs_seaborn_sheets():
    assert {f"seaborn-v0_8-{s}" for s in STYLES} <= set(matplotlib.style.available)
    with matplotlib.rc_context():
        set_style("whitegrid")
        assert matplotlib.rcParams["axes.grid"] is True
        assert matplotlib.rcParams["legend.frameon"] is True  # as seaborn 0.13 leaves it
        set_style("white")
        assert matplotlib.rcParams["axes.grid"] is False
        set_style("ticks")
        assert matplotlib.rcParams["xtick.major.size"] == 6.0
    with pytest.raises(ValueError, match="'dark'"):
        set_style("dark")


@pytest.fixture
def ax():
    fig, ax = plt.subplots()
    yield ax
    plt.close(fig)


DATA = np.array([[1.0, 0.0, -0.25], [np.nan, 0.5, -1.0]])


def test_heatmap_cells_ticks_and_orientation(ax):
    mesh = heatmap(DATA, ax, cmap="RdBu_r", vmin=-1, vmax=1, xticklabels=["a", "b", "c"],
                   yticklabels=["r0", "r1"], cbar=False)  # fmt: skip
    assert mesh.get_array().shape == (2, 3)
    assert mesh.get_array().mask.tolist() == [[False] * 3, [True, False, False]]  # NaN blank
    assert mesh.get_clim() == (-1, 1)
    assert ax.get_xlim() == (0, 3) and ax.get_ylim() == (2, 0) and ax.yaxis_inverted()
    assert list(ax.get_xticks()) == [0.5, 1.5, 2.5]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]
    assert list(ax.get_yticks()) == [0.5, 1.5]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["r0", "r1"]
    assert len(ax.figure.axes) == 1  # no colorbar
    assert not ax.texts


def test_heatmap_hidden_yticks_default_xticks_and_colorbar(ax):
    heatmap(DATA, ax, cmap="viridis", vmin=-1, vmax=1, yticklabels=False,
            cbar_kws={"label": "points"})  # fmt: skip
    assert list(ax.get_yticks()) == []
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "1", "2"]
    fig = ax.figure
    assert len(fig.axes) == 2 and fig.axes[1].get_ylabel() == "points"


def test_heatmap_annotations_in_cells_with_readable_colours(ax):
    heatmap(DATA, ax, cmap="RdBu_r", vmin=-1, vmax=1, annot=True, fmt="+.1f", cbar=False)
    got = {t.get_position(): (t.get_text(), t.get_color()) for t in ax.texts}
    # cell (row i, column j) is centred at x = j + 0.5, y = i + 0.5; the NaN cell is blank;
    # +-1 sit on the saturated ends of RdBu_r (dark: white text), 0 and -0.25 on its light
    # middle; 0.5 on RdBu_r(0.75) = (0.895, 0.504, 0.400), relative luminance
    # 0.2126 * 0.777 + 0.7152 * 0.218 + 0.0722 * 0.133 = 0.33 < 0.408: white
    assert got == {
        (0.5, 0.5): ("+1.0", "w"),
        (1.5, 0.5): ("+0.0", ".15"),
        (2.5, 0.5): ("-0.2", ".15"),
        (1.5, 1.5): ("+0.5", "w"),
        (2.5, 1.5): ("-1.0", "w"),
    }
    assert all(t.get_ha() == "center" and t.get_va() == "center" for t in ax.texts)


def test_heatmap_center_makes_missing_limits_symmetric(ax):
    assert heatmap(np.array([[-1.0, 3.0]]), ax, cmap="RdBu_r", center=0.0).get_clim() == (-3, 3)
    assert heatmap(np.array([[2.0, 3.0]]), ax, cmap="RdBu_r", center=1.0).get_clim() == (-1, 3)
    m = heatmap(np.array([[0.5]]), ax, cmap="RdBu_r", vmin=-2, vmax=2, center=0.0)
    assert m.get_clim() == (-2, 2)
    with pytest.raises(ValueError, match="center=0.5"):
        heatmap(np.array([[0.5]]), ax, cmap="RdBu_r", vmin=-2, vmax=2, center=0.5)


def test_heatmap_agrees_with_seaborn_on_text_colours():
    """Same annotation colours as seaborn 0.13.2 over a diverging and a sequential map."""
    sns = pytest.importorskip("seaborn")
    data = np.linspace(-1, 1, 12).reshape(3, 4)
    for cmap in ("RdBu_r", "viridis"):
        fig, (a, b) = plt.subplots(1, 2)
        heatmap(data, a, cmap=cmap, vmin=-1, vmax=1, annot=True, fmt=".2f", cbar=False)
        sns.heatmap(data, ax=b, cmap=cmap, vmin=-1, vmax=1, annot=True, fmt=".2f", cbar=False)
        assert [(t.get_position(), t.get_text(), t.get_color()) for t in a.texts] == [
            (t.get_position(), t.get_text(), t.get_color()) for t in b.texts
        ]
        assert a.get_xlim() == b.get_xlim() and a.get_ylim() == b.get_ylim()
        assert list(a.get_xticks()) == list(b.get_xticks())
        plt.close(fig)
