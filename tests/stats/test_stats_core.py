"""The statistics lens prints: pinned against known values and checked for coverage."""

from __future__ import annotations

import math
import random

import pytest

from lens.stats import (
    binom_cdf,
    bootstrap_mean,
    condition_differences,
    estimate,
    holm,
    margin_table,
    mcnemar_exact,
    paired_bootstrap,
    paired_compare,
    planning_table,
    sample_size_two_proportions,
    wilson,
    wilson_half_width,
    z_for,
)


def test_z_for_95_percent() -> None:
    assert z_for(0.95) == pytest.approx(1.959964, abs=1e-6)
    with pytest.raises(ValueError):
        z_for(1.0)


def test_wilson_margin_matches_the_methodology_table() -> None:
    # n = 100, p = 0.91: about ±6 points; n = 20, p = 0.91: about ±14 points.
    assert wilson_half_width(0.91, 100) == pytest.approx(0.057, abs=0.003)
    assert wilson_half_width(0.91, 20) == pytest.approx(0.14, abs=0.01)
    est = wilson(91, 100)
    assert est.mean == 0.91
    assert est.low == pytest.approx(0.8377, abs=1e-4)
    assert est.high == pytest.approx(0.9519, abs=1e-4)


def test_wilson_edges_are_not_degenerate() -> None:
    zero, one = wilson(0, 30), wilson(30, 30)
    assert zero.low == 0.0 and zero.high is not None and zero.high > 0.05
    assert one.high == 1.0 and one.low is not None and one.low < 0.95
    empty = wilson(0, 0)
    assert empty.mean is None and empty.low is None and empty.half_width is None
    with pytest.raises(ValueError):
        wilson(5, 4)


def test_wilson_coverage_is_close_to_nominal() -> None:
    rng = random.Random(7)
    p, n, trials = 0.85, 60, 2000
    hits = 0
    for _ in range(trials):
        k = sum(rng.random() < p for _ in range(n))
        est = wilson(k, n)
        assert est.low is not None and est.high is not None
        hits += est.low <= p <= est.high
    assert 0.92 <= hits / trials <= 0.98


def test_sample_sizes_reproduce_the_planning_table() -> None:
    # Methodology table: 5 points ≈ 680 per arm, 10 points ≈ 200, 15 points ≈ 90 (two-sided
    # alpha 0.05, 80% power). The pooled-variance formula gives 686, 199 and 100: the last is
    # the table's "≈ 90" rounded down in the source; the unpooled formula gives 97.
    assert sample_size_two_proportions(0.85, 0.90) == 686
    assert sample_size_two_proportions(0.80, 0.90) == 199
    assert sample_size_two_proportions(0.75, 0.90) == 100
    for got, table in ((686, 680), (199, 200), (100, 90)):
        assert abs(got - table) / table <= 0.12
    # More power or a stricter alpha needs more questions; symmetric in the two rates.
    assert sample_size_two_proportions(0.85, 0.90, power=0.9) > 686
    assert sample_size_two_proportions(0.85, 0.90, alpha=0.01) > 686
    assert sample_size_two_proportions(0.90, 0.85) == 686
    with pytest.raises(ValueError):
        sample_size_two_proportions(0.9, 0.9)


def test_planning_and_margin_tables() -> None:
    rows = planning_table(0.85, [0.05, 0.15])
    assert rows[0] == {"baseline": 0.85, "other": 0.9, "delta": 0.05, "per_arm": 686,
                       "independent": 686, "scopes": None}
    assert rows[1]["other"] == pytest.approx(0.80)
    # 0.85 + 0.15 is not a rate below 1: only the downward row remains.
    assert [r["other"] for r in rows[2:]] == [pytest.approx(0.70)]
    margins = margin_table(0.91, [20, 100])
    assert [round(m["margin"], 2) for m in margins] == [0.13, 0.06]


def test_binomial_cdf_is_exact() -> None:
    for n in (1, 7, 40):
        for k in range(n + 1):
            want = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
            assert binom_cdf(k, n) == pytest.approx(want, rel=1e-12)
    assert binom_cdf(-1, 5) == 0.0
    # Large n stays finite and exact (summed in log space).
    want = sum(math.comb(2000, i) for i in range(1001)) / 2**2000
    assert binom_cdf(1000, 2000) == pytest.approx(want, rel=1e-9)


def test_mcnemar_exact_known_p_value() -> None:
    # 10 pairs where only A succeeds, 2 where only B does, 8 concordant:
    # p = 2 * P(X <= 2), X ~ Bin(12, 1/2) = 2 * (1 + 12 + 66) / 4096 = 0.03857…
    a = [1] * 10 + [0] * 2 + [1] * 5 + [0] * 3
    b = [0] * 10 + [1] * 2 + [1] * 5 + [0] * 3
    res = mcnemar_exact(a, b)
    assert (res.a_only, res.b_only) == (10, 2)
    assert res.p_value == pytest.approx(158 / 4096, rel=1e-12)
    assert mcnemar_exact(b, a).p_value == pytest.approx(res.p_value)
    assert mcnemar_exact([1, 0, 1], [1, 0, 1]).p_value == 1.0


def test_mcnemar_agrees_with_scipy() -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    for a_only, b_only in ((3, 9), (0, 6), (25, 40)):
        a = [1] * a_only + [0] * b_only
        b = [0] * a_only + [1] * b_only
        want = scipy_stats.binomtest(min(a_only, b_only), a_only + b_only, 0.5).pvalue
        assert mcnemar_exact(a, b).p_value == pytest.approx(want, rel=1e-9)


def test_holm_adjustment() -> None:
    assert holm([0.01, 0.04, 0.03, None]) == pytest.approx([0.03, 0.06, 0.06, None])
    adjusted = holm([0.001, 0.2, 0.5])
    assert adjusted == pytest.approx([0.003, 0.4, 0.5])
    assert holm([]) == []


def test_intervals_depend_on_the_data_only() -> None:
    rng = random.Random(1)
    vals = [rng.random() for _ in range(200)]
    clusters = [f"s{i % 5}" for i in range(200)]
    a = bootstrap_mean(vals, clusters, seed_label="x")
    b = bootstrap_mean(vals, clusters, seed_label="y")
    assert a == b
    assert a.low is not None and a.high is not None and a.low < a.mean < a.high  # type: ignore
    # The paired bootstrap is seeded by the deltas: the same data, the same bytes.
    d = [rng.gauss(0.1, 0.3) for _ in range(200)]
    assert paired_bootstrap(d, clusters) == paired_bootstrap(list(d), list(clusters))
    assert paired_bootstrap(d, clusters) != paired_bootstrap([x + 1e-9 for x in d], clusters)


def test_clustered_interval_carries_between_scope_variance() -> None:
    # Five scopes whose means differ a lot: treating questions as independent would
    # understate the spread.
    rng = random.Random(3)
    vals, clusters = [], []
    for s, centre in enumerate((0.1, 0.3, 0.5, 0.7, 0.9)):
        for _ in range(40):
            vals.append(min(1.0, max(0.0, rng.gauss(centre, 0.05))))
            clusters.append(f"s{s}")
    clustered = bootstrap_mean(vals, clusters)
    iid = bootstrap_mean(vals, ["one"] * len(vals))
    assert clustered.method == "cluster-robust-t" and iid.method == "t (one scope)"
    assert clustered.half_width > 2 * iid.half_width  # type: ignore[operator]
    assert clustered.icc is not None and clustered.icc > 0.9
    assert clustered.n_eff is not None and clustered.n_eff < 6


def test_one_scope_coverage_is_close_to_nominal() -> None:
    rng = random.Random(11)
    trials, hits = 300, 0
    for _ in range(trials):
        vals = [rng.expovariate(2.0) for _ in range(60)]  # true mean 0.5
        est = bootstrap_mean(vals, ["s"] * 60)
        hits += est.low <= 0.5 <= est.high  # type: ignore[operator]
    assert 0.88 <= hits / trials <= 0.99


def test_estimate_picks_wilson_for_binary_values() -> None:
    assert estimate([1, 0, 1, 1], ["a", "a", "b", "b"]).method == "wilson-clustered"
    assert estimate([1, 0, 1, 1] * 5, ["a"] * 20).method == "wilson (one scope)"
    cont = estimate([0.5, 0.2] * 6, ["a", "b"] * 6)
    assert cont.method == "cluster-robust-t" and cont.low is not None
    unknown = estimate([], [])
    assert unknown.mean is None and unknown.n == 0


def test_too_few_values_have_no_bootstrap_interval() -> None:
    est = bootstrap_mean([0.4], ["s"])
    assert est.mean == 0.4 and est.low is None and est.half_width is None
    nine = bootstrap_mean([0.1 * i for i in range(9)], ["s"] * 9)
    assert nine.n == 9 and nine.low is None
    ten = bootstrap_mean([0.1 * i for i in range(10)], ["s"] * 10)
    assert ten.low is not None and ten.low < ten.mean < ten.high  # type: ignore[operator]


def test_paired_bootstrap_edge_cases() -> None:
    zero, p0, mc0 = paired_bootstrap([0.0] * 10, ["s"] * 10)
    assert zero.mean == 0.0 and p0 == 1.0 and mc0 == 0.0
    const, pc, _ = paired_bootstrap([0.2] * 10, ["s"] * 10)
    assert const.mean == pytest.approx(0.2) and pc == pytest.approx(2 / 2**10)
    rng = random.Random(5)
    shifted = [0.3 + rng.gauss(0, 0.1) for _ in range(100)]
    est, p, mc = paired_bootstrap(shifted, [f"s{i % 4}" for i in range(100)])
    assert p is not None and p < 0.01 and est.low > 0  # type: ignore[operator]
    # 10,000 resamples: the smallest p is 2/10001, known to within its Monte Carlo error.
    assert p == pytest.approx(2 / 10001) and mc is not None and 0 < mc < 0.001


def test_paired_compare_uses_mcnemar_for_binary_and_bootstrap_otherwise() -> None:
    a = [1] * 10 + [0] * 2 + [1] * 5 + [0] * 3
    b = [0] * 10 + [1] * 2 + [1] * 5 + [0] * 3
    res = paired_compare("budget_compliance", a, b, ["s"] * 20)
    assert res.test == "mcnemar-exact" and res.p_value == pytest.approx(158 / 4096)
    assert res.delta.mean == pytest.approx(-0.4)
    cont = paired_compare("fact_recall", [0.1, 0.5, 0.3] * 4, [0.2, 0.6, 0.5] * 4, ["s"] * 12)
    assert cont.test == "paired-bootstrap" and cont.p_value is not None
    few = paired_compare("fact_recall", [0.1, 0.5, 0.3], [0.2, 0.6, 0.5], ["s"] * 3)
    assert few.delta.low is None and few.p_value is None


def test_condition_differences_ignore_the_adapter_under_test() -> None:
    base = {"seed": 0, "dataset_hash": "abc", "adapters": [{"name": "x"}]}
    same_but_adapter = {**base, "adapters": [{"name": "y"}]}
    assert condition_differences([base, same_but_adapter]) == []
    other = {**base, "seed": 1, "dataset_hash": "def"}
    assert condition_differences([base, other]) == ["dataset_hash", "seed"]
    missing = {k: v for k, v in base.items() if k != "seed"}
    assert condition_differences([base, missing]) == ["seed"]


def test_plan_in_effective_terms() -> None:
    from lens.stats import clustered_size, design_effect

    # ICC 0: the independent-question table, in whole scopes when the scope size is known.
    assert clustered_size(686) == (686, None)
    assert clustered_size(686, 0.0, 25) == (700, 28)
    # ICC 0.14 with 25 per scope: a design effect of 4.36, so 686 become 2,991 → 120 scopes.
    assert design_effect(0.14, 25) == pytest.approx(4.36)
    assert clustered_size(686, 0.14, 25) == (3000, 120)
    with pytest.raises(ValueError, match="per scope"):
        clustered_size(686, 0.1)
    rows = planning_table(0.85, [0.05], icc=0.14, per_scope=25)
    assert rows[0]["independent"] == 686 and rows[0]["per_arm"] == 3000 and rows[0]["scopes"] == 120
    m = margin_table(0.85, [100], icc=0.14, per_scope=25)[0]
    assert m["n_eff"] == pytest.approx(100 / 4.36)
    assert m["margin"] > margin_table(0.85, [100])[0]["margin"]
