"""The shape of a run's scores, written to ``RUN_DIR/scores.json`` and read by reports.

A metric value of ``None`` means "could not be computed" (no judge, no questions of a type),
never 0: reports show it as unknown.
"""

from __future__ import annotations

import functools
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from lens.scoring.foundations.detail import QuestionDetail, read_detail

# Where a run's scores live, beside its records (named here so that every writer of scores,
# the scorer and the protocols alike, imports it from below them).
SCORES_FILE = "scores.json"


class QuestionScores(BaseModel):
    model_config = ConfigDict(extra="forbid")

    key: str
    unit_key: str
    adapter: str
    scope_id: str
    repeat: int
    question_id: str
    question_type: str
    checkpoint: int
    status: str
    metrics: dict[str, float | None] = Field(default_factory=dict)
    # Human-readable detail: facts matched/missed, judge verdicts, grounding misses; stored as
    # the scorer writes it, read through ``details``.
    detail: dict[str, Any] = Field(default_factory=dict)

    @functools.cached_property
    def details(self) -> QuestionDetail:
        """``detail`` as typed models (lens.scoring.foundations.detail), read once: read it
        when the row is complete (the scorer writes ``detail`` and never reads this)."""
        return read_detail(self.detail)


class JudgeSummary(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str | None = None
    pairs: int = 0
    # Share of position-swapped pairs whose verdict flipped: the judge-noise floor.
    disagreement_rate: float | None = None
    disagreements: int = 0
    # Judge usage behind these scores, metered apart from the agent's: every verdict used,
    # whether asked by this scoring or read back from the run's events (so re-scoring gives
    # the same numbers). New calls per scoring are logged as ``scoring_done`` events.
    verdicts: int = 0
    errors: int = 0
    invalid: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # None when any verdict's price is unknown.
    cost_usd: float | None = None
    fact_checks: bool = False


class RunScores(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run_dir: str
    tiers: list[int]
    questions: list[QuestionScores]
    judge: JudgeSummary = Field(default_factory=JudgeSummary)
    weights: dict[str, float] = Field(default_factory=dict)
    gate_threshold: float = 0.5
    # Aggregates keyed by level ("adapter", "question_type", "checkpoint", "scope") then value.
    aggregates: dict[str, dict[str, dict[str, float | None]]] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    # Per aggregate (same keys as ``aggregates``): the metrics missing from its composite and
    # how longitudinal_advantage was computed.
    aggregate_detail: dict[str, dict[str, dict[str, Any]]] = Field(default_factory=dict)
    # Matcher settings and other knobs the numbers depend on.
    settings: dict[str, Any] = Field(default_factory=dict)
    # The scoring condition (protocol, tiers, weights, gate, judge and its prompts, settings)
    # and its hash: scores with different conditions are not comparable. Empty for scores
    # written before the condition was recorded.
    condition: dict[str, Any] = Field(default_factory=dict)
    condition_hash: str | None = None
