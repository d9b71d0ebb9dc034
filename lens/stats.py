"""Honest statistics: every estimate lens prints comes with the uncertainty it deserves.

- Rates get a Wilson score interval (good coverage at small n and near 0 or 1).
- Continuous metrics get a bootstrap interval that resamples by scope, then by question within
  the drawn scopes, because questions of one scope share a memory and are not independent.
- Two runs on the same questions are compared pairwise: exact McNemar for binary outcomes, a
  clustered paired bootstrap of per-question deltas for continuous ones, Holm across metrics.
- Sample sizes for two proportions, and the margin of error a given n buys.

Random draws are seeded from a label through sha256, never Python's salted ``hash()``, so the
same inputs give the same intervals in every process.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

_STD_NORMAL = NormalDist()
# The exact 95% two-sided quantile (1.959964…), so that every interval lens prints at the
# default confidence is computed with the same z.
DEFAULT_Z = _STD_NORMAL.inv_cdf(0.975)
DEFAULT_RESAMPLES = 2000
# Below this many values a percentile bootstrap interval is too narrow to mean anything (it
# collapses to a point at n = 1): such estimates are shown without an interval.
MIN_BOOTSTRAP_N = 10


def z_for(confidence: float) -> float:
    """The two-sided normal quantile for a confidence level (0.95 -> 1.959964)."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    return _STD_NORMAL.inv_cdf(0.5 + confidence / 2)


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its interval; ``mean`` is None when it cannot be computed."""

    n: int
    mean: float | None
    low: float | None
    high: float | None
    method: str
    clusters: int = 0

    @property
    def half_width(self) -> float | None:
        """The margin of error: half the interval's width (the "±" figure)."""
        if self.mean is None or self.low is None or self.high is None:
            return None
        return (self.high - self.low) / 2

    def as_dict(self) -> dict[str, Any]:
        return {"n": self.n, "mean": self.mean, "low": self.low, "high": self.high,
                "method": self.method, "clusters": self.clusters,
                "margin": self.half_width}


def unknown(n: int = 0, method: str = "none") -> Estimate:
    return Estimate(n=n, mean=None, low=None, high=None, method=method)


# -- rates ----------------------------------------------------------------------------------------
def wilson(successes: float, n: int, z: float = DEFAULT_Z) -> Estimate:
    """Wilson score interval for ``successes`` out of ``n``."""
    if n <= 0:
        return unknown(0, "wilson")
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be within 0..n, got {successes} of {n}")
    p = successes / n
    z2 = z * z
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    return Estimate(n=n, mean=p, low=max(0.0, centre - half), high=min(1.0, centre + half),
                    method="wilson")


def wilson_half_width(p: float, n: int, z: float = DEFAULT_Z) -> float:
    """Half the width of the Wilson interval at rate ``p`` and size ``n`` (planning tables)."""
    est = wilson(p * n, n, z)
    assert est.low is not None and est.high is not None
    return (est.high - est.low) / 2


def is_binary(values: Sequence[float]) -> bool:
    return bool(values) and all(v in (0.0, 1.0) for v in values)


# -- seeded resampling ----------------------------------------------------------------------------
def rng_for(*labels: object) -> np.random.Generator:
    """A generator whose stream depends only on ``labels`` (stable across processes)."""
    digest = hashlib.sha256("\x1f".join(str(x) for x in labels).encode("utf-8")).digest()
    return np.random.Generator(np.random.PCG64(int.from_bytes(digest[:16], "big")))


def _group(values: Sequence[float], clusters: Sequence[str]) -> list[np.ndarray]:
    if len(values) != len(clusters):
        raise ValueError("values and clusters must have the same length")
    groups: dict[str, list[float]] = {}
    for v, c in zip(values, clusters, strict=True):
        groups.setdefault(c, []).append(float(v))
    return [np.asarray(groups[k], dtype=float) for k in sorted(groups)]


def cluster_bootstrap_means(
    values: Sequence[float],
    clusters: Sequence[str],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed_label: str = "",
) -> np.ndarray:
    """Bootstrap distribution of the mean, two-stage: draw clusters with replacement, then
    questions with replacement inside each drawn cluster. With one cluster this is the ordinary
    bootstrap; with many it carries the between-scope variance that an i.i.d. bootstrap hides."""
    groups = _group(values, clusters)
    rng = rng_for("cluster-bootstrap", seed_label, len(values), resamples)
    k = len(groups)
    # Within-cluster resample sums for every replicate: shape (k, resamples).
    sums = np.empty((k, resamples))
    sizes = np.empty(k)
    for j, g in enumerate(groups):
        idx = rng.integers(0, len(g), size=(resamples, len(g)))
        sums[j] = g[idx].sum(axis=1)
        sizes[j] = len(g)
    if k == 1:
        return sums[0] / sizes[0]
    pick = rng.integers(0, k, size=(resamples, k))
    cols = np.arange(resamples)[:, None]
    total = sums[pick, cols].sum(axis=1)
    count = sizes[pick].sum(axis=1)
    return total / count


def cluster_bootstrap_weights(
    clusters: Sequence[str],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed_label: str = "",
) -> np.ndarray:
    """How often each item is drawn in each two-stage bootstrap replicate: shape
    (resamples, len(clusters)). Drawing a cluster m times and then its n items with replacement
    each time is the same as drawing m * n items from it, so one multinomial per cluster does."""
    order = sorted(set(clusters))
    index = {c: [i for i, x in enumerate(clusters) if x == c] for c in order}
    rng = rng_for("cluster-weights", seed_label, len(clusters), resamples)
    k = len(order)
    picks = (rng.multinomial(k, [1 / k] * k, size=resamples) if k > 1
             else np.ones((resamples, 1), dtype=np.int64))
    weights = np.zeros((resamples, len(clusters)))
    for j, c in enumerate(order):
        members = index[c]
        n_c = len(members)
        draws = rng.multinomial(picks[:, j] * n_c, [1 / n_c] * n_c)
        weights[:, members] = draws
    return weights


def percentile_interval(dist: np.ndarray, confidence: float) -> tuple[float, float] | None:
    """The percentile interval of a bootstrap distribution (NaN replicates dropped); None when
    too many replicates were undefined for the interval to mean anything."""
    finite = dist[np.isfinite(dist)]
    if len(finite) < 0.9 * len(dist) or len(finite) < 20:
        return None
    alpha = 1 - confidence
    low, high = np.quantile(finite, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def bootstrap_mean(
    values: Sequence[float],
    clusters: Sequence[str],
    *,
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed_label: str = "",
) -> Estimate:
    """Mean with a percentile interval from the clustered bootstrap."""
    n = len(values)
    if n == 0:
        return unknown(0, "bootstrap")
    mean = float(np.mean(np.asarray(values, dtype=float)))
    k = len(set(clusters))
    if n < MIN_BOOTSTRAP_N:
        return Estimate(n=n, mean=mean, low=None, high=None, method="bootstrap", clusters=k)
    dist = cluster_bootstrap_means(values, clusters, resamples=resamples, seed_label=seed_label)
    alpha = 1 - confidence
    low, high = np.quantile(dist, [alpha / 2, 1 - alpha / 2])
    return Estimate(n=n, mean=mean, low=float(min(low, mean)), high=float(max(high, mean)),
                    method="cluster-bootstrap" if k > 1 else "bootstrap", clusters=k)


def estimate(
    values: Sequence[float],
    clusters: Sequence[str],
    *,
    confidence: float = 0.95,
    seed_label: str = "",
) -> Estimate:
    """Wilson for 0/1 outcomes, clustered bootstrap otherwise."""
    if is_binary(values):
        est = wilson(sum(values), len(values), z_for(confidence))
        return Estimate(n=est.n, mean=est.mean, low=est.low, high=est.high, method="wilson",
                        clusters=len(set(clusters)))
    return bootstrap_mean(values, clusters, confidence=confidence, seed_label=seed_label)


# -- paired comparison ----------------------------------------------------------------------------
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


def paired_bootstrap(
    deltas: Sequence[float],
    clusters: Sequence[str],
    *,
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed_label: str = "",
) -> tuple[Estimate, float | None]:
    """Interval of the mean per-question delta, and a two-sided bootstrap p-value for 0."""
    n = len(deltas)
    if n == 0:
        return unknown(0, "paired-bootstrap"), None
    mean = float(np.mean(np.asarray(deltas, dtype=float)))
    if n == 1 or all(d == deltas[0] for d in deltas):
        # No spread to resample: the interval collapses. Every delta has the same sign, so the
        # exact sign test gives the p-value.
        p = 1.0 if mean == 0 else min(1.0, 2 * binom_cdf(0, n))
        return Estimate(n=n, mean=mean, low=mean, high=mean, method="paired-bootstrap",
                        clusters=len(set(clusters))), p
    if n < MIN_BOOTSTRAP_N:
        return Estimate(n=n, mean=mean, low=None, high=None, method="paired-bootstrap",
                        clusters=len(set(clusters))), None
    dist = cluster_bootstrap_means(deltas, clusters, resamples=resamples, seed_label=seed_label)
    alpha = 1 - confidence
    low, high = np.quantile(dist, [alpha / 2, 1 - alpha / 2])
    below = int(np.sum(dist <= 0))
    above = int(np.sum(dist >= 0))
    p = min(1.0, 2 * (min(below, above) + 1) / (len(dist) + 1))
    est = Estimate(n=n, mean=mean, low=float(min(low, mean)), high=float(max(high, mean)),
                   method="paired-bootstrap", clusters=len(set(clusters)))
    return est, p


def paired_compare(
    metric: str,
    a: Sequence[float],
    b: Sequence[float],
    clusters: Sequence[str],
    *,
    confidence: float = 0.95,
    seed_label: str = "",
) -> PairedResult:
    """Compare B against A on matched questions (delta = B - A)."""
    n = len(a)
    if n == 0:
        return PairedResult(metric, 0, None, None, unknown(0, "paired"), None, "none")
    deltas = [float(y) - float(x) for x, y in zip(a, b, strict=True)]
    est, p_boot = paired_bootstrap(deltas, clusters, confidence=confidence,
                                   seed_label=f"{seed_label}|{metric}")
    mean_a = float(np.mean(np.asarray(a, dtype=float)))
    mean_b = float(np.mean(np.asarray(b, dtype=float)))
    if is_binary([*a, *b]):
        mc = mcnemar_exact(a, b)
        return PairedResult(metric, n, mean_a, mean_b, est, mc.p_value, "mcnemar-exact")
    return PairedResult(metric, n, mean_a, mean_b, est, p_boot, "paired-bootstrap")


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


# -- planning -------------------------------------------------------------------------------------
def sample_size_two_proportions(
    p1: float, p2: float, *, alpha: float = 0.05, power: float = 0.8
) -> int:
    """Questions per arm to detect p1 vs p2 with a two-sided test (pooled-variance normal
    approximation, no continuity correction)."""
    if not (0 < p1 < 1 and 0 < p2 < 1):
        raise ValueError("rates must be strictly between 0 and 1")
    if p1 == p2:
        raise ValueError("the two rates must differ")
    if not (0 < alpha < 1 and 0 < power < 1):
        raise ValueError("alpha and power must be in (0, 1)")
    za = _STD_NORMAL.inv_cdf(1 - alpha / 2)
    zb = _STD_NORMAL.inv_cdf(power)
    pbar = (p1 + p2) / 2
    num = za * math.sqrt(2 * pbar * (1 - pbar)) + zb * math.sqrt(p1 * (1 - p1) + p2 * (1 - p2))
    return math.ceil(num * num / (p1 - p2) ** 2)


def planning_table(
    baseline: float, deltas: Sequence[float], *, alpha: float = 0.05, power: float = 0.8
) -> list[dict[str, float | int]]:
    """Per-arm sample sizes to tell ``baseline`` from baseline + delta and from
    baseline - delta (each where it stays a rate strictly between 0 and 1)."""
    rows: list[dict[str, float | int]] = []
    for d in deltas:
        for other in (baseline + d, baseline - d):
            if not 0 < other < 1:
                continue
            rows.append({"baseline": baseline, "other": round(other, 6), "delta": d,
                         "per_arm": sample_size_two_proportions(baseline, other, alpha=alpha,
                                                                power=power)})
    return rows


def margin_table(p: float, sizes: Sequence[int], z: float = DEFAULT_Z) -> list[dict[str, float]]:
    """The Wilson margin of error at rate ``p`` for each sample size."""
    return [{"n": n, "p": p, "margin": wilson_half_width(p, n, z)} for n in sizes]


# -- comparability --------------------------------------------------------------------------------
# The adapter is what a comparison varies; every other field of the condition must match.
TREATMENT_FIELDS = frozenset({"adapters"})


def condition_differences(
    conditions: Sequence[Mapping[str, Any]],
    *,
    allow: frozenset[str] = TREATMENT_FIELDS,
) -> list[str]:
    """Fields of the run condition whose values are not the same in every run."""
    if len(conditions) < 2:
        return []
    keys = sorted(set().union(*(c.keys() for c in conditions)) - allow)
    sentinel = object()
    return [k for k in keys
            if any(c.get(k, sentinel) != conditions[0].get(k, sentinel) for c in conditions[1:])]
