"""Seeded, vectorised scope-clustered resampling, and what a resampled p-value is worth.

Seeds come from the content being resampled (question keys and values) through sha256, never
from run ids, arm names, their order or Python's salted ``hash()``: the same data gives the same
replicates in every process, under every name.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from lens.stats.intervals import small_cluster_inflation

DEFAULT_RESAMPLES = 2000
# p-values and comparison intervals: enough that the Monte Carlo error of a p-value near 0.05
# is about 0.002.
TEST_RESAMPLES = 10_000
# Rows of replicate weights built at once, to bound memory on large runs.
_CHUNK = 2000


def digest_of(*parts: object) -> bytes:
    """sha256 over parts: arrays by their float64 bytes, anything else by its text."""
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, np.ndarray):
            arr = np.ascontiguousarray(part, dtype=float)
            h.update(b"a" + str(arr.shape).encode() + arr.tobytes())
        elif isinstance(part, bytes):
            h.update(b"b" + part)
        else:
            h.update(b"s" + str(part).encode("utf-8"))
        h.update(b"\x1e")
    return h.digest()


def content_seed(kind: str, keys: Iterable[object], *columns: Sequence[float | None]) -> bytes:
    """The seed of a resampling: what is resampled (keys) and the values resampled."""
    cols = [np.array([np.nan if v is None else float(v) for v in c], dtype=float)
            for c in columns]
    return digest_of(kind, "\x1f".join(str(k) for k in keys), *cols)


def symmetric_seed(kind: str, *seeds: bytes) -> bytes:
    """One seed from several, independent of their order (paired arms A/B and B/A)."""
    return digest_of(kind, *sorted(seeds))


def rng_from(seed: bytes) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(int.from_bytes(seed[:16], "big")))


def rng_for(*labels: object) -> np.random.Generator:
    """A generator whose stream depends only on ``labels`` (stable across processes)."""
    return rng_from(digest_of(*labels))


def _seed_of(seed: bytes | None, label: str, clusters: Sequence[str], resamples: int,
             values: Sequence[float] | None = None) -> bytes:
    if seed is not None:
        return seed
    # No explicit seed: the resampled content itself (cluster labels and values) seeds it.
    cols = [values] if values is not None else []
    return digest_of("resample", label, resamples, content_seed("c", clusters, *cols))


def cluster_bootstrap_weights(
    clusters: Sequence[str],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed_label: str = "",
    seed: bytes | None = None,
    units: Sequence[str] | None = None,
    within: bool | None = None,
) -> np.ndarray:
    """How often each item is drawn in each scope-clustered bootstrap replicate: shape
    (resamples, len(clusters)). Scopes are drawn with replacement.

    ``within`` (two-stage): each time a scope is drawn, its units (questions; by default each
    item is its own unit) are drawn again, independently, with replacement — drawing a scope m
    times and then its u units each time is the same as drawing m·u units from it. Items
    sharing a unit (the repeats of a question) are drawn together. Without it a drawn scope
    keeps its questions as they are. The default (None) draws within scopes only when there is
    a single scope: with several, the scope draw already carries the within-scope variance (a
    scope's mean varies by it), and drawing questions again counts it twice, which makes
    intervals too wide (about 99% coverage for a nominal 95% when scopes do not differ)."""
    n = len(clusters)
    unit_of = list(range(n)) if units is None else list(units)
    if len(unit_of) != n:
        raise ValueError("units and clusters must have the same length")
    rng = rng_from(_seed_of(seed, seed_label, clusters, resamples))
    order = sorted(set(clusters))
    row_unit, members = _units(clusters, unit_of, order)
    k = len(order)
    picks = (rng.multinomial(k, [1 / k] * k, size=resamples) if k > 1
             else np.ones((resamples, 1), dtype=np.int64))
    if within is None:
        within = k == 1
    if not within:
        position = {c: j for j, c in enumerate(order)}
        return picks[:, np.fromiter((position[c] for c in clusters), dtype=np.int64, count=n)]
    unit_w = _unit_draws(rng, picks, [members[c] for c in order], resamples)
    if np.array_equal(row_unit, np.arange(n)):
        return unit_w
    return unit_w[:, row_unit]


def _units(clusters: Sequence[str], unit_of: Sequence[object], order: list[str]
           ) -> tuple[np.ndarray, dict[str, list[int]]]:
    """Each item's unit index (units numbered in the order they first appear), and each
    scope's unit indices."""
    unit_index: dict[tuple[str, object], int] = {}
    row_unit = np.empty(len(clusters), dtype=np.int64)
    members: dict[str, list[int]] = {c: [] for c in order}
    for i, (c, u) in enumerate(zip(clusters, unit_of, strict=True)):
        key = (c, u)
        if key not in unit_index:
            unit_index[key] = len(unit_index)
            members[c].append(unit_index[key])
        row_unit[i] = unit_index[key]
    return row_unit, members


def _unit_draws(rng: np.random.Generator, picks: np.ndarray, scope_units: list[list[int]],
                resamples: int) -> np.ndarray:
    """How often each unit is drawn in each replicate, when scope j is drawn picks[:, j] times
    and its units are drawn again each time: shape (resamples, number of units)."""
    unit_w = np.zeros((resamples, sum(len(idx) for idx in scope_units)), dtype=np.int64)
    replicates = np.arange(resamples)
    for j, idx in enumerate(scope_units):
        u = len(idx)
        # picks·u uniform draws among the scope's units for each replicate, counted at once
        # (a multinomial with equal probabilities, far faster than drawing it category-wise).
        counts = picks[:, j] * u
        draws = rng.integers(0, u, size=int(counts.sum()))
        owner = np.repeat(replicates, counts)
        counted = np.bincount(owner * u + draws, minlength=resamples * u).reshape(resamples, u)
        if idx[-1] - idx[0] == u - 1:  # the scope's units are adjacent: a slice, no scatter
            unit_w[:, idx[0]:idx[-1] + 1] = counted
        else:
            unit_w[:, idx] = counted
    return unit_w


def weighted_means(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Replicate means of ``values`` (NaN = undefined, left out) under bootstrap weights."""
    ok = np.isfinite(values)
    v = np.where(ok, values, 0.0)
    num = weights @ v
    den = weights @ ok.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def cluster_bootstrap_means(
    values: Sequence[float],
    clusters: Sequence[str],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed_label: str = "",
    seed: bytes | None = None,
) -> np.ndarray:
    """Bootstrap distribution of the mean, two-stage (see ``cluster_bootstrap_weights``):
    a scope drawn twice contributes two independent within-scope resamples."""
    vals = np.asarray(values, dtype=float)
    s = _seed_of(seed, seed_label, clusters, resamples, values)
    return replicate({"mean": lambda w: weighted_means(vals, w)}, clusters, seed=s,
                     resamples=resamples, within=True)["mean"]


def percentile_interval(dist: np.ndarray, confidence: float) -> tuple[float, float] | None:
    """The percentile interval of a bootstrap distribution (NaN replicates dropped); None when
    too many replicates were undefined for the interval to mean anything."""
    finite = dist[np.isfinite(dist)]
    if len(finite) < 0.9 * len(dist) or len(finite) < 20:
        return None
    alpha = 1 - confidence
    low, high = np.quantile(finite, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def inflate(dist: np.ndarray, point: float, k: int, confidence: float) -> np.ndarray:
    """Replicates spread about the point estimate by the small-scope-count factor, so that
    percentile intervals and p-values from few scopes are not too confident."""
    return point + small_cluster_inflation(k, confidence) * (dist - point)


@dataclass(frozen=True)
class BootTest:
    """A two-sided bootstrap p-value for "no difference" with its Monte Carlo error."""

    p_value: float
    mc_error: float
    resamples: int


def bootstrap_p(dist: np.ndarray) -> BootTest | None:
    """Twice the share of replicates on the far side of 0 (add-one so it is never 0); its
    Monte Carlo error is the binomial standard error of that share, doubled."""
    finite = dist[np.isfinite(dist)]
    r = len(finite)
    if r < 20:
        return None
    tail = min(int(np.sum(finite <= 0)), int(np.sum(finite >= 0)))
    q = (tail + 1) / (r + 1)
    p = min(1.0, 2 * q)
    return BootTest(p_value=p, mc_error=2 * math.sqrt(q * (1 - q) / r), resamples=r)



def weight_chunks(
    clusters: Sequence[str],
    *,
    seed: bytes,
    resamples: int = TEST_RESAMPLES,
    units: Sequence[str] | None = None,
    within: bool | None = None,
) -> Iterator[np.ndarray]:
    """The (replicates, items) weight matrix of a scope-clustered bootstrap, a chunk of rows at
    a time so that memory stays bounded however many replicates are asked for."""
    for start in range(0, resamples, _CHUNK):
        stop = min(resamples, start + _CHUNK)
        yield cluster_bootstrap_weights(clusters, resamples=stop - start,
                                        seed=digest_of(seed, start), units=units,
                                        within=within).astype(float)


def replicate(
    stats: Mapping[str, Callable[[np.ndarray], np.ndarray]],
    clusters: Sequence[str],
    *,
    seed: bytes,
    resamples: int = TEST_RESAMPLES,
    units: Sequence[str] | None = None,
    within: bool | None = None,
) -> dict[str, np.ndarray]:
    """Every statistic (a function of a weight matrix returning one value per replicate) over
    the same scope-clustered replicates."""
    out: dict[str, list[np.ndarray]] = {name: [] for name in stats}
    for w in weight_chunks(clusters, seed=seed, resamples=resamples, units=units,
                           within=within):
        for name, fn in stats.items():
            out[name].append(np.asarray(fn(w), dtype=float))
    return {name: np.concatenate(parts) if parts else np.empty(0)
            for name, parts in out.items()}
