"""Intervals for the statistics the scorer computes over a group, not per question: the
composite (weights and gate applied to the group's metric means) and longitudinal_advantage
(synthesis minus control means).

The point estimate is the scorer's own aggregate, recomputed here with its functions. The
interval comes from a scope-clustered bootstrap done as weighted means (one weight matrix for
all metrics, so a thousand replicates cost one matrix product), widened about the point for
the small number of scopes a run has (``lens.stats.small_cluster_inflation``). Repeats of a
question are drawn together, and the seed is the content resampled, never a name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

import lens.scoring.metrics as registry
from lens.runs.records import is_scored
from lens.scoring.aggregation.aggregate import aggregate_group
from lens.scoring.aggregation.composite import composite_values, resolve_weights
from lens.scoring.foundations.types import QuestionScores, RunScores
from lens.scoring.measures.differential import sides
from lens.stats import (
    MIN_BOOTSTRAP_N,
    TEST_RESAMPLES,
    Estimate,
    binom_cdf,
    bootstrap_p,
    content_seed,
    inflate,
    percentile_interval,
    symmetric_seed,
    unknown,
)
from lens.stats.resample import ReplicateWeights, weight_chunks

GROUP_RESAMPLES = 2000


def _clipped(interval: tuple[float, float] | None, metric: str, paired: bool = False
             ) -> tuple[float, float] | None:
    if interval is None:
        return None
    # The range each statistic can take: a widened interval never leaves it.
    lo, hi = registry.bounds(metric)
    if paired:
        lo, hi = lo - hi, hi - lo
    return max(lo, interval[0]), min(hi, interval[1])


@dataclass(frozen=True)
class GroupScoring:
    """How the run was scored: what the group statistics need to be recomputed."""

    weights: Mapping[str, float]
    gate_threshold: float
    tiers: frozenset[int]

    @classmethod
    def of(cls, scores: RunScores) -> GroupScoring:
        return cls(weights=resolve_weights(scores.weights or None, stored=True),
                   gate_threshold=scores.gate_threshold, tiers=frozenset(scores.tiers))

    def point(self, rows: Sequence[QuestionScores]) -> dict[str, float | None]:
        """The group statistics, and the metric means they rest on."""
        entry, _ = aggregate_group(rows, weights=self.weights, gate_threshold=self.gate_threshold,
                                   tiers=self.tiers)
        return {m: entry.get(m)
                for m in (*registry.interval_group_metrics(), *registry.question_metrics())}


class _Matrix:
    """Per-question metric values of answered rows, NaN where undefined."""

    def __init__(self, rows: Sequence[QuestionScores]) -> None:
        self.rows = list(rows)
        self.metrics = registry.question_metrics()
        answered = np.array([is_scored(r.status) for r in rows], dtype=bool)
        self.answered = answered
        vals = np.full((len(rows), len(self.metrics)), np.nan)
        for i, r in enumerate(rows):
            if not answered[i]:
                continue
            for j, m in enumerate(self.metrics):
                v = r.metrics.get(m)
                if v is not None:
                    vals[i, j] = float(v)
        self.defined = np.isfinite(vals)
        self.values = np.where(self.defined, vals, 0.0)
        # The answered synthesis and control questions (longitudinal_advantage's two sides).
        self.synth, self.control = (np.array(side, dtype=bool) for side in sides(rows))
        # Each metric's column, as a group metric's replicates read them.
        self.columns = {m: self.values[:, j] for j, m in enumerate(self.metrics)}
        self.defined_columns = {m: self.defined[:, j] for j, m in enumerate(self.metrics)}

    def means(self, w: ReplicateWeights) -> np.ndarray:
        """(replicates, metrics) weighted means; NaN where a metric has no defined value."""
        num = w @ self.values
        den = w @ self.defined.astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def _replicates(matrix: _Matrix, w: ReplicateWeights, how: GroupScoring,
                point: dict[str, float | None] | None = None) -> dict[str, np.ndarray]:
    means = matrix.means(w)
    values = {m: means[:, j] for j, m in enumerate(matrix.metrics)}
    # A replicate that draws no question a metric is defined on keeps that metric at its
    # full-sample value: otherwise it would renormalise the composite over other metrics and
    # compute another statistic than the point estimate.
    for m, v in values.items():
        full = (point or {}).get(m)
        if full is not None:
            values[m] = np.where(np.isfinite(v), v, full)
    group: dict[str, np.ndarray] = {}
    for spec in registry.group_metrics():
        if spec.group_replicates is None:
            continue
        # Scored only when its tier was: otherwise it is unknown in every replicate.
        group[spec.name] = values[spec.name] = (
            spec.group_replicates(matrix.rows, matrix.columns, matrix.defined_columns, w)
            if spec.tier in how.tiers else np.full(len(w), np.nan))
    share = (w @ matrix.answered.astype(float)) / np.maximum(w.sum(axis=1), 1e-12)
    comp = composite_values(values, how.weights, how.gate_threshold, share)
    return {registry.COMPOSITE: comp, **group}


def rows_seed(rows: Sequence[QuestionScores]) -> bytes:
    """What a group bootstrap resamples: the questions and every metric value of them."""
    keys = [(r.scope_id, r.question_id, r.repeat, r.status) for r in rows]
    cols = [[r.metrics.get(m) for r in rows] for m in registry.question_metrics()]
    return content_seed("group", keys, *cols)


def _group_reps(matrices: Sequence[_Matrix], how: GroupScoring, clusters: Sequence[str],
                units: Sequence[str], seed: bytes, resamples: int,
                points: Sequence[dict[str, float | None]]) -> list[dict[str, np.ndarray]]:
    """The group statistics of each matrix over the same replicates, a chunk at a time; each
    matrix's point estimate fills the metrics a replicate draws no question for."""
    names = registry.interval_group_metrics()
    parts: list[dict[str, list[np.ndarray]]] = [{m: [] for m in names} for _ in matrices]
    for w in weight_chunks(clusters, seed=seed, resamples=resamples, units=units):
        for out, matrix, point in zip(parts, matrices, points, strict=True):
            reps = _replicates(matrix, w, how, point)
            for m in names:
                out[m].append(reps[m])
    return [{m: np.concatenate(p[m]) for m in names} for p in parts]


def _units(rows: Sequence[QuestionScores]) -> list[str]:
    # Repeats of one question are nested in it: a replicate draws the question with them all.
    return [r.question_id for r in rows]


def group_estimates(
    rows: Sequence[QuestionScores], how: GroupScoring, *, confidence: float = 0.95,
    resamples: int = GROUP_RESAMPLES,
) -> dict[str, Estimate]:
    """The composite and longitudinal_advantage of a group, each with its interval."""
    # In key order: the order records were stored in must not change the replicates.
    rows = sorted(rows, key=lambda r: (r.scope_id, r.question_id, r.repeat))
    point = how.point(rows)
    n = sum(1 for r in rows if is_scored(r.status))
    if n == 0:
        return {m: unknown(0, "group-bootstrap") for m in registry.interval_group_metrics()}
    clusters = [r.scope_id for r in rows]
    reps = _group_reps([_Matrix(rows)], how, clusters, _units(rows), rows_seed(rows),
                       resamples, [point])[0]
    k = len(set(clusters))
    out = {}
    for m in registry.interval_group_metrics():
        mean = point[m]
        interval = (_clipped(percentile_interval(inflate(reps[m], mean, k, confidence),
                                                 confidence), m)
                    if mean is not None and n >= MIN_BOOTSTRAP_N else None)
        if mean is None:
            out[m] = unknown(n, "group-bootstrap")
        elif interval is None:
            out[m] = Estimate(n=n, mean=mean, low=None, high=None, method="group-bootstrap",
                              clusters=k)
        else:
            out[m] = Estimate(n=n, mean=mean, low=min(interval[0], mean),
                              high=max(interval[1], mean), method="group-bootstrap", clusters=k)
    return out


@dataclass(frozen=True)
class GroupPaired:
    metric: str
    n: int
    mean_a: float | None
    mean_b: float | None
    delta: Estimate
    p_value: float | None
    p_mc_error: float | None = None


def paired_group(
    rows_a: Sequence[QuestionScores], rows_b: Sequence[QuestionScores], how: GroupScoring,
    *, confidence: float = 0.95, resamples: int = TEST_RESAMPLES,
) -> dict[str, GroupPaired]:
    """Paired bootstrap of the difference (B − A) of group statistics over matched questions:
    each replicate draws the same questions for both arms. Seeded by both arms' content, the
    same whichever is A."""
    n = len(rows_a)
    clusters = [r.scope_id for r in rows_a]
    pa, pb = how.point(rows_a), how.point(rows_b)
    if n:
        seed = symmetric_seed("paired-group", rows_seed(rows_a), rows_seed(rows_b))
        ra, rb = _group_reps([_Matrix(rows_a), _Matrix(rows_b)], how, clusters,
                             _units(rows_a), seed, resamples, [pa, pb])
    out: dict[str, GroupPaired] = {}
    k = len(set(clusters))
    for m in registry.interval_group_metrics():
        a, b = pa[m], pb[m]
        if n == 0 or a is None or b is None:
            out[m] = GroupPaired(m, n, a, b, unknown(n, "paired-group-bootstrap"), None)
            continue
        delta = b - a
        dist = inflate(rb[m] - ra[m], delta, k, confidence)
        interval = (_clipped(percentile_interval(dist, confidence), m, paired=True)
                    if n >= MIN_BOOTSTRAP_N else None)
        finite = dist[np.isfinite(dist)]
        test = bootstrap_p(dist)
        if interval is None or test is None:
            est = Estimate(n=n, mean=delta, low=None, high=None,
                           method="paired-group-bootstrap", clusters=k)
            out[m] = GroupPaired(m, n, a, b, est, None)
        elif np.all(finite == finite[0]):
            est = Estimate(n=n, mean=delta, low=delta, high=delta,
                           method="paired-group-bootstrap", clusters=k)
            p = 1.0 if delta == 0 else min(1.0, 2 * binom_cdf(0, n))
            out[m] = GroupPaired(m, n, a, b, est, p, 0.0)
        else:
            est = Estimate(n=n, mean=delta, low=min(interval[0], delta),
                           high=max(interval[1], delta), method="paired-group-bootstrap",
                           clusters=k)
            out[m] = GroupPaired(m, n, a, b, est, test.p_value, test.mc_error)
    return out
