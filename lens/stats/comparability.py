"""Which fields of a run condition must match for two results to be comparable."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

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
