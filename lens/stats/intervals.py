"""Point estimates with intervals that hold when questions of one scope are correlated.

Questions of one scope share a memory, so they are not independent: a scope where the memory
system works lifts every question of it. The information a run carries is its *effective* n,
n / (1 + (m̄ − 1)·ICC), with m̄ questions per scope and ICC the share of the variance that lies
between scopes. Every interval here is computed from scope totals, not from questions:

- the standard error of a mean is the cluster-robust (sandwich) one: the spread of scope totals
  around what the overall mean predicts for them, with the k/(k − 1) small-sample factor;
- the quantile is Student's t with k − 1 degrees of freedom (k scopes), because that standard
  error rests on k numbers, not on n;
- rates keep the Wilson score shape (bounded, asymmetric near 0 and 1) at the effective n that
  this standard error implies; where it is degenerate (every scope at the same rate, or a rate
  of 0 or 1) the effective n from the ICC stands in;
- with one scope nothing about between-scope variation can be learnt: the interval is the
  ordinary one for that scope, and the effective n is unknown.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from statistics import NormalDist
from typing import Any, TypedDict

import numpy as np

_STD_NORMAL = NormalDist()
# The exact 95% two-sided quantile (1.959964…), so that every interval lens prints at the
# default confidence is computed with the same z.
DEFAULT_Z = _STD_NORMAL.inv_cdf(0.975)
# Below this many values an interval of a continuous metric means nothing (its spread is
# itself unknown): such estimates are shown without one.
MIN_BOOTSTRAP_N = 10


def z_for(confidence: float) -> float:
    """The two-sided normal quantile for a confidence level (0.95 -> 1.959964)."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    return _STD_NORMAL.inv_cdf(0.5 + confidence / 2)


def t_for(confidence: float, df: float) -> float:
    """The two-sided Student t quantile; the normal one when df is unbounded."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if df <= 0:
        raise ValueError(f"degrees of freedom must be positive, got {df}")
    # Imported here: scipy.stats takes about a second to import, and every lens command
    # imports this module while few need a t quantile.
    from scipy import stats as sps

    return float(sps.t.ppf(0.5 + confidence / 2, df))


class EstimateJson(TypedDict):
    """An :class:`Estimate` as JSON data, its margin of error beside it."""

    n: int
    mean: float | None
    low: float | None
    high: float | None
    method: str
    clusters: int
    margin: float | None
    n_eff: float | None
    icc: float | None
    flip_rate: float | None


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its interval; ``mean`` is None when it cannot be computed.

    ``n_eff`` is the effective number of independent questions (None when it cannot be
    estimated, e.g. from one scope); ``icc`` the intra-scope correlation it rests on;
    ``flip_rate`` the share of questions whose value changed across repeats (None without
    repeats)."""

    n: int
    mean: float | None
    low: float | None
    high: float | None
    method: str
    clusters: int = 0
    n_eff: float | None = None
    icc: float | None = None
    flip_rate: float | None = None

    @property
    def half_width(self) -> float | None:
        """The margin of error: half the interval's width (the "±" figure)."""
        if self.mean is None or self.low is None or self.high is None:
            return None
        return (self.high - self.low) / 2

    def with_(self, **changes: Any) -> Estimate:
        return replace(self, **changes)

    def as_dict(self) -> EstimateJson:
        return {"n": self.n, "mean": self.mean, "low": self.low, "high": self.high,
                "method": self.method, "clusters": self.clusters,
                "margin": self.half_width, "n_eff": self.n_eff, "icc": self.icc,
                "flip_rate": self.flip_rate}


def unknown(n: int = 0, method: str = "none") -> Estimate:
    return Estimate(n=n, mean=None, low=None, high=None, method=method)


# -- rates ----------------------------------------------------------------------------------------
def wilson_bounds(p: float, n: float, z: float) -> tuple[float, float]:
    """The Wilson score interval at rate ``p`` and (possibly effective, fractional) size n."""
    z2 = z * z
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(max(0.0, p * (1 - p) / n + z2 / (4 * n * n))) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def wilson(successes: float, n: int, z: float = DEFAULT_Z) -> Estimate:
    """Wilson score interval for ``successes`` out of ``n`` independent trials."""
    if n <= 0:
        return unknown(0, "wilson")
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be within 0..n, got {successes} of {n}")
    p = successes / n
    low, high = wilson_bounds(p, n, z)
    return Estimate(n=n, mean=p, low=low, high=high, method="wilson")


def wilson_half_width(p: float, n: float, z: float = DEFAULT_Z) -> float:
    """Half the width of the Wilson interval at rate ``p`` and size ``n`` (planning tables)."""
    low, high = wilson_bounds(p, n, z)
    return (high - low) / 2


def is_binary(values: Sequence[float]) -> bool:
    return bool(values) and all(v in (0.0, 1.0) for v in values)


# -- clustering -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Clustered:
    """Values grouped by scope: scope sizes and totals, in a fixed (sorted) scope order."""

    values: np.ndarray
    sizes: np.ndarray
    totals: np.ndarray
    sumsq: np.ndarray

    @classmethod
    def of(cls, values: Sequence[float], clusters: Sequence[str]) -> Clustered:
        if len(values) != len(clusters):
            raise ValueError("values and clusters must have the same length")
        vals = np.asarray(values, dtype=float)
        order = sorted(set(clusters))
        index = {c: i for i, c in enumerate(order)}
        codes = np.fromiter((index[c] for c in clusters), dtype=np.int64, count=len(clusters))
        k = len(order)
        return cls(values=vals, sizes=np.bincount(codes, minlength=k).astype(float),
                   totals=np.bincount(codes, weights=vals, minlength=k),
                   sumsq=np.bincount(codes, weights=vals * vals, minlength=k))

    @property
    def k(self) -> int:
        return len(self.sizes)

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float:
        return float(self.totals.sum() / self.sizes.sum())

    def icc(self) -> float | None:
        """One-way ANOVA estimate of the intra-scope correlation, clipped to [0, 1]; None
        with fewer than two scopes or no within-scope replication."""
        k, n = self.k, self.n
        if k < 2 or n <= k:
            return None
        grand = self.mean
        means = self.totals / self.sizes
        ssb = float(np.sum(self.sizes * (means - grand) ** 2))
        ssw = float(np.sum(self.sumsq - self.totals * means))
        msb, msw = ssb / (k - 1), max(0.0, ssw) / (n - k)
        # The average scope size corrected for unequal sizes (Searle's n0).
        n0 = (n - float(np.sum(self.sizes ** 2)) / n) / (k - 1)
        den = msb + (n0 - 1) * msw
        if den <= 0:
            return 0.0  # every value equal: no variance, nothing shared
        return float(min(1.0, max(0.0, (msb - msw) / den)))

    def n_eff(self, icc: float | None) -> float | None:
        return effective_n(self.n, self.k, icc)

    def robust_se(self) -> float:
        """Cluster-robust standard error of the overall mean (CR1)."""
        k, total_n = self.k, self.sizes.sum()
        resid = self.totals - self.sizes * self.mean
        return math.sqrt(float(np.sum(resid ** 2)) / total_n ** 2 * k / (k - 1))


def effective_n(n: int, k: int, icc: float | None) -> float | None:
    """n / (1 + (m̄ − 1)·ICC): the independent questions n correlated ones are worth."""
    if icc is None or k < 1 or n == 0:
        return None
    return n / (1 + (n / k - 1) * icc)


def icc_of(values: Sequence[float], clusters: Sequence[str]) -> float | None:
    return Clustered.of(values, clusters).icc() if values else None


def _clip_to_unit(values: np.ndarray, low: float, high: float) -> tuple[float, float]:
    if values.size and values.min() >= 0.0 and values.max() <= 1.0:
        return max(0.0, low), min(1.0, high)
    return low, high


def _one_scope(base: Estimate, cl: Clustered, binary: bool, confidence: float) -> Estimate:
    """The interval of a single scope's mean: Wilson's for a binary metric, else Student's t."""
    n, mean = base.n, cl.mean
    if binary:
        low, high = wilson_bounds(mean, n, z_for(confidence))
        return base.with_(low=low, high=high, method="wilson (one scope)")
    if n < MIN_BOOTSTRAP_N:
        return base.with_(method="t (one scope)")
    se = float(np.std(cl.values, ddof=1)) / math.sqrt(n)
    half = t_for(confidence, n - 1) * se
    low, high = _clip_to_unit(cl.values, mean - half, mean + half)
    return base.with_(low=low, high=high, method="t (one scope)")


def clustered_estimate(
    values: Sequence[float], clusters: Sequence[str], *, confidence: float = 0.95,
) -> Estimate:
    """The mean with an interval that accounts for scopes (see the module docstring)."""
    n = len(values)
    if n == 0:
        return unknown(0, "cluster-robust")
    cl = Clustered.of(values, clusters)
    mean, k = cl.mean, cl.k
    icc = cl.icc()
    n_eff = cl.n_eff(icc)
    base = Estimate(n=n, mean=mean, low=None, high=None, method="", clusters=k, n_eff=n_eff,
                    icc=icc)
    binary = is_binary(list(cl.values))
    if k < 2:
        return _one_scope(base, cl, binary, confidence)
    tq = t_for(confidence, k - 1)
    se = cl.robust_se()
    if binary:
        if 0 < mean < 1 and se > 0:
            n_star = mean * (1 - mean) / se ** 2
            method = "wilson-clustered"
        else:
            # Degenerate spread: the design effect from the ICC sets the effective n.
            n_star = n_eff if n_eff else float(n)
            method = "wilson-deff"
        low, high = wilson_bounds(mean, n_star, tq)
        return base.with_(low=low, high=high, method=method)
    if n < MIN_BOOTSTRAP_N:
        return base.with_(method="cluster-robust-t")
    method = "cluster-robust-t"
    if se == 0 and n_eff:
        se = float(np.std(cl.values, ddof=1)) / math.sqrt(n_eff)
        method = "t-deff"
    low, high = _clip_to_unit(cl.values, mean - tq * se, mean + tq * se)
    return base.with_(low=min(low, mean), high=max(high, mean), method=method)


def estimate(
    values: Sequence[float],
    clusters: Sequence[str],
    *,
    confidence: float = 0.95,
    seed_label: str = "",
) -> Estimate:
    """The clustered estimate of a per-question metric. ``seed_label`` is accepted for older
    callers and ignored: the interval is analytic, and nothing about it depends on names."""
    del seed_label
    return clustered_estimate(values, clusters, confidence=confidence)


def bootstrap_mean(
    values: Sequence[float],
    clusters: Sequence[str],
    *,
    confidence: float = 0.95,
    resamples: int = 0,
    seed_label: str = "",
) -> Estimate:
    """The mean of a continuous quantity with its scope-clustered interval: the same as
    :func:`estimate` (the name and the ignored arguments stay for callers that predate it)."""
    del resamples, seed_label
    return clustered_estimate(values, clusters, confidence=confidence)


def small_cluster_inflation(k: int, confidence: float) -> float:
    """How much a scope-clustered percentile bootstrap interval is widened about its point:
    the bootstrap variance of k resampled scopes is (k − 1)/k of the true one, and its
    quantiles are normal where Student's t with k − 1 degrees of freedom is right."""
    if k < 2:
        return 1.0
    return math.sqrt(k / (k - 1)) * t_for(confidence, k - 1) / z_for(confidence)
