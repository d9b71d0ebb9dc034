"""Accuracy against a cost (latency or money per question): Pareto-optimal points and the
frontier score LongMemEval-V2 defines (LAFS), written from its definition.

LAFS (the accuracy–latency frontier score of LongMemEval-V2's leaderboard) is the mean, over a
budget T drawn uniformly in log scale between ``t_min`` and ``t_max``, of the best accuracy any
point reaches at a cost of at most T (``floor`` when none does). The frontier is a step
function, so the mean is exact: a sum over the steps, each weighted by ln(right / left). A
system's LAFS gain is LAFS(reference ∪ system) − LAFS(reference): how much it raises the
frontier. LongMemEval-V2 uses 1 s and 200 s as the window and its released baselines as the
reference; a point costing no more than ``t_min`` counts from the window's start.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

# LongMemEval-V2's latency window, in seconds per question.
LATENCY_WINDOW = (1.0, 200.0)


@dataclass(frozen=True)
class Point:
    name: str
    accuracy: float
    cost: float  # latency (s) or money (USD) per question; 0 is free


def pareto_optimal(points: Sequence[Point]) -> set[str]:
    """Names of the points no other point dominates (at least as accurate for at most the
    cost, and better in one of the two)."""
    out = set()
    for p in points:
        if not any((q.accuracy >= p.accuracy and q.cost <= p.cost)
                   and (q.accuracy > p.accuracy or q.cost < p.cost) for q in points):
            out.add(p.name)
    return out


def _best_under(points: Sequence[Point], budget: float, floor: float) -> float:
    within = [p.accuracy for p in points if p.cost <= budget]
    return max(within) if within else floor


def lafs(points: Sequence[Point], t_min: float = LATENCY_WINDOW[0],
         t_max: float = LATENCY_WINDOW[1], floor: float = 0.0) -> float:
    """The frontier score of ``points`` over the budget window [t_min, t_max] (log scale)."""
    if not 0 < t_min < t_max:
        raise ValueError(f"the window needs 0 < t_min < t_max (got {t_min}, {t_max})")
    if any(p.cost < 0 or math.isnan(p.cost) for p in points):
        raise ValueError("a cost must be 0 or more")
    steps = sorted({t_min, t_max} | {p.cost for p in points if t_min < p.cost < t_max})
    area = sum(_best_under(points, left, floor) * math.log(right / left)
               for left, right in pairwise(steps))
    return area / math.log(t_max / t_min)


def lafs_gain(reference: Sequence[Point], added: Sequence[Point],
              t_min: float = LATENCY_WINDOW[0], t_max: float = LATENCY_WINDOW[1],
              floor: float = 0.0) -> float:
    """LAFS(reference ∪ added) − LAFS(reference)."""
    return (lafs([*reference, *added], t_min, t_max, floor)
            - lafs(reference, t_min, t_max, floor))
