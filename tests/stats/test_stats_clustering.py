"""Intervals under clustering: coverage over thousands of synthetic runs whose questions are
correlated within scopes, the ICC and effective n, and the two-stage bootstrap's redraws."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from lens.stats import (
    Clustered,
    cluster_bootstrap_means,
    cluster_bootstrap_weights,
    effective_n,
    estimate,
    icc_of,
    wilson,
)

DATASETS = 2000
PER_SCOPE = 25


def synthetic(rng: np.random.Generator, icc: float, binary: bool,
              truth: float) -> tuple[list[float], list[str]]:
    """One run: 6–10 scopes of 25 questions whose values share a scope effect (ICC ``icc``)."""
    k = int(rng.integers(6, 11))
    if binary:
        if icc > 0:
            s = 1 / icc - 1  # a beta of mean p with a + b = s has ICC 1 / (s + 1)
            rates = rng.beta(truth * s, (1 - truth) * s, size=k)
        else:
            rates = np.full(k, truth)
        vals = (rng.random((k, PER_SCOPE)) < rates[:, None]).astype(float)
    else:
        vals = (truth + rng.normal(0, np.sqrt(icc), (k, 1))
                + rng.normal(0, np.sqrt(1 - icc), (k, PER_SCOPE)))
    clusters = [f"s{j}" for j in range(k) for _ in range(PER_SCOPE)]
    return list(vals.ravel()), clusters


def coverage(icc: float, binary: bool, seed: int) -> tuple[float, float]:
    """Share of 95% intervals lens prints that cover the truth; and the naive Wilson's share."""
    rng = np.random.default_rng(seed)
    truth = 0.7 if binary else 0.5
    hits = naive = 0
    for _ in range(DATASETS):
        vals, clusters = synthetic(rng, icc, binary, truth)
        est = estimate(vals, clusters)
        assert est.low is not None and est.high is not None
        hits += est.low <= truth <= est.high
        if binary:
            w = wilson(sum(vals), len(vals))
            naive += w.low <= truth <= w.high  # type: ignore[operator]
    return hits / DATASETS, naive / DATASETS


@pytest.mark.parametrize("binary", [True, False], ids=["rates", "means"])
def test_intervals_cover_under_scope_correlation(binary: bool) -> None:
    covered, naive = coverage(0.13, binary, seed=19)
    assert covered >= 0.93, covered
    assert covered <= 0.985, covered  # honest, not merely wide
    if binary:
        # The interval that treats questions as independent misses far more often.
        assert naive < 0.85, naive


@pytest.mark.parametrize("binary", [True, False], ids=["rates", "means"])
def test_intervals_are_nominal_without_correlation(binary: bool) -> None:
    covered, _ = coverage(0.0, binary, seed=23)
    assert 0.93 <= covered <= 0.97, covered


def test_icc_matches_the_anova_estimator_and_sets_the_effective_n() -> None:
    rng = np.random.default_rng(5)
    vals, clusters = synthetic(rng, 0.3, False, 0.0)
    k = len(set(clusters))
    groups = np.asarray(vals).reshape(k, PER_SCOPE)
    # One-way random-effects ANOVA, balanced: (MSB − MSW) / (MSB + (m − 1)·MSW).
    msb = PER_SCOPE * groups.mean(1).var(ddof=1)
    msw = groups.var(axis=1, ddof=1).mean()
    expected = (msb - msw) / (msb + (PER_SCOPE - 1) * msw)
    assert icc_of(vals, clusters) == pytest.approx(expected, rel=1e-9)
    est = estimate(vals, clusters)
    assert est.icc == pytest.approx(expected, rel=1e-9)
    assert est.n_eff == pytest.approx(len(vals) / (1 + (PER_SCOPE - 1) * expected))
    assert effective_n(150, 6, 0.14) == pytest.approx(150 / (1 + 24 * 0.14))


def test_icc_is_clipped_at_zero_and_unknown_from_one_scope() -> None:
    # Scopes more alike than chance: the raw estimate is negative, the ICC is 0, n_eff = n.
    vals = [0.0, 1.0] * 50
    clusters = [f"s{i // 2 % 10}" for i in range(100)]
    assert icc_of(vals, clusters) == 0.0
    assert estimate(vals, clusters).n_eff == 100
    one = estimate([0.2, 0.4] * 10, ["only"] * 20)
    assert one.icc is None and one.n_eff is None and one.low is not None
    assert "one scope" in one.method


def test_degenerate_rates_use_the_design_effect() -> None:
    # Every question right: no spread to estimate, the interval still has a lower bound below 1
    # and is the Wilson interval at the design-effect n (ICC 0 here, so n), with t quantiles.
    est = estimate([1.0] * 60, [f"s{i % 6}" for i in range(60)])
    assert est.mean == 1.0 and est.high == 1.0 and est.method == "wilson-deff"
    assert est.low is not None and est.low < wilson(60, 60).low  # type: ignore[operator]


def test_adversary_one_strong_scope_cannot_buy_a_narrow_interval() -> None:
    # Gaming attempt: a system that is perfect on one big scope and poor elsewhere reports a
    # high rate over many questions; the interval must reflect 4 scopes, not 200 questions.
    vals = [1.0] * 140 + [1.0 if i % 3 == 0 else 0.0 for i in range(60)]
    clusters = ["big"] * 140 + [f"s{i % 3}" for i in range(60)]
    clustered = estimate(vals, clusters)
    naive = wilson(sum(vals), len(vals))
    assert clustered.half_width > 3 * naive.half_width  # type: ignore[operator]
    assert clustered.n_eff is not None and clustered.n_eff < 60


def test_redrawn_scopes_are_resampled_independently() -> None:
    # Two scopes, one value spread within each: a scope drawn twice must contribute two
    # independent within-scope resamples, so the replicate SD matches the two-stage variance.
    rng = np.random.default_rng(2)
    vals = list(rng.normal(0, 1, 200))
    clusters = ["a"] * 100 + ["b"] * 100
    dist = cluster_bootstrap_means(vals, clusters, resamples=20_000)
    a, b = np.asarray(vals[:100]), np.asarray(vals[100:])
    # Var of the mean: scope-stage + within-stage (independent redraws of each drawn scope).
    between = ((a.mean() - b.mean()) / 2) ** 2 / 2
    within = (a.var() + b.var()) / 2 / 200
    assert dist.std() == pytest.approx(np.sqrt(between + within), rel=0.05)
    w = cluster_bootstrap_weights(clusters, resamples=500, seed=b"x", within=True)
    assert np.all(w.sum(axis=1) == 200)
    twice = w[:, :100].sum(axis=1) == 200  # replicates that drew scope a twice
    assert twice.any()
    # ...and within them, some question is drawn more often than a single redraw allows.
    assert (w[twice, :100].max(axis=1) >= 2).all()


def test_units_keep_repeats_of_a_question_together() -> None:
    clusters = ["a"] * 6 + ["b"] * 6
    units = ["q1", "q1", "q2", "q2", "q3", "q3"] * 2
    w = cluster_bootstrap_weights(clusters, resamples=200, seed=b"u", units=units, within=True)
    assert np.array_equal(w[:, 0], w[:, 1]) and np.array_equal(w[:, 6], w[:, 7])
    assert not np.array_equal(w[:, 0], w[:, 2])


def test_several_scopes_are_resampled_whole_by_default() -> None:
    # With several scopes a replicate keeps each drawn scope's questions as they are (drawing
    # them again would count the within-scope variance twice); with one, questions are drawn.
    clusters = ["a"] * 5 + ["b"] * 5 + ["c"] * 5
    w = cluster_bootstrap_weights(clusters, resamples=300, seed=b"s")
    assert all(len(set(row[i:i + 5])) == 1 for row in w for i in (0, 5, 10))
    assert np.all(w.sum(axis=1) == 15)
    one = cluster_bootstrap_weights(["a"] * 20, resamples=300, seed=b"s")
    assert np.all(one.sum(axis=1) == 20) and (one.max(axis=1) >= 2).any()


def test_clustered_structure_matches_numpy() -> None:
    cl = Clustered.of([1.0, 2.0, 3.0, 5.0], ["b", "a", "b", "a"])
    assert list(cl.sizes) == [2, 2] and list(cl.totals) == [7.0, 4.0]
    assert cl.mean == 2.75
    # The CR1 standard error with two equal scopes equals half the gap between scope means
    # (scaled by sqrt(k / (k - 1)) and the 1/k of the mean).
    assert cl.robust_se() == pytest.approx(abs(3.5 - 2.0) / 2 * np.sqrt(2) / np.sqrt(2))


def test_t_quantile_is_students() -> None:
    from lens.stats import t_for

    assert t_for(0.95, 5) == pytest.approx(sps.t.ppf(0.975, 5))


@pytest.mark.parametrize("icc", [0.13, 0.0])
def test_paired_comparison_intervals_cover(icc: float) -> None:
    # The interval of a mean difference from the scope-clustered paired bootstrap, widened for
    # few scopes: near 95% with or without scope correlation (400 runs, 2,000 resamples each).
    from lens.stats import paired_bootstrap

    rng = np.random.default_rng(31)
    runs, hits = 400, 0
    for _ in range(runs):
        k = int(rng.integers(6, 11))
        d = (rng.normal(0, np.sqrt(icc), (k, 1))
             + rng.normal(0, np.sqrt(1 - icc), (k, PER_SCOPE)))
        est, _, _ = paired_bootstrap(list(d.ravel()),
                                     [f"s{j}" for j in range(k) for _ in range(PER_SCOPE)],
                                     resamples=2000)
        hits += est.low <= 0 <= est.high  # type: ignore[operator]
    assert 0.90 <= hits / runs <= 0.98, hits / runs
