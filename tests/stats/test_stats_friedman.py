"""Many arms: Friedman's test and Kendall's W against scipy, and what gaming them looks like."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from lens.stats import friedman


@pytest.mark.parametrize("seed", range(6))
def test_friedman_matches_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    scopes, arms = int(rng.integers(3, 12)), int(rng.integers(3, 6))
    table = rng.normal(size=(scopes, arms)) + np.arange(arms) * rng.uniform(0, 1)
    if seed % 2:
        table = np.round(table, 0)  # ties within scopes
    ours = friedman(table)
    ref = sps.friedmanchisquare(*table.T)
    assert ours is not None
    assert ours.statistic == pytest.approx(ref.statistic, rel=1e-12)
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-10)
    assert ours.df == arms - 1 and ours.blocks == scopes


def test_kendalls_w_is_one_when_scopes_agree_and_small_when_they_do_not() -> None:
    agree = np.array([[0.1, 0.5, 0.9]] * 6) + np.arange(6)[:, None] * 0.01
    result = friedman(agree)
    assert result is not None and result.kendall_w == pytest.approx(1.0)
    # W = chi2 / (n (k - 1)) with scipy's (tie-corrected) statistic.
    rng = np.random.default_rng(1)
    noise = rng.normal(size=(40, 4))
    w = friedman(noise)
    assert w is not None
    assert w.kendall_w == pytest.approx(sps.friedmanchisquare(*noise.T).statistic / (40 * 3))
    assert w.kendall_w < 0.2


def test_adversary_one_huge_scope_does_not_make_the_order_unanimous() -> None:
    # An arm that wins by a mile in one scope and loses in every other: a mean could favour it;
    # the rank test counts scopes, and W shows the scopes disagree with it.
    table = np.array([[10.0, 0.5, 0.4]] + [[0.1, 0.5, 0.4]] * 7)
    result = friedman(table)
    assert result is not None and result.kendall_w < 1.0
    means = table.mean(axis=0)
    assert means.argmax() == 0  # the mean is gamed...
    ranks = sps.rankdata(table, axis=1).sum(axis=0)
    assert ranks.argmax() == 1  # ...the ranks are not


def test_friedman_needs_three_arms_and_two_scopes() -> None:
    assert friedman(np.ones((5, 2))) is None
    assert friedman(np.ones((1, 4))) is None
    assert friedman(np.ones((5, 3))) is None  # every scope ties every arm: nothing to rank
