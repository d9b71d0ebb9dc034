"""Paired comparison of two arms on matched questions: exact McNemar for 0/1 outcomes, a
scope-clustered paired bootstrap for the interval of the mean difference (and for the p-value
of continuous metrics), Holm across every test of a comparison family (``holm_by_family``
keeps the confirmatory family apart from the exploratory one)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lens.stats.intervals import MIN_BOOTSTRAP_N, Clustered, Estimate, is_binary, unknown
from lens.stats.resample import (
    TEST_RESAMPLES,
    bootstrap_p,
    content_seed,
    inflate,
    percentile_interval,
    replicate,
    symmetric_seed,
    weighted_means,
)


def binom_cdf(k: int, n: int, p: float = 0.5) -> float:
    """P(X <= k) for X ~ Binomial(n, p), exact (summed in log space to stay finite)."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if p in (0.0, 1.0):
        return 1.0 if p == 0.0 else 0.0
    lp, lq = math.log(p), math.log1p(-p)
    terms = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * lp
             + (n - i) * lq for i in range(k + 1)]
    top = max(terms)
    return min(1.0, math.exp(top) * sum(math.exp(t - top) for t in terms))


@dataclass(frozen=True)
class McNemar:
    """Exact McNemar test: only the discordant pairs carry information."""

    a_only: int  # pairs where A succeeded and B failed
    b_only: int  # pairs where B succeeded and A failed
    p_value: float


def mcnemar_exact(a: Sequence[float], b: Sequence[float]) -> McNemar:
    """Two-sided exact McNemar on paired 0/1 outcomes: 2 * P(X <= min) with X ~ Bin(d, 1/2)."""
    if len(a) != len(b):
        raise ValueError("paired samples must have the same length")
    a_only = sum(1 for x, y in zip(a, b, strict=True) if x == 1 and y == 0)
    b_only = sum(1 for x, y in zip(a, b, strict=True) if x == 0 and y == 1)
    d = a_only + b_only
    p = 1.0 if d == 0 else min(1.0, 2 * binom_cdf(min(a_only, b_only), d))
    return McNemar(a_only=a_only, b_only=b_only, p_value=p)


@dataclass(frozen=True)
class PairedResult:
    metric: str
    n: int
    mean_a: float | None
    mean_b: float | None
    delta: Estimate  # mean of (b - a) with its interval
    p_value: float | None
    test: str
    p_holm: float | None = None
    # Monte Carlo standard error of p_value (0 for exact tests, None without a p-value).
    p_mc_error: float | None = None


def delta_from_replicates(
    deltas: np.ndarray, dist: np.ndarray, clusters: Sequence[str], *, confidence: float,
    method: str = "paired-bootstrap",
) -> tuple[Estimate, float | None, float | None]:
    """The interval and two-sided p-value of a mean difference from its bootstrap replicates
    (``deltas`` are the per-question differences, NaN where undefined)."""
    ok = np.isfinite(deltas)
    d = deltas[ok]
    cl = [c for c, keep in zip(clusters, ok, strict=True) if keep]
    n = len(d)
    if n == 0:
        return unknown(0, method), None, None
    mean = float(d.mean())
    grouped = Clustered.of(list(d), cl)
    icc = grouped.icc()
    base = Estimate(n=n, mean=mean, low=None, high=None, method=method, clusters=grouped.k,
                    n_eff=grouped.n_eff(icc), icc=icc)
    if n == 1 or bool(np.all(d == d[0])):
        # No spread to resample: the interval collapses, and every delta has the same sign,
        # so the exact sign test gives the p-value.
        p = 1.0 if mean == 0 else min(1.0, 2 * binom_cdf(0, n))
        return base.with_(low=mean, high=mean), p, 0.0
    if n < MIN_BOOTSTRAP_N:
        return base, None, None
    return _bootstrapped(base, d, dist, mean, confidence)


def _bootstrapped(base: Estimate, d: np.ndarray, dist: np.ndarray, mean: float,
                  confidence: float) -> tuple[Estimate, float | None, float | None]:
    """The percentile interval and p-value of the replicates, widened for few scopes."""
    spread = inflate(dist, mean, base.clusters, confidence)
    interval = percentile_interval(spread, confidence)
    test = bootstrap_p(spread)
    if interval is None or test is None:
        return base, None, None
    low, high = interval
    if np.all(np.abs(d) <= 1.0):
        # Differences of metrics in [0, 1]: a widened interval never leaves [-1, 1].
        low, high = max(-1.0, low), min(1.0, high)
    est = base.with_(low=min(low, mean), high=max(high, mean))
    return est, test.p_value, test.mc_error


def paired_bootstrap(
    deltas: Sequence[float],
    clusters: Sequence[str],
    *,
    confidence: float = 0.95,
    resamples: int = TEST_RESAMPLES,
    seed: bytes | None = None,
    seed_label: str = "",
) -> tuple[Estimate, float | None, float | None]:
    """Interval of the mean per-question delta, a two-sided bootstrap p-value for 0 and its
    Monte Carlo error. Seeded by the deltas themselves unless ``seed`` is given; ``seed_label``
    is accepted for older callers and ignored."""
    del seed_label
    d = np.asarray(deltas, dtype=float)
    if len(d) == 0:
        return unknown(0, "paired-bootstrap"), None, None
    s = seed if seed is not None else content_seed("paired-deltas", clusters, d.tolist())
    dist = replicate({"m": lambda w: weighted_means(d, w)}, clusters, seed=s,
                     resamples=resamples)["m"]
    return delta_from_replicates(d, dist, clusters, confidence=confidence)


def pair_seed(keys: Sequence[object], a: Sequence[float | None],
              b: Sequence[float | None]) -> bytes:
    """A seed from both arms' values on the matched questions, the same for (A, B) and (B, A)."""
    return symmetric_seed("pair", content_seed("arm", keys, a), content_seed("arm", keys, b))


def paired_compare(
    metric: str,
    a: Sequence[float],
    b: Sequence[float],
    clusters: Sequence[str],
    *,
    confidence: float = 0.95,
    seed: bytes | None = None,
    seed_label: str = "",
    resamples: int = TEST_RESAMPLES,
    dist: np.ndarray | None = None,
) -> PairedResult:
    """Compare B against A on matched questions (delta = B − A). ``dist`` may carry replicates
    of the mean delta computed elsewhere (on a shared replicate plan); else they are drawn here,
    seeded by both arms' values."""
    del seed_label
    n = len(a)
    if n == 0:
        return PairedResult(metric, 0, None, None, unknown(0, "paired"), None, "none")
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    deltas = xb - xa
    if dist is None:
        s = seed if seed is not None else pair_seed(clusters, a, b)
        dist = replicate({"m": lambda w: weighted_means(deltas, w)}, clusters, seed=s,
                         resamples=resamples)["m"]
    est, p_boot, mc = delta_from_replicates(deltas, dist, clusters, confidence=confidence)
    mean_a, mean_b = float(xa.mean()), float(xb.mean())
    if is_binary([*a, *b]):
        mc_test = mcnemar_exact(a, b)
        return PairedResult(metric, n, mean_a, mean_b, est, mc_test.p_value, "mcnemar-exact",
                            p_mc_error=0.0)
    return PairedResult(metric, n, mean_a, mean_b, est, p_boot, "paired-bootstrap",
                        p_mc_error=mc)


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm step-down adjusted p-values (None stays None and is not counted)."""
    present = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(present)
    out: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(present):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out


def holm_by_family(p_values: Sequence[float | None],
                   families: Sequence[str]) -> list[float | None]:
    """Holm's correction run separately within each family of tests (``families[i]`` names the
    family of ``p_values[i]``): a confirmatory test is corrected only for the tests of its own
    question, never for the exploratory ones read beside it."""
    if len(p_values) != len(families):
        raise ValueError("one family per p-value")
    out: list[float | None] = [None] * len(p_values)
    for family in dict.fromkeys(families):
        idx = [i for i, f in enumerate(families) if f == family]
        for i, p in zip(idx, holm([p_values[i] for i in idx]), strict=True):
            out[i] = p
    return out


def holm_mc_error(p: float | None, p_holm: float | None, mc: float | None) -> float | None:
    """The Monte Carlo error of a Holm-adjusted p-value: the raw error scaled as the p-value
    was (the adjustment multiplies it by at most the number of tests)."""
    if p is None or p_holm is None or mc is None:
        return None
    if p <= 0:
        return mc
    return mc * min(p_holm / p, 1e6)
