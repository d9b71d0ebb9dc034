"""A fixed-n test of "no difference" that holds for any bounded distribution of the scope
differences, however skewed: the gate every better / worse verdict of a finished run passes.

The observation is one scope's mean difference (B − A), in [−bound, bound]; scopes are the
independent units (questions of one scope share a memory). A bootstrap or a t interval over so
few units assumes the differences are roughly symmetric; when most scopes are slightly ahead and
a few far behind (equal means), they call a winner far more often than α (bench/null_suite.py).
This test bets against a mean of 0 (Waudby-Smith & Ramdas 2023, "Estimating means of bounded
random variables by betting", JRSS-B, the hedged capital at a fixed n): two bettors stake on the
mean being above and below 0, each a predictable share of its wealth, and the hedged wealth W at
the last scope has E[W] ≤ 1 when the mean is 0 whatever the distribution, so p = 1/W is a valid
p-value (Markov's inequality). The stake is capped at ``STAKE_CAP`` of what a bettor can lose:
a scope at the far end of the bound costs it 90% of its wealth, which is what makes a minority
of scopes far behind count in full.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lens.stats.resample import content_seed, rng_from

# Largest stake as a share of what a bettor can lose (the paper's c); measured on the null suite
# and on effects of 0.1–0.3 (bench/RESULTS.md, "Null suite"): 0.9 settles 0.2 ± 0.2 on 24
# scopes about half the time where 0.5 never does.
STAKE_CAP = 0.9
# The most scopes ``scopes_needed`` looks for.
_MOST_SCOPES = 100_000


@dataclass(frozen=True)
class BoundedTest:
    """The bounded-mean test of a mean difference of 0 over ``scopes`` scope differences."""

    scopes: int
    mean: float
    # Valid for any distribution within the bound (1 / the hedged wealth, at most 1).
    p_value: float


def _log_wealth(units: np.ndarray, alpha: float) -> float:
    """log of the hedged wealth against a mean of 1/2 after every value of ``units`` (the
    differences mapped to [0, 1]), each stake predictable (from the earlier values only)."""
    n = len(units)
    # Variance of the earlier values with a prior pseudo-observation at its largest (1/4).
    earlier_sq = np.concatenate(([0.25], 0.25 + np.cumsum((units - 0.5) ** 2)[:-1]))
    var = earlier_sq / np.arange(1, n + 1)
    stake = np.minimum(2 * STAKE_CAP, np.sqrt(2 * math.log(2 / alpha) / (n * var)))
    up = float(np.sum(np.log1p(stake * (units - 0.5))))
    down = float(np.sum(np.log1p(-stake * (units - 0.5))))
    return float(np.logaddexp(math.log(0.5) + up, math.log(0.5) + down))


def finite_values(values: Sequence[float], alpha: float, bound: float, what: str
                  ) -> np.ndarray:
    """``values`` as an array, once the level, the bound and every value are checked."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if bound <= 0:
        raise ValueError(f"bound must be above 0, got {bound}")
    xs = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(xs)):
        raise ValueError(f"{what} must be a finite number")
    return xs


def bounded_test(values: Sequence[float], *, alpha: float, bound: float = 1.0) -> BoundedTest:
    """The test of a mean of 0 for ``values`` (one per scope, each in [−bound, bound]); the
    stakes are tuned to ``alpha`` (the level the p-value will be read at), and the scopes are
    read in an order seeded by their values, never by their names."""
    xs = finite_values(values, alpha, bound, "every scope difference")
    if len(xs) == 0:
        return BoundedTest(0, math.nan, 1.0)
    xs = np.clip(xs, -bound, bound)
    order = rng_from(content_seed("bounded-order", [], sorted(xs.tolist()))).permutation(len(xs))
    units = (np.sort(xs)[order] + bound) / (2 * bound)
    p = min(1.0, math.exp(-_log_wealth(units, alpha)))
    return BoundedTest(len(xs), float(xs.mean()), p)


def scopes_needed(delta: float, *, alpha: float, bound: float = 1.0) -> int | None:
    """The fewest scopes on which the test can reject at ``alpha`` a mean of 0 even when every
    scope differs by exactly ``delta`` (the best case: no spread); None for a delta of 0 or
    beyond ``_MOST_SCOPES``."""
    d = min(abs(delta), bound)
    if d == 0:
        return None

    def rejects(n: int) -> bool:
        return bounded_test([d] * n, alpha=alpha, bound=bound).p_value < alpha

    hi = 1
    while not rejects(hi):
        hi *= 2
        if hi > _MOST_SCOPES:
            return None
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if rejects(mid) else (mid, hi)
    return hi
