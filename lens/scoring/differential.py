"""Tier 3: differential metrics over a group of questions (an adapter, a scope, a checkpoint).

longitudinal_advantage = mean score on synthesis questions − mean score on ``null_hypothesis``
controls, where the score is fact_recall. The published LENS scopes give their controls no key
facts, so fact_recall cannot be computed for them; then answer_quality (the judge) is used on
both sides, and the result says so. Its range is −1..1.

action_quality is a per-question judge score on ``action_recommendation`` questions (see
:mod:`lens.scoring.pairwise`); a group's value is the mean over those questions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lens.data.dataset import SYNTHESIS_TYPES, QuestionType
from lens.runs.records import is_scored
from lens.scoring.types import QuestionScores

_SYNTHESIS = frozenset(t.value for t in SYNTHESIS_TYPES)
_CONTROL = QuestionType.NULL_HYPOTHESIS.value


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def longitudinal_advantage(rows: Sequence[QuestionScores]) -> tuple[float | None, dict[str, Any]]:
    answered = [r for r in rows if is_scored(r.status)]
    synth = [r for r in answered if r.question_type in _SYNTHESIS]
    control = [r for r in answered if r.question_type == _CONTROL]
    if not synth or not control:
        return None, {"reason": f"needs both synthesis and null_hypothesis questions "
                                f"(has {len(synth)} and {len(control)})"}
    if all(r.metrics.get("fact_recall") is not None for r in control):
        basis = "fact_recall"
    else:
        basis = "answer_quality"
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
