"""Repeats: per-question reducers, the flip rate, and repeat noise reaching the intervals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lens.stats import check_reducer, estimate, reduce, reduce_repeats


def test_reducers_on_binary_repeats() -> None:
    runs = [1.0, 0.0, 1.0, 0.0]
    assert reduce(runs, "mean") == 0.5
    assert reduce(runs, "majority") == 0.0  # a tie is not a majority
    assert reduce([1.0, 1.0, 0.0], "majority") == 1.0
    assert reduce(runs, "any") == 1.0
    # Unbiased pass@k: 1 − C(n − c, k) / C(n, k), as inspect_ai's epochs reducer defines it.
    assert reduce(runs, "pass@2") == pytest.approx(1 - math.comb(2, 2) / math.comb(4, 2))
    assert reduce(runs, "pass@1") == pytest.approx(0.5)
    assert reduce([0.0, 0.0, 1.0], "pass@9") == 1.0  # k capped at the repeats


def test_reducers_on_continuous_repeats() -> None:
    vals = [0.2, 0.9, 0.4]
    assert reduce(vals, "mean") == pytest.approx(0.5)
    assert reduce(vals, "majority") == 0.4  # the median
    assert reduce(vals, "any") == 0.9
    # Expected best of 2 of 3: pairs (0.2, 0.4), (0.2, 0.9), (0.4, 0.9) -> (0.4 + 0.9 + 0.9) / 3.
    assert reduce(vals, "pass@2") == pytest.approx((0.4 + 0.9 + 0.9) / 3)


def test_unknown_reducer_names_the_choices() -> None:
    assert check_reducer("pass@3") == "pass@3"
    for bad in ("median", "pass@0", "pass@x", ""):
        with pytest.raises(ValueError, match="mean, majority, any or pass@K"):
            check_reducer(bad)


def test_flip_rate_counts_questions_whose_repeats_disagree() -> None:
    keys = ["a", "a", "b", "b", "c", "c", "d"]
    vals = [1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0]
    out_keys, reduced, flips = reduce_repeats(keys, vals, "mean")
    assert out_keys == ["a", "b", "c", "d"] and reduced == [0.5, 1.0, 0.0, 1.0]
    assert flips == pytest.approx(1 / 3)  # d has one repeat: not counted
    assert reduce_repeats(["a"], [1.0])[2] is None


def test_adversary_any_reducer_inflates_a_coin_flip_system() -> None:
    # A system that answers at random with p = 0.5 looks near-perfect under "any" with 8
    # repeats: the flip rate shows it is noise, and "mean" tells the truth.
    rng = np.random.default_rng(4)
    keys = [f"q{i}" for i in range(200) for _ in range(8)]
    vals = list((rng.random(1600) < 0.5).astype(float))
    _, best, flips = reduce_repeats(keys, vals, "any")
    _, mean, _ = reduce_repeats(keys, vals, "mean")
    assert np.mean(best) > 0.95 and abs(np.mean(mean) - 0.5) < 0.05
    assert flips is not None and flips > 0.95


def test_repeat_noise_widens_the_interval() -> None:
    # Same question means, but in one run every question's repeats disagree: the reduced
    # values are noisier and the clustered interval is wider.
    rng = np.random.default_rng(8)
    scopes = [f"s{i % 6}" for i in range(120)]
    truth = rng.uniform(0.3, 0.7, 120)
    steady, noisy = [], []
    for t in truth:
        steady.append(float(np.mean(np.full(4, t))))
        noisy.append(float(np.mean(np.clip(t + rng.normal(0, 0.3, 4), 0, 1))))
    assert estimate(noisy, scopes).half_width > estimate(steady, scopes).half_width  # type: ignore


def test_config_names_the_reducer_and_refuses_unknown_ones() -> None:
    from lens.core.errors import ConfigError
    from lens.data.config import ScoringConfig, parse_config

    assert ScoringConfig().repeat_reducer == "mean"
    assert ScoringConfig(repeat_reducer="pass@2").repeat_reducer == "pass@2"
    base = {"dataset": {"path": "d.json"}, "adapters": [{"name": "null"}],
            "agent": {"model": "scripted/policy"}}
    with pytest.raises(ConfigError) as err:
        parse_config({**base, "scoring": {"repeat_reducer": "best"}}, "run.yaml")
    assert "scoring.repeat_reducer" in str(err.value) and "pass@K" in str(err.value)
