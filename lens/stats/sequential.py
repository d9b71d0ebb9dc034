"""Sequential verdicts: a paired comparison that may be read after every scope block and stopped
as soon as its answer is known, with the error rate held at every look.

The observation is one scope block's difference of the primary metric (B − A, bounded in
[−bound, bound]); questions of one scope share a memory and are one observation, not many. The
interval is a confidence sequence: a set that covers the true difference at *every* block count
at once with probability at least 1 − α, so a verdict read whenever it is first settled keeps its
error rate at α (a fixed-n t-test or bootstrap read after every block would not). Each of the
three sequences bets against every candidate value m: its wealth is a test martingale when m is
the truth, so by Ville's inequality it passes 1/α with probability at most α, ever, and the
candidates whose wealth stays below 1/α form the interval (intersected with the earlier ones).

- ``betting`` (the default): the hedged betting capital of Waudby-Smith & Ramdas (2023,
  "Estimating means of bounded random variables by betting", JRSS-B); valid for any
  differences within the bound, however skewed (most scopes slightly ahead, a few far behind),
  and for that reason slow: it needs dozens of blocks (bench/RESULTS.md, "Null suite").
- ``symmetric``: bets on an odd, clipped function of x − m; valid only when the block
  differences are symmetric about their mean, which holds when the arms' labels are
  exchangeable within a scope but not when they differ in shape with equal means: on
  bench/null_suite.py's skewed nulls it calls a winner in up to half of the comparisons.
- ``t-mixture``: Lai's (1976) scale-invariant Gaussian mixture; valid for normal differences
  only, and as wrong as ``symmetric`` on skewed ones.

With several arms, every pair of the confirmatory family gets its own sequence at α divided by
the number of pairs (Bonferroni), so all of them hold together at every look.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from lens.stats.bounded import finite_values
from lens.stats.resample import digest_of, rng_from

# Candidate means over the range of the observations: a step of 1/800 of it (0.0025 for
# differences in [-1, 1]); each interval is widened by one step, so it stays valid.
GRID_POINTS = 801
# Largest stake as a share of what a bettor can lose before its wealth reaches 0 (the paper's
# c; any c below 1 keeps the sequence valid). 0.9 rather than the paper's 1/2: measured on
# bench/null_suite.py, it settles a pair of scopes all +1 apart after 6 blocks instead of 10
# and uses 45% of a 100-block run at Δ 0.1 ± 0.15 instead of 80%.
_STAKE_CAP = 0.9
# The hedge between the bettor on "above" and the one on "below" (the paper's θ).
_HEDGE = 0.5

Verdict = Literal["better", "worse", "equivalent", "undecided"]
SETTLED: tuple[Verdict, ...] = ("better", "worse", "equivalent")


@dataclass(frozen=True)
class Look:
    """The sequence after ``blocks`` observations: their mean and the interval of the mean."""

    blocks: int
    mean: float
    low: float
    high: float


def _unit(xs: np.ndarray, bound: float) -> np.ndarray:
    return (xs + bound) / (2 * bound)


def confidence_sequence(values: Sequence[float], *, alpha: float, bound: float = 1.0,
                        grid: int = GRID_POINTS) -> list[Look]:
    """The running-intersection betting confidence sequence for the mean of ``values`` (each in
    [−bound, bound]), one ``Look`` after each value. ``P(some look misses the mean) <= alpha``
    when the values are independent draws with a common mean (scope blocks in a random order)."""
    _check(values, alpha, bound)
    xs = np.asarray(values, dtype=float)
    ys = np.clip(_unit(xs, bound), 0.0, 1.0)
    m = np.linspace(0.0, 1.0, grid)
    step = 1.0 / (grid - 1)
    log_up = np.zeros(grid)
    log_down = np.zeros(grid)
    threshold = math.log(1 / alpha)
    lo_u, hi_u = 0.0, 1.0
    total, sq = 0.0, 0.0
    looks: list[Look] = []
    with np.errstate(divide="ignore"):
        cap_up = np.where(m > 0, _STAKE_CAP / np.maximum(m, 1e-300), np.inf)
        cap_down = np.where(m < 1, _STAKE_CAP / np.maximum(1 - m, 1e-300), np.inf)
    for t, y in enumerate(ys, start=1):
        # Predictable plug-in stake: from the observations before this one only.
        var = (0.25 + sq) / t
        stake = math.sqrt(2 * math.log(2 / alpha) / (var * t * math.log(1 + t)))
        up = np.minimum(stake, cap_up)
        down = np.minimum(stake, cap_down)
        with np.errstate(divide="ignore"):
            log_up += np.log(np.maximum(1 + up * (y - m), 0.0))
            log_down += np.log(np.maximum(1 - down * (y - m), 0.0))
        hedged = np.maximum(math.log(_HEDGE) + log_up, math.log(1 - _HEDGE) + log_down)
        kept = np.flatnonzero(hedged < threshold)
        total += y
        mean_t = (0.5 + total) / (t + 1)
        sq += (y - mean_t) ** 2
        if len(kept):
            # One grid step outward: the mean may lie between two candidates. An empty
            # intersection (probability at most alpha) keeps the last nonempty interval.
            new_lo = max(lo_u, float(m[kept[0]]) - step)
            new_hi = min(hi_u, float(m[kept[-1]]) + step)
            if new_lo <= new_hi:
                lo_u, hi_u = new_lo, new_hi
        looks.append(Look(t, float(xs[:t].mean()),
                          max(-bound, 2 * bound * max(lo_u, 0.0) - bound),
                          min(bound, 2 * bound * min(hi_u, 1.0) - bound)))
    return looks


# Prior variance of the standardised effect (Δ / σ) in the Gaussian mixture: 1 spreads the
# bet over effects from small to several σ.
_EFFECT_PRIOR = 1.0
Method = Literal["symmetric", "t-mixture", "betting"]
METHODS: tuple[Method, ...] = ("betting", "symmetric", "t-mixture")
DEFAULT_METHOD: Method = "betting"
# What each sequence assumes of the scope differences, as reports state it.
ASSUMES: dict[str, str] = {
    "betting": "valid for any scope differences within the bound, however skewed",
    "symmetric": "assumes scope differences symmetric about their mean (not the default: "
                 "wrong more often than α when they are skewed)",
    "t-mixture": "assumes normal scope differences (not the default: wrong more often than α "
                 "when they are skewed)",
}


def _log_t_mixture(u: float, n: int, g: float) -> float:
    """log of the scale-invariant Gaussian mixture e-value at n observations, as a function of
    u = n·d²/V (d: distance of the mean from the candidate, V: sum of squared deviations)."""
    return 0.5 * n * (math.log1p(u) - math.log1p(u / (1 + n * g))) - 0.5 * math.log1p(n * g)


def t_mixture_sequence(values: Sequence[float], *, alpha: float, bound: float = 1.0,
                       effect_prior: float = _EFFECT_PRIOR) -> list[Look]:
    """The running-intersection confidence sequence of Lai (1976) for a Gaussian mean of
    unknown variance: the candidates whose scale-invariant mixture e-value (a normal prior of
    variance ``effect_prior`` on Δ/σ, the scale's right-Haar prior) stays below 1/α. It is a
    test martingale for every σ (Pérez-Ortiz, Lardy, de Heide & Grünwald 2024), so the
    sequence covers the mean at every look with probability at least 1 − α when the block
    differences are normal; block means of many questions are close to it, and
    bench/sequential.py measures the error on replayed scores. Clipped to [−bound, bound]."""
    _check(values, alpha, bound)
    xs = np.asarray(values, dtype=float)
    threshold = math.log(1 / alpha)
    lo, hi = -bound, bound
    looks: list[Look] = []
    for n in range(1, len(xs) + 1):
        head = xs[:n]
        mean = float(head.mean())
        ceiling = 0.5 * (n - 1) * math.log1p(n * effect_prior)
        if n >= 2 and ceiling > threshold:
            v = float(((head - mean) ** 2).sum())
            # Bisection on u: the e-value grows with the distance from the mean.
            a, b = 0.0, 1.0
            while _log_t_mixture(b, n, effect_prior) < threshold:
                b *= 2
            for _ in range(80):
                mid = (a + b) / 2
                a, b = (mid, b) if _log_t_mixture(mid, n, effect_prior) < threshold else (a, mid)
            radius = math.sqrt(b * v / n)
            new_lo, new_hi = max(lo, mean - radius), min(hi, mean + radius)
            if new_lo <= new_hi:
                lo, hi = new_lo, new_hi
        looks.append(Look(n, mean, lo, hi))
    return looks


# The symmetric sequence's bets: a first stake (prior pseudo-observation of the score) and the
# largest stake, as a share of the wealth; the scale below which a difference counts in full.
_SYM_PRIOR = 0.8
_SYM_MAX_STAKE = 0.9
_SYM_SCALE = 2.0
_SYM_FLOOR = 0.01


def symmetric_sequence(values: Sequence[float], *, alpha: float, bound: float = 1.0,
                       grid: int = GRID_POINTS) -> list[Look]:
    """The running-intersection confidence sequence for the centre of a distribution symmetric
    about it (the mean, when the block differences are symmetric), valid whatever their shape
    otherwise. For each candidate m, two bettors stake a predictable share of their wealth on
    ψ(x − m) = clip((x − m)/s, −1, 1), s being twice the standard deviation of the earlier
    blocks: ψ is odd, so under symmetry about m every bet is fair and the hedged wealth is a
    test martingale (Ville's inequality). With no true difference between arms (their labels
    exchangeable within a scope), the differences are symmetric about 0 exactly, so a
    better/worse verdict is wrong with probability at most α without any further assumption."""
    _check(values, alpha, bound)
    xs = np.asarray(values, dtype=float)
    m = np.linspace(-bound, bound, grid)
    step = 2 * bound / (grid - 1)
    log_up = np.zeros(grid)
    log_down = np.zeros(grid)
    s1 = np.zeros(grid)
    s2 = np.zeros(grid)
    threshold = math.log(1 / alpha)
    lo, hi = -bound, bound
    looks: list[Look] = []
    for t, x in enumerate(xs, start=1):
        earlier = xs[: t - 1]
        sd = float(earlier.std(ddof=1)) if t >= 3 else 0.0
        scale = max(_SYM_FLOOR * bound, _SYM_SCALE * sd)
        # Stakes from the earlier blocks only (predictable): the running ratio Σψ / Σψ² with
        # a prior pseudo-observation, a growth-rate-optimal plug-in, capped.
        up = np.clip((_SYM_PRIOR + s1) / (1 + s2), 0.0, _SYM_MAX_STAKE)
        down = np.clip((_SYM_PRIOR - s1) / (1 + s2), 0.0, _SYM_MAX_STAKE)
        psi = np.clip((x - m) / scale, -1.0, 1.0)
        log_up += np.log1p(up * psi)
        log_down += np.log1p(-down * psi)
        s1 += psi
        s2 += psi * psi
        hedged = np.maximum(math.log(_HEDGE) + log_up, math.log(1 - _HEDGE) + log_down)
        kept = np.flatnonzero(hedged < threshold)
        if len(kept):
            new_lo = max(lo, float(m[kept[0]]) - step)
            new_hi = min(hi, float(m[kept[-1]]) + step)
            if new_lo <= new_hi:
                lo, hi = new_lo, new_hi
        looks.append(Look(t, float(xs[:t].mean()), max(-bound, lo), min(bound, hi)))
    return looks


def _check(values: Sequence[float], alpha: float, bound: float) -> None:
    xs = finite_values(values, alpha, bound, "every observation")
    if np.any(np.abs(xs) > bound + 1e-12):
        raise ValueError(f"observations must lie within [-{bound}, {bound}]")


def sequence(values: Sequence[float], *, alpha: float, bound: float = 1.0,
             method: Method = "betting") -> list[Look]:
    """The confidence sequence of ``method`` (see the module's docstring)."""
    if method == "symmetric":
        return symmetric_sequence(values, alpha=alpha, bound=bound)
    if method == "t-mixture":
        return t_mixture_sequence(values, alpha=alpha, bound=bound)
    if method == "betting":
        return confidence_sequence(values, alpha=alpha, bound=bound)
    raise ValueError(f"unknown method {method!r}; use one of {', '.join(METHODS)}")


def settle(low: float, high: float, margin: float) -> Verdict:
    """What an interval of Δ = B − A says: better (above 0), worse (below 0), equivalent
    (inside ±margin, a margin of 0 never settles equivalence) or not yet known."""
    if low > 0:
        return "better"
    if high < 0:
        return "worse"
    if margin > 0 and -margin < low and high < margin:
        return "equivalent"
    return "undecided"


@dataclass(frozen=True)
class Sequential:
    """A sequential verdict on one pair: where it settled (or the last look when it did not)."""

    verdict: Verdict
    # Blocks read when it settled (all of them when it did not).
    blocks: int
    total_blocks: int
    look: Look | None
    alpha: float
    margin: float
    looks: list[Look] = field(default_factory=list)

    @property
    def share(self) -> float | None:
        return self.blocks / self.total_blocks if self.total_blocks else None


def looked_at(blocks: int, total: int, look_every: int) -> bool:
    """Whether the verdict is read after ``blocks`` blocks: every ``look_every`` and the last."""
    return blocks % look_every == 0 or blocks == total


def sequential_verdict(values: Sequence[float], *, alpha: float, margin: float,
                       look_every: int = 1, bound: float = 1.0,
                       method: Method = "betting") -> Sequential:
    """The verdict on the mean of the block differences ``values`` (in the order answered):
    the first look whose interval settles it, else undecided after the last block."""
    if look_every < 1:
        raise ValueError(f"look_every must be at least 1, got {look_every}")
    if margin < 0:
        raise ValueError(f"margin must be at least 0, got {margin}")
    total = len(values)
    if total == 0:
        return Sequential("undecided", 0, 0, None, alpha, margin)
    looks = sequence(values, alpha=alpha, bound=bound, method=method)
    for look in looks:
        if not looked_at(look.blocks, total, look_every):
            continue
        verdict = settle(look.low, look.high, margin)
        if verdict != "undecided":
            return Sequential(verdict, look.blocks, total, look, alpha, margin, looks)
    return Sequential("undecided", total, total, looks[-1], alpha, margin, looks)


def family_alpha(alpha: float, comparisons: int) -> float:
    """Each pair's α in a family of ``comparisons`` pairs (Bonferroni: valid at every look for
    the whole family, whatever the dependence between pairs)."""
    if comparisons < 1:
        raise ValueError(f"a family has at least one comparison, got {comparisons}")
    return alpha / comparisons


@dataclass(frozen=True)
class FamilyStop:
    """Where a run reading every pair of the family would stop: when all are settled."""

    pairs: dict[str, Sequential]
    blocks: int
    total_blocks: int

    @property
    def settled(self) -> bool:
        return all(s.verdict in SETTLED for s in self.pairs.values())

    @property
    def share(self) -> float | None:
        return self.blocks / self.total_blocks if self.total_blocks else None


def family_verdicts(values: Mapping[str, Sequence[float]], *, alpha: float, margin: float,
                    look_every: int = 1, bound: float = 1.0,
                    method: Method = "betting") -> FamilyStop:
    """Every pair's sequential verdict at its family-wise α, and the block at which all of them
    are settled (the run answers every arm on a block, so it stops at the last pair to
    settle)."""
    each = family_alpha(alpha, max(1, len(values)))
    pairs = {name: sequential_verdict(v, alpha=each, margin=margin, look_every=look_every,
                                      bound=bound, method=method)
             for name, v in values.items()}
    total = max((s.total_blocks for s in pairs.values()), default=0)
    return FamilyStop(pairs, max((s.blocks for s in pairs.values()), default=0), total)


def block_order(blocks: Mapping[str, object]) -> list[str]:
    """The seeded order in which scope blocks are answered: by sha256 of each block's content
    (``blocks`` maps a block's key to what it holds, e.g. its questions' texts), so renaming a
    scope changes nothing; ties (identical content) fall back to the key."""
    return sorted(blocks, key=lambda k: (hashlib.sha256(digest_of("block", blocks[k]))
                                         .hexdigest(), k))


def expected_share(delta: float, sd: float, blocks: int, *, alpha: float = 0.05,
                   margin: float = 0.0, comparisons: int = 1, look_every: int = 1,
                   method: Method = "betting", simulations: int = 400) -> float:
    """The expected share of the blocks a comparison uses before it settles, when the block
    differences have mean ``delta`` and spread ``sd`` across scopes (normal, clipped to
    [−1, 1]); the worst case is always 1 (a close call uses the whole run). Simulated with a
    generator seeded by the arguments, so the same question gets the same answer."""
    if blocks < 1:
        raise ValueError(f"blocks must be at least 1, got {blocks}")
    if sd < 0:
        raise ValueError(f"sd must be at least 0, got {sd}")
    rng = rng_from(digest_of("expected-share", delta, sd, blocks, alpha, margin, comparisons,
                             look_every, method, simulations))
    each = family_alpha(alpha, comparisons)
    used = 0
    for _ in range(simulations):
        draw = np.clip(rng.normal(delta, sd, size=blocks), -1.0, 1.0)
        used += sequential_verdict(list(draw), alpha=each, margin=margin,
                                   look_every=look_every, method=method).blocks
    return used / (simulations * blocks)


def fewest_blocks(*, alpha: float = 0.05, comparisons: int = 1, method: Method = "betting",
                  limit: int = 200) -> int | None:
    """The fewest blocks after which a pair can be settled at all (every block a difference of
    +0.5, far from 0 and alike): the best case of a sequential run; None beyond ``limit``."""
    seq = sequential_verdict([0.5] * limit, alpha=family_alpha(alpha, comparisons), margin=0.0,
                             method=method)
    return seq.blocks if seq.verdict == "better" else None
