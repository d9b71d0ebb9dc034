"""Sample sizes for two proportions, the margin of error a given n buys, and both in terms of
questions *and* scopes when questions of one scope are correlated (design effect)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist
from typing import TypedDict

from lens.stats.intervals import DEFAULT_Z, wilson_half_width

_STD_NORMAL = NormalDist()


def sample_size_two_proportions(
    p1: float, p2: float, *, alpha: float = 0.05, power: float = 0.8
) -> int:
    """Independent questions per arm to detect p1 vs p2 with a two-sided test (pooled-variance
    normal approximation, no continuity correction)."""
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


def design_effect(icc: float, per_scope: int) -> float:
    """How many correlated questions one independent question is worth: 1 + (m − 1)·ICC."""
    if not 0 <= icc <= 1:
        raise ValueError(f"icc must be within [0, 1], got {icc}")
    if per_scope < 1:
        raise ValueError(f"per_scope must be at least 1, got {per_scope}")
    return 1 + (per_scope - 1) * icc


def clustered_size(independent: int, icc: float = 0.0,
                   per_scope: int | None = None) -> tuple[int, int | None]:
    """(questions, scopes) per arm that carry the information of ``independent`` independent
    questions, with ``per_scope`` questions in each scope. Without per_scope (ICC must then be
    0) the scopes are unknown."""
    if per_scope is None:
        if icc > 0:
            raise ValueError("an ICC above 0 needs the number of questions per scope")
        return independent, None
    scopes = math.ceil(independent * design_effect(icc, per_scope) / per_scope)
    return scopes * per_scope, scopes


class PlanningRow(TypedDict):
    """One line of :func:`planning_table`: the sizes per arm to tell ``baseline`` from
    ``other``."""

    baseline: float
    other: float
    delta: float
    per_arm: int
    independent: int
    scopes: int | None


class MarginRow(TypedDict):
    n: int
    p: float
    n_eff: float
    margin: float


def planning_table(
    baseline: float, deltas: Sequence[float], *, alpha: float = 0.05, power: float = 0.8,
    icc: float = 0.0, per_scope: int | None = None,
) -> list[PlanningRow]:
    """Per-arm sample sizes to tell ``baseline`` from baseline + delta and from
    baseline - delta (each where it stays a rate strictly between 0 and 1): independent
    questions, and the questions and scopes that carry as much under the given ICC."""
    rows: list[PlanningRow] = []
    for d in deltas:
        for other in (baseline + d, baseline - d):
            if not 0 < other < 1:
                continue
            independent = sample_size_two_proportions(baseline, other, alpha=alpha,
                                                      power=power)
            questions, scopes = clustered_size(independent, icc, per_scope)
            rows.append({"baseline": baseline, "other": round(other, 6), "delta": d,
                         "per_arm": questions, "independent": independent, "scopes": scopes})
    return rows


def margin_table(p: float, sizes: Sequence[int], z: float = DEFAULT_Z, *, icc: float = 0.0,
                 per_scope: int | None = None) -> list[MarginRow]:
    """The Wilson margin of error at rate ``p`` for each number of questions, at the effective
    n those questions carry under the given ICC."""
    deff = design_effect(icc, per_scope) if per_scope is not None else 1.0
    return [{"n": n, "p": p, "n_eff": n / deff, "margin": wilson_half_width(p, n / deff, z)}
            for n in sizes]
