"""Aggregates of question scores per adapter, question type, checkpoint and scope.

A group's metric is the mean over its answered questions where the metric is defined; a group
metric of the registry (longitudinal_advantage) is computed over the group itself; the group's
composite applies the weights and the gate to those means (the LENS method's composite of a
run), scaled by the share of the group's questions answered (an errored question counts as a
failure), so it is not the mean of the question composites. Levels crossed with the adapter
("adapter/scope", ...) keep adapters apart; their keys are "adapter|value".
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import lens.scoring.metrics as registry
from lens.runs.records import is_scored
from lens.scoring.aggregation.composite import composite
from lens.scoring.foundations.types import QuestionScores

_KEYS: dict[str, Callable[[QuestionScores], str]] = {
    "adapter": lambda r: r.adapter,
    "question_type": lambda r: r.question_type,
    "checkpoint": lambda r: str(r.checkpoint),
    "scope": lambda r: r.scope_id,
}
LEVELS = (*_KEYS, *(f"adapter/{k}" for k in _KEYS if k != "adapter"))


def _key(level: str, row: QuestionScores) -> str:
    if level.startswith("adapter/"):
        return f"{row.adapter}|{_KEYS[level.split('/', 1)[1]](row)}"
    return _KEYS[level](row)


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def _sort_key(level: str, key: str) -> tuple[Any, ...]:
    # Checkpoints sort numerically ("38" before "119").
    last = key.rsplit("|", 1)[-1]
    if level.endswith("checkpoint") and last.isdigit():
        return (key.rsplit("|", 1)[0] if "|" in key else "", int(last))
    return (key, 0)


def aggregate_group(rows: Sequence[QuestionScores], *, weights: Mapping[str, float],
                    gate_threshold: float, tiers: Iterable[int]
                    ) -> tuple[dict[str, float | None], dict[str, Any]]:
    """``tiers``: the tiers scored; a group metric of another tier is unknown."""
    answered = [r for r in rows if is_scored(r.status)]
    scored = set(tiers)
    values: dict[str, float | None] = {}
    detail: dict[str, Any] = {}
    for spec in registry.all_metrics():
        if spec.aggregation == "mean":
            values[spec.name] = _mean([r.metrics.get(spec.name) for r in answered])
        elif spec.tier in scored:
            assert spec.group_compute is not None
            values[spec.name], detail[spec.name] = spec.group_compute(rows)
        else:
            values[spec.name] = None
            detail[spec.name] = {"reason": f"tier {spec.tier} not scored"}
    # Errored questions count as failures: erroring cannot lift a group's composite.
    share = len(answered) / len(rows) if rows else 1.0
    comp = composite(values, weights, gate_threshold, answered_share=share)
    pairs = sum(int(r.detail.get("judge", {}).get("pairs", 0)) for r in answered)
    flips = sum(int(r.detail.get("judge", {}).get("disagreements", 0)) for r in answered)
    entry: dict[str, float | None] = dict(values)
    entry.update({
        "composite": comp.value,
        "composite_renormalised": 1.0 if comp.renormalised else 0.0,
        "composite_gated": 1.0 if comp.gated else 0.0,
        "judge_disagreement_rate": flips / pairs if pairs else None,
        "n_questions": float(len(answered)),
        "n_errored": float(len(rows) - len(answered)),
    })
    detail["composite_missing"] = comp.missing
    if comp.gate_unchecked:
        detail["gate_unchecked"] = comp.gate_unchecked
    return entry, detail


def aggregate(rows: Sequence[QuestionScores], *, weights: Mapping[str, float],
              gate_threshold: float, tiers: Iterable[int]
              ) -> tuple[dict[str, dict[str, dict[str, float | None]]],
                         dict[str, dict[str, dict[str, Any]]]]:
    entries: dict[str, dict[str, dict[str, float | None]]] = {}
    details: dict[str, dict[str, dict[str, Any]]] = {}
    for level in LEVELS:
        groups: dict[str, list[QuestionScores]] = {}
        for r in rows:
            groups.setdefault(_key(level, r), []).append(r)
        entries[level], details[level] = {}, {}
        for key in sorted(groups, key=functools.partial(_sort_key, level)):
            e, d = aggregate_group(groups[key], weights=weights, gate_threshold=gate_threshold,
                                   tiers=tiers)
            entries[level][key] = e
            details[level][key] = d
    return entries, details
