"""The shapes a report is made of, written as ``summary.json`` (pydantic: it is an edge)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from lens.report.foundations.judge_shapes import JudgePanelOut
from lens.stats import Estimate

# "na": the row cannot apply to this run (one scope has no effective size; a control arm is
# meant to fail it); said so in its value, never counted as passed or failed.
Status = Literal["na", "pass", "warn", "fail"]
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
    # The arms that warned a row that fails (named beside those that failed it).
    warned: list[str] = Field(default_factory=list)


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
    # Tool calls the adapter (or the agent's arguments) made fail, the questions they hit, and
    # the first one's message: a search that raises is a memory that did not answer.
    tool_errors: int = 0
    questions_with_tool_errors: int = 0
    first_tool_error: str | None = None
    # Agent calls whose reply's usage block was unreadable: their tokens and cost are counted
    # at the most each can have cost, so the figures above are upper bounds when this is not 0.
    unknown_usage_calls: int = 0


class ContextParity(_M):
    """What the memory handed the agent per question (lens/report/checks/parity.py): characters of
    tool results and standing context, lens's rough token count of them, and the share of the
    ingested episodes the question's searches returned."""

    questions: int
    chars_median: float | None
    chars_mean: float | None
    tokens_median: float | None
    tokens_mean: float | None
    search_chars_mean: float | None
    retrieve_chars_mean: float | None
    standing_chars_mean: float | None
    scope_share_median: float | None
    scope_share_max: float | None


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
    context: ContextParity | None = None


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
    # What the interval says (lens.report.figures.verdicts): better / worse (B against A),
    # equivalent (within the margin), real but small (a real difference smaller than the margin),
    # undecided, unknown.
    verdict: Literal["better", "worse", "equivalent", "real but small", "undecided", "unknown"]
    reason: str
    # The verdict under each judge of the panel (empty with one judge): a win stands only when
    # every judge gives it.
    by_judge: dict[str, str] = Field(default_factory=dict)
    # Which rule decided the verdict: "margin" (|Δ| within either arm's margin of error),
    # "noise floor", "significance" (the family's Holm-corrected test), "interval" (the
    # scope-clustered interval includes 0), "scopes" (the bounded-mean test over too few
    # scopes) or "none".
    rule: str = "significance"
    # "confirmatory": the primary metric, Holm over the pairs on it alone; "exploratory": every
    # other metric, Holm over the pairs × those metrics.
    family: Literal["confirmatory", "exploratory"] = "exploratory"
    # Scopes with a value for both arms, and the bounded-mean test over their differences
    # (lens.stats.bounded; valid for any distribution of them), raw and Holm-corrected.
    scopes: int | None = None
    bounded_p: float | None = None
    bounded_p_holm: float | None = None


class Comparison(_M):
    arm_a: str
    arm_b: str
    pairs: int
    unmatched_a: int
    unmatched_b: int
    # Empty when the arms ran under the same condition; else the differing condition fields.
    not_comparable: list[str] = Field(default_factory=list)
    rows: list[ComparisonRow]


class SequentialPair(_M):
    """One pair's sequential verdict (Δ = B − A) where it settled, beside the full run's."""

    arm_a: str
    arm_b: str
    verdict: Literal["better", "worse", "equivalent", "undecided"]
    # Scope blocks read when it settled (all of them when it did not).
    blocks: int
    mean: float | None
    low: float | None
    high: float | None
    # The pair's share of the family's α (Bonferroni).
    alpha: float
    # The fixed-n verdict of the whole run on the same metric (a, b, tie, ...).
    full_verdict: str | None
    # None when the sequential verdict is undecided or the full run's is unknown.
    agrees: bool | None


class EstimateRow(_M):
    """The estimate made before the run (``cost_estimate`` in the manifest) beside the spend."""

    role: str
    arm: str
    est_calls: float
    est_tokens: float
    est_cost_usd: float | None
    calls: int
    tokens: int
    cost_usd: float | None
    # Calls of unreadable usage counted at their limit: tokens and cost are then upper bounds.
    unknown_usage_calls: int = 0


class RunStopPair(_M):
    """One pair's interval (Δ = B − A) when the run stopped."""

    arm_a: str
    arm_b: str
    verdict: str
    mean: float | None
    low: float | None
    high: float | None
    alpha: float


class RunStopOut(_M):
    """Where ``lens run`` stopped answering under its ``stopping`` section (lens.flow.stopping):
    when, why, the blocks and questions used, every pair's interval at that point."""

    at: str | None
    reason: str
    metric: str
    method: str
    alpha: float
    margin: float
    blocks: int
    total_blocks: int
    questions_used: int
    questions_total: int
    # Questions answered in all (a block in flight when the verdict settled is finished).
    questions_answered: int
    graded_by: str
    pairs: list[RunStopPair]
    # A later session resumed with --continue-past-stop and answered the rest.
    continued: bool = False


class SequentialOut(_M):
    """Where a run answering scope block by scope block would have stopped (lens.report.
    sequential): the blocks, questions and model tokens used, and every pair's verdict."""

    metric: str
    method: str
    alpha: float
    margin: float
    look_every: int
    blocks: int
    total_blocks: int
    settled: bool
    questions_used: int
    questions_total: int
    tokens_share: float | None
    # The scopes in the seeded order in which they would have been answered.
    order: list[str]
    pairs: list[SequentialPair]
    # Why no verdict could be read (no scope where every arm has a value), else None.
    note: str | None = None


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
    # Prompt tokens the provider's prompt cache served; None for a manifest that did not count them.
    cached_prompt_tokens: int | None = None
    # Calls whose usage block was unreadable, counted at the most each can have cost: the
    # tokens and cost above are then upper bounds.
    unknown_usage_calls: int = 0


class UnknownUsage(_M):
    """The run's model calls whose reply had an unreadable usage block (lens.models.usage), by
    model ("provider/model") and by role. Each reply was kept, and its counts charged at the most
    the call can have cost (the budgets and the cost cap count them so), which makes the run's
    token and cost figures upper bounds rather than exact."""

    by_model: dict[str, int]
    by_role: dict[str, int]

    @property
    def calls(self) -> int:
        return sum(self.by_role.values()) or sum(self.by_model.values())

    def text(self) -> str:
        """One sentence for the terminal, the checklist and the report."""
        n = self.calls
        models = ", ".join(f"{m}: {k}" for m, k in self.by_model.items())
        roles = ", ".join(f"{r}: {k}" for r, k in self.by_role.items())
        return (f"{n} model call{'s' if n != 1 else ''} with an unreadable usage block "
                f"(model {models}; role {roles}), kept and budgeted at the most each can have "
                "cost: the token and cost figures are upper bounds, not exact")


class FloorCeilingRow(_M):
    metric: str
    floor: float | None
    ceiling: float | None
    # Each arm's (value − floor) / (ceiling − floor); None when the gap is not positive or a
    # value is missing.
    positions: dict[str, float | None] = Field(default_factory=dict)


class FloorCeiling(_M):
    """Each arm placed between the floor (``null``) and the ceiling (``oracle``) of the run."""

    floor_arm: str | None
    ceiling_arm: str | None
    alternative_arm: str | None = None
    rows: list[FloorCeilingRow] = Field(default_factory=list)


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
    # Several judges: each judged metric per judge, its range, and the judges' agreement.
    judges: JudgePanelOut | None = None
    adapters: dict[str, AdapterSummary]
    comparisons: list[Comparison] = Field(default_factory=list)
    # Friedman's test and Kendall's W across scopes, with three or more adapters.
    many_arms: list[ManyArms] = Field(default_factory=list)
    checklist: list[Check]
    # Present when the run has a floor (null) or a ceiling (oracle) arm.
    floor_ceiling: FloorCeiling | None = None
    sections: list[SectionOut] = Field(default_factory=list)
    model_usage: dict[str, RoleUsage] = Field(default_factory=dict)
    # Present when some model call's usage was unreadable (its figures are upper bounds).
    unknown_usage: UnknownUsage | None = None
    notes: list[str] = Field(default_factory=list)
    # The run stopped early under its ``stopping`` section.
    stopped: RunStopOut | None = None
    # The estimate of ``lens plan CONFIG`` beside the spend, when the manifest has one.
    estimate: list[EstimateRow] = Field(default_factory=list)

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
