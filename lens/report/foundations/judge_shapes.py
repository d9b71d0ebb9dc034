"""The judge panel's part of ``summary.json``: each judged metric per judge, its range, and how
far the judges agree (pydantic: it is an edge)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid")


class JudgeRange(_M):
    # The metric under each judge (None where that judge left it unknown).
    by_judge: dict[str, float | None]
    # Lowest and highest over the judges; None when any judge left it unknown (a range over
    # some judges only would pass for the whole panel's).
    low: float | None
    high: float | None


class PairAgreement(_M):
    """Two judges on the same judged items (pairwise outcomes, fact grades)."""

    judge_a: str
    judge_b: str
    items: int
    agree: int
    rate: float | None
    kappa: float | None
    # The same, per kind of item (answer_quality, action_quality, fact_grade).
    by_kind: dict[str, dict[str, float | int | None]] = Field(default_factory=dict)


class JudgePanelOut(_M):
    judges: list[str]
    metrics: list[str]
    # adapter -> metric -> the metric per judge and its range.
    ranges: dict[str, dict[str, JudgeRange]]
    agreement: list[PairAgreement] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
