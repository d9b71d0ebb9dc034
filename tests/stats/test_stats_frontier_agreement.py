"""Cohen's kappa, Pareto-optimal points and LongMemEval-V2's frontier score (LAFS) and gain,
on values computed by hand."""

from __future__ import annotations

import math

import pytest

from lens.stats import agreement, cohen_kappa
from lens.stats.frontier import Point, lafs, lafs_gain, pareto_optimal

LN10, LN100, LN200 = math.log(10), math.log(100), math.log(200)


def test_kappa_by_hand() -> None:
    a = ["y", "y", "n", "n", "y"]
    b = ["y", "n", "n", "n", "y"]
    # p_o = 4/5; p_e = (3/5)(2/5) + (2/5)(3/5) = 0.48; κ = 0.32 / 0.52.
    assert cohen_kappa(a, b) == pytest.approx(0.32 / 0.52)
    ag = agreement(a, b)
    assert (ag.n, ag.agree, ag.rate) == (5, 4, 0.8)
    assert cohen_kappa(["y", "n"], ["n", "y"]) == pytest.approx(-1.0)
    assert cohen_kappa(["y", "n", "y"], ["y", "n", "y"]) == pytest.approx(1.0)


def test_kappa_unknown_when_undefined() -> None:
    # Both raters used one and the same category: chance explains everything, κ is 0/0.
    assert cohen_kappa(["y", "y"], ["y", "y"]) is None
    assert cohen_kappa([], []) is None
    assert agreement([], []).rate is None
    with pytest.raises(ValueError):
        cohen_kappa(["y"], [])


def test_pareto_optimal() -> None:
    pts = [Point("fast", 0.5, 2.0), Point("slow", 0.8, 20.0), Point("dominated", 0.7, 50.0),
           Point("tie-cost-worse", 0.4, 2.0)]
    assert pareto_optimal(pts) == {"fast", "slow"}


def test_lafs_by_hand() -> None:
    fast, slow = Point("fast", 0.5, 2.0), Point("slow", 0.8, 20.0)
    # Steps 1–2 s: nothing within budget (0); 2–20 s: 0.5; 20–200 s: 0.8; weights ln(r/l).
    both = (0.5 * LN10 + 0.8 * LN10) / LN200
    assert lafs([fast, slow]) == pytest.approx(both)
    assert lafs([fast, slow]) == pytest.approx(0.564964, abs=1e-6)
    assert lafs([fast]) == pytest.approx(0.5 * LN100 / LN200)
    assert lafs_gain([slow], [fast]) == pytest.approx(0.5 * LN10 / LN200)
    assert lafs_gain([fast], [slow]) == pytest.approx(0.3 * LN10 / LN200)


def test_cheaper_almost_as_good_gains_more_than_the_dearer_best() -> None:
    best, cheap = Point("best", 0.80, 20.0), Point("cheap", 0.78, 2.0)
    assert lafs_gain([best], [cheap]) == pytest.approx(0.78 * LN10 / LN200)  # ≈ 0.339
    assert lafs_gain([cheap], [best]) == pytest.approx(0.02 * LN10 / LN200)  # ≈ 0.009
    # Dearer and worse than another: no gain at all.
    assert lafs_gain([best], [Point("dominated", 0.7, 50.0)]) == pytest.approx(0.0, abs=1e-12)


def test_window_edges() -> None:
    # At or under t_min a point counts from the window's start; past t_max it never counts.
    assert lafs([Point("instant", 0.6, 0.5)]) == pytest.approx(0.6)
    assert lafs([Point("free", 0.6, 0.0)]) == pytest.approx(0.6)
    assert lafs([Point("too slow", 0.9, 300.0)]) == 0.0
    assert lafs([]) == 0.0
    with pytest.raises(ValueError):
        lafs([Point("x", 0.5, 1.0)], t_min=2.0, t_max=1.0)
    with pytest.raises(ValueError):
        lafs([Point("x", 0.5, -1.0)])
