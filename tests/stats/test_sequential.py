"""Sequential verdicts (lens.stats.sequential): the confidence sequences cover the mean at every
look at the stated rate under simulation, known answers computed by hand, the verdict rule, the
family's α, the seeded block order and the expected share of blocks."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from lens.stats.resample import rng_for
from lens.stats.sequential import (
    block_order,
    confidence_sequence,
    expected_share,
    family_alpha,
    family_verdicts,
    fewest_blocks,
    sequence,
    sequential_verdict,
    settle,
    symmetric_sequence,
    t_mixture_sequence,
)


def _miss_rate(method: str, draw, mean: float, alpha: float, reps: int, n: int) -> float:
    rng = rng_for("coverage", method, mean, alpha)
    misses = 0
    for _ in range(reps):
        looks = sequence(list(draw(rng, n)), alpha=alpha, method=method)  # type: ignore[arg-type]
        misses += any(not look.low <= mean <= look.high for look in looks)
    return misses / reps


def test_t_mixture_covers_a_normal_mean_at_every_look() -> None:
    # 600 sequences of 30 blocks: the share that ever miss stays within α plus 3 standard
    # errors of a rate (the Gaussian mixture is exact for normal data, and conservative).
    alpha = 0.1
    rate = _miss_rate("t-mixture", lambda r, n: r.normal(0.15, 0.2, n), 0.15, alpha, 600, 30)
    assert rate <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / 600)


def test_betting_covers_a_bounded_skewed_mean_at_every_look() -> None:
    # Differences that are −1 one time in ten and +0.2 otherwise (mean 0.08): the betting
    # sequence assumes only the bound.
    def draw(r: np.random.Generator, n: int) -> np.ndarray:
        return np.where(r.random(n) < 0.1, -1.0, 0.2)
    alpha = 0.1
    rate = _miss_rate("betting", draw, 0.08, alpha, 300, 40)
    assert rate <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / 300)


def test_symmetric_covers_a_symmetric_non_normal_centre_at_every_look() -> None:
    # Scope differences from a few discrete values, symmetric about 0.1: far from normal, the
    # shape a relabelled arm gives. The symmetric sequence assumes only the symmetry.
    def draw(r: np.random.Generator, n: int) -> np.ndarray:
        return 0.1 + r.choice([-0.3, -0.2, -0.05, 0.05, 0.2, 0.3], n)
    alpha = 0.1
    rate = _miss_rate("symmetric", draw, 0.1, alpha, 400, 40)
    assert rate <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / 400)


def test_symmetric_known_answers() -> None:
    # Every difference of one sign and far from 0: the upward bettor's stakes are 0.8, then
    # 0.9 (the cap), on ψ = 1 for every candidate below the data; at α = 0.05 the hedged wealth
    # ½ · 1.8 · 1.9^(t−1) passes 20 at t = 6 (½·1.8·1.9⁴ = 11.7, ½·1.8·1.9⁵ = 22.3).
    looks = symmetric_sequence([0.5] * 8, alpha=0.05)
    assert [look.low > 0 for look in looks] == [False] * 5 + [True] * 3
    # Sign-flipped data, mirrored interval.
    xs = list(rng_for("mirror-sym").uniform(-0.3, 0.6, 25))
    a = symmetric_sequence(xs, alpha=0.1)[-1]
    b = symmetric_sequence([-x for x in xs], alpha=0.1)[-1]
    assert a.low == pytest.approx(-b.high, abs=6e-3) and a.high == pytest.approx(-b.low,
                                                                                 abs=6e-3)


def test_t_mixture_known_answer_at_two_blocks() -> None:
    # n = 2, g = 1: the e-value is (1+u)/(1+u/3)/√3 with u = n·d²/V; at α = 0.9 it reaches
    # 1/α where (1+u) = k(1+u/3), k = √3/0.9, so u = (k−1)/(1−k/3).
    k = math.sqrt(3) / 0.9
    u = (k - 1) / (1 - k / 3)
    v = (0.1 - 0.2) ** 2 + (0.3 - 0.2) ** 2
    radius = math.sqrt(u * v / 2)
    looks = t_mixture_sequence([0.1, 0.3], alpha=0.9)
    assert (looks[0].low, looks[0].high) == (-1.0, 1.0)
    assert looks[1].mean == pytest.approx(0.2)
    assert looks[1].low == pytest.approx(0.2 - radius, abs=1e-9)
    assert looks[1].high == pytest.approx(0.2 + radius, abs=1e-9)
    # At α = 0.05 two blocks can never reject anything: the e-value is at most √3.
    assert (t_mixture_sequence([0.1, 0.3], alpha=0.05)[1].low,
            t_mixture_sequence([0.1, 0.3], alpha=0.05)[1].high) == (-1.0, 1.0)


def test_betting_known_answers() -> None:
    # One observation 0.9 (0.95 on [0, 1]) at α = 0.5: the first stake is
    # √(2·log 4 / (¼·log 2)) = 4, capped at 0.9/m (below m = 0.225 the cap does not bind); the
    # upward bettor's wealth 1 + 4(0.95 − m) reaches 2/(½) = 4 for every m up to 0.2 (above
    # 0.225 the capped wealth 0.1 + 0.855/m stays below 4), so the interval starts there (one
    # grid step outward) and keeps the top of the range.
    first = confidence_sequence([0.9], alpha=0.5)[0]
    assert first.low == pytest.approx(2 * 0.2 - 1, abs=2.1e-3)
    assert first.high == 1.0
    # Twenty blocks all at +1: the lower bound rises and passes 0.
    lows = [look.low for look in confidence_sequence([1.0] * 20, alpha=0.05)]
    assert lows == sorted(lows) and lows[-1] > 0
    # Mirrored data, mirrored interval.
    xs = list(rng_for("mirror").uniform(-0.3, 0.6, 25))
    a, b = confidence_sequence(xs, alpha=0.1)[-1], confidence_sequence([-x for x in xs],
                                                                        alpha=0.1)[-1]
    assert a.low == pytest.approx(-b.high, abs=2e-3) and a.high == pytest.approx(-b.low,
                                                                                 abs=2e-3)


def test_sequences_shrink_and_are_nested() -> None:
    xs = list(np.clip(rng_for("nested").normal(0.1, 0.15, 40), -1, 1))
    for method in ("symmetric", "t-mixture", "betting"):
        looks = sequence(xs, alpha=0.05, method=method)  # type: ignore[arg-type]
        for before, after in itertools.pairwise(looks):
            assert before.low <= after.low <= after.high <= before.high


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="within"):
        sequence([1.5], alpha=0.05)
    with pytest.raises(ValueError, match="alpha"):
        sequence([0.1], alpha=0.0)
    with pytest.raises(ValueError, match="finite"):
        sequence([float("nan")], alpha=0.05)
    with pytest.raises(ValueError, match="unknown method"):
        sequence([0.1], alpha=0.05, method="z")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="look_every"):
        sequential_verdict([0.1], alpha=0.05, margin=0.0, look_every=0)


def test_settle_rule() -> None:
    assert settle(0.01, 0.2, 0.05) == "better"
    assert settle(-0.2, -0.01, 0.05) == "worse"
    assert settle(-0.04, 0.03, 0.05) == "equivalent"
    assert settle(-0.04, 0.06, 0.05) == "undecided"
    # A margin of 0 never settles equivalence.
    assert settle(-0.0, 0.0, 0.0) == "undecided"


def test_verdict_stops_at_the_first_settling_look() -> None:
    xs = [0.3, 0.32, 0.28, 0.31, 0.29, 0.3, 0.33, 0.27, 0.3, 0.31] * 4
    seq = sequential_verdict(xs, alpha=0.05, margin=0.05)
    assert seq.verdict == "better" and seq.blocks < len(xs)
    assert seq.look is not None and seq.look.low > 0
    assert seq.look == next(look for look in seq.looks if look.low > 0)
    # Looking every 4 blocks stops at the next multiple of 4 at or after that block.
    every4 = sequential_verdict(xs, alpha=0.05, margin=0.05, look_every=4)
    assert every4.blocks == 4 * math.ceil(seq.blocks / 4)
    # Never settled: all blocks, undecided.
    close = sequential_verdict([0.02, -0.03, 0.04, -0.01, 0.0], alpha=0.05, margin=0.05)
    assert (close.verdict, close.blocks, close.share) == ("undecided", 5, 1.0)


def test_family_splits_alpha_and_stops_at_the_last_pair() -> None:
    assert family_alpha(0.05, 3) == pytest.approx(0.05 / 3)
    with pytest.raises(ValueError):
        family_alpha(0.05, 0)
    clear = [0.3, 0.32, 0.28, 0.31, 0.29, 0.3, 0.33, 0.27, 0.3, 0.31] * 6
    slower = [0.12, 0.2, 0.1, 0.18, 0.09, 0.15, 0.2, 0.11, 0.14, 0.16] * 6
    stop = family_verdicts({"x": clear, "y": slower}, alpha=0.05, margin=0.02)
    assert stop.pairs["x"].alpha == pytest.approx(0.025)
    assert stop.blocks == max(s.blocks for s in stop.pairs.values())
    assert stop.settled and stop.share == stop.blocks / 60
    # Alone at the full α, the clear pair settles no later than in the family.
    alone = sequential_verdict(clear, alpha=0.05, margin=0.02)
    assert alone.blocks <= stop.pairs["x"].blocks


def test_block_order_follows_content_not_names() -> None:
    content = {"s1": ["q a", "q b"], "s2": ["q c"], "s3": ["q d", "q e"]}
    order = block_order(content)
    renamed = block_order({f"renamed-{k}": v for k, v in content.items()})
    assert [f"renamed-{k}" for k in order] == renamed
    assert sorted(order) == sorted(content)


def test_expected_share_is_seeded_and_falls_with_the_effect() -> None:
    small = expected_share(0.05, 0.1, 20, alpha=0.05, simulations=60)
    large = expected_share(0.3, 0.1, 20, alpha=0.05, simulations=60)
    assert large < small <= 1.0
    assert expected_share(0.3, 0.1, 20, alpha=0.05, simulations=60) == large


def test_fewest_blocks_is_the_sign_test_bound() -> None:
    # Betting (the default): every block +0.5 settles after 10 blocks, 13 for three pairs.
    # No test valid for every distribution within [−1, 1] can do better: a mean of 0 with a
    # third of the scopes at −1 and the rest at +0.5 gives 9 blocks all at +0.5 with probability
    # (2/3)^9 > 0.025.
    assert fewest_blocks(alpha=0.05) == 10
    assert fewest_blocks(alpha=0.05, comparisons=3) == 13
    # Symmetric: ½·1.8·1.9^(t−1) passes 1/α at t = 6 for one pair (α = 0.05) and t = 8 for
    # three (α/3); no test valid under symmetry alone can do better than 6 signs in a row
    # (2·2⁻⁶ < 0.05 ≤ 2·2⁻⁵).
    assert fewest_blocks(alpha=0.05, method="symmetric") == 6
    assert fewest_blocks(alpha=0.05, comparisons=3, method="symmetric") == 8
    # Lai's mixture: ((n−1)/2)·log(1+n) must pass log(60): n = 6.
    assert fewest_blocks(alpha=0.05, comparisons=3, method="t-mixture") == 6
