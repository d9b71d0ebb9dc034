"""Tier 3: longitudinal_advantage, a differential metric over a group of questions (an adapter,
a scope, a checkpoint), defined here once: its point value and the bootstrap replicates the
report's intervals draw (both registered on its ``MetricSpec``).

longitudinal_advantage = mean score on synthesis questions − mean score on ``null_hypothesis``
controls, where the score is fact_recall. The published LENS scopes give their controls no key
facts, so fact_recall cannot be computed for them; then answer_quality (the judge) is used on
both sides, and the result says so. Its range is −1..1.

action_quality is a per-question judge score on ``action_recommendation`` questions (see
:mod:`lens.scoring.judging.pairwise`); a group's value is the mean over those questions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from lens.data.dataset import SYNTHESIS_TYPES, QuestionType
from lens.runs.records import is_scored
from lens.scoring.foundations.types import QuestionScores
from lens.stats.resample import ReplicateWeights

_SYNTHESIS = frozenset(t.value for t in SYNTHESIS_TYPES)
_CONTROL = QuestionType.NULL_HYPOTHESIS.value


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def sides(rows: Sequence[QuestionScores]) -> tuple[list[bool], list[bool]]:
    """Per row: is it an answered synthesis question, an answered control."""
    answered = [is_scored(r.status) for r in rows]
    return ([a and r.question_type in _SYNTHESIS for a, r in zip(answered, rows, strict=True)],
            [a and r.question_type == _CONTROL for a, r in zip(answered, rows, strict=True)])


def _basis(controls: Sequence[QuestionScores]) -> str:
    """The score both sides are compared on: fact_recall where every control has it, else
    answer_quality."""
    if all(r.metrics.get("fact_recall") is not None for r in controls):
        return "fact_recall"
    return "answer_quality"


def longitudinal_advantage(rows: Sequence[QuestionScores]) -> tuple[float | None, dict[str, Any]]:
    synth_of, control_of = sides(rows)
    synth = [r for r, s in zip(rows, synth_of, strict=True) if s]
    control = [r for r, c in zip(rows, control_of, strict=True) if c]
    if not synth or not control:
        return None, {"reason": f"needs both synthesis and null_hypothesis questions "
                                f"(has {len(synth)} and {len(control)})"}
    basis = _basis(control)
    s = _mean([r.metrics.get(basis) for r in synth])
    c = _mean([r.metrics.get(basis) for r in control])
    detail: dict[str, Any] = {"basis": basis, "synthesis_questions": len(synth),
                              "control_questions": len(control)}
    if basis == "answer_quality":
        detail["why"] = ("control questions have no key facts: answer_quality is used on both "
                         "sides")
    if s is None or c is None:
        detail["reason"] = f"{basis} is missing on one side (no judge configured?)"
        return None, detail
    detail["synthesis_mean"] = round(s, 6)
    detail["control_mean"] = round(c, 6)
    return s - c, detail


def longitudinal_advantage_replicates(rows: Sequence[QuestionScores],
                                      values: Mapping[str, np.ndarray],
                                      defined: Mapping[str, np.ndarray],
                                      w: ReplicateWeights | np.ndarray
                                      ) -> np.ndarray:
    """The statistic under each row of bootstrap weights ``w`` (replicates x rows): the
    synthesis minus the control mean of the basis, weighted. ``values`` and ``defined`` hold
    each per-question metric's column (0 and False where undefined). The basis is fixed from
    the full sample so replicates measure one thing; a replicate that draws no question of one
    side keeps that side at its full-sample mean, so every replicate computes the same
    difference as the point estimate. NaN throughout when a side has no question."""
    synth_of, control_of = (np.array(side, dtype=bool) for side in sides(rows))
    if not synth_of.any() or not control_of.any():
        return np.full(len(w), np.nan)
    basis = _basis([r for r, c in zip(rows, control_of, strict=True) if c])
    col, ok = values[basis], defined[basis]
    out = []
    for mask in (synth_of, control_of):
        m = (mask & ok).astype(float)
        den = w @ m
        full = float((col * m).sum() / m.sum()) if m.sum() > 0 else np.nan
        with np.errstate(invalid="ignore", divide="ignore"):
            out.append(np.where(den > 0, (w @ (col * m)) / np.where(den > 0, den, 1), full))
    return out[0] - out[1]
