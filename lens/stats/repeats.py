"""Repeats of a question: one value per question from its repeats (a reducer), and how often
the repeats disagree (the flip rate, a noise figure of the system under test).

Repeats are nested within a question, questions within a scope. Reducing the repeats first and
then computing scope-clustered intervals over the questions carries the repeat-to-repeat
variance into the intervals: a question whose repeats disagree has a reduced value that is
itself noisy, and that noise is part of the spread of question values within its scope.
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Sequence

REDUCERS = ("mean", "majority", "any", "pass@k")
_PASS_AT = re.compile(r"^pass@([1-9][0-9]*)$")


def check_reducer(name: str) -> str:
    """The reducer's name if it is one lens knows; ValueError naming the choices otherwise."""
    if name in ("mean", "majority", "any") or _PASS_AT.match(name):
        return name
    raise ValueError(f"unknown repeat reducer {name!r}: use mean, majority, any or pass@K "
                     "(K a whole number, e.g. pass@2)")


def _expected_best_of(values: Sequence[float], k: int) -> float:
    """The expected best of k repeats drawn without replacement: for 0/1 values this is the
    unbiased pass@k estimator, 1 − C(n − c, k) / C(n, k)."""
    xs = sorted(values)
    n = len(xs)
    k = min(k, n)
    total = math.comb(n, k)
    # The i-th smallest (1-based) is the best of a draw when the other k − 1 come from below.
    return sum(x * math.comb(i, k - 1) for i, x in enumerate(xs)) / total


def reduce(values: Sequence[float], reducer: str) -> float:
    """One value from a question's repeats. mean: the average; majority: a strict majority of
    successes (ties fail) for 0/1 values, the median otherwise; any: the best repeat; pass@K:
    the expected best of K repeats (the unbiased pass@K for 0/1 values)."""
    if not values:
        raise ValueError("no values to reduce")
    if reducer == "mean":
        return sum(values) / len(values)
    if reducer == "any":
        return max(values)
    if reducer == "majority":
        if all(v in (0.0, 1.0) for v in values):
            return 1.0 if sum(values) * 2 > len(values) else 0.0
        xs = sorted(values)
        mid = len(xs) // 2
        return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2
    m = _PASS_AT.match(reducer)
    if m:
        return _expected_best_of(values, int(m.group(1)))
    raise ValueError(check_reducer(reducer))


def reduce_repeats(
    keys: Sequence[Hashable], values: Sequence[float], reducer: str = "mean",
) -> tuple[list[Hashable], list[float], float | None]:
    """Group values by question key (first-seen order), reduce each group, and return the keys,
    reduced values and the flip rate: the share of questions with at least two repeats whose
    repeats are not all equal (None when no question has two)."""
    groups: dict[Hashable, list[float]] = {}
    for key, v in zip(keys, values, strict=True):
        groups.setdefault(key, []).append(float(v))
    repeated = [g for g in groups.values() if len(g) > 1]
    flips = (sum(1 for g in repeated if any(v != g[0] for v in g)) / len(repeated)
             if repeated else None)
    return list(groups), [reduce(g, reducer) for g in groups.values()], flips
