"""The shapes a report is made of, written as ``summary.json`` (pydantic: it is an edge)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from lens.stats import Estimate

Status = Literal["pass", "warn", "fail"]
SUMMARY_SCHEMA = "lens.report.summary/1"


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EstimateOut(_M):
    n: int
    mean: float | None
    low: float | None
    high: float | None
    margin: float | None
    method: str
    clusters: int = 0
    # Effective number of independent questions, n / (1 + (m̄ − 1)·ICC); None when it cannot
    # be estimated (one scope).
    n_eff: float | None = None
    icc: float | None = None
    # Share of questions whose repeats disagree (None without repeats).
    flip_rate: float | None = None

    @classmethod
    def of(cls, est: Estimate) -> EstimateOut:
        return cls(n=est.n, mean=est.mean, low=est.low, high=est.high, margin=est.half_width,
                   method=est.method, clusters=est.clusters, n_eff=est.n_eff, icc=est.icc,
                   flip_rate=est.flip_rate)


class Check(_M):
    id: str
    title: str
    status: Status
    value: str
    detail: str
    # Who made the row warn or fail: the arms (or, for a check of whole runs, the runs) whose
    # own status is the row's; empty when it passes.
    failing: list[str] = Field(default_factory=list)


class Usage(_M):
    tool_calls_per_question: float | None
    search_results_per_question: float | None
    agent_tokens_per_question: EstimateOut
    # Mean over the questions whose cost is known (cost_known of them); None when none is.
    cost_usd_per_question: float | None
    # Only when every question's cost is known.
    cost_usd_total: float | None
    cost_known: int = 0
    wall_s_per_question: float | None
    budget_compliant: EstimateOut
    stop_reasons: dict[str, int] = Field(default_factory=dict)


class CheckpointPoint(_M):
    label: str
    first: int
    last: int
    estimate: EstimateOut


class AdapterSummary(_M):
    label: str
    questions: int
    answered: int
    errored: int
    metrics: dict[str, EstimateOut]
    # Sessions that ended without answer text (scored as wrong answers, not in ``answered``).
    empty_answers: int = 0
    # Answers given without any tool call (status no_memory): failures of the arm, unscored.
    no_memory: int = 0
    # Run-level aggregates from the scorer that have no per-question values (no interval).
    run_level: dict[str, float | None] = Field(default_factory=dict)
    by_type: dict[str, dict[str, EstimateOut]] = Field(default_factory=dict)
    by_checkpoint: list[CheckpointPoint] = Field(default_factory=list)
    usage: Usage


class JudgeOut(_M):
    model: str | None
    pairs: int
    disagreement_rate: float | None
    agreement: EstimateOut


class ComparisonRow(_M):
    metric: str
    pairs: int
    mean_a: float | None
    mean_b: float | None
    delta: EstimateOut
    test: str
    p_value: float | None
    p_holm: float | None
    # Monte Carlo standard error of the Holm-adjusted p-value (0 for exact tests).
    p_mc_error: float | None = None
    margin_a: float | None
    margin_b: float | None
    noise_floor: float | None
    verdict: Literal["a", "b", "tie", "borderline", "unknown"]
    reason: str
    # Which rule decided the verdict: "margin" (|Δ| within either arm's margin of error),
    # "noise floor", "significance" (the family's Holm-corrected test), "interval" (the
    # scope-clustered interval includes 0) or "none".
    rule: str = "significance"
    # "confirmatory": the primary metric, Holm over the pairs on it alone; "exploratory": every
    # other metric, Holm over the pairs × those metrics.
    family: Literal["confirmatory", "exploratory"] = "exploratory"


class Comparison(_M):
    arm_a: str
    arm_b: str
    pairs: int
    unmatched_a: int
    unmatched_b: int
    # Empty when the arms ran under the same condition; else the differing condition fields.
    not_comparable: list[str] = Field(default_factory=list)
    rows: list[ComparisonRow]


class ManyArms(_M):
    """Friedman's test across scopes for one metric with three or more arms."""

    metric: str
    arms: list[str]
    scopes: int
    statistic: float
    df: int
    p_value: float
    kendall_w: float


class SectionOut(_M):
    id: str
    title: str
    data: dict[str, Any] = Field(default_factory=dict)


class RoleUsage(_M):
    """Model usage of the whole run for one role (agent, judge, adapter), from the manifest."""

    calls: int
    prompt_tokens: int
    completion_tokens: int
    # None when some call had no known price.
    cost_usd: float | None
    cache_hits: int = 0
    retries: int = 0
    errors: int = 0


class ReportSummary(_M):
    schema_: str = Field(default=SUMMARY_SCHEMA, alias="schema")
    run_id: str
    run_dir: str
    created_at: str | None
    status: str | None
    condition: dict[str, Any]
    condition_hash: str | None
    # How the run was scored (scores.json's condition): empty when unscored or scored before
    # the scoring condition was recorded.
    scoring_condition: dict[str, Any] = Field(default_factory=dict)
    confidence: float
    primary_metric: str | None
    metrics: list[str]
    scored: bool
    judge: JudgeOut
    adapters: dict[str, AdapterSummary]
    comparisons: list[Comparison] = Field(default_factory=list)
    # Friedman's test and Kendall's W across scopes, with three or more adapters.
    many_arms: list[ManyArms] = Field(default_factory=list)
    checklist: list[Check]
    sections: list[SectionOut] = Field(default_factory=list)
    model_usage: dict[str, RoleUsage] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
