"""What a run stores about each answered question: the input of every scorer and report."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from lens.core.fields import unset
from lens.models.base import Message


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolCallRecord(_Record):
    name: str
    arguments: dict[str, Any] | str
    ok: bool
    error: str | None = None
    # Refs the agent received from this call (search hits, retrieved documents).
    result_refs: list[str] = Field(default_factory=list)
    result_count: int = 0
    payload_bytes: int = 0
    truncated: bool = False
    latency_s: float = 0.0


class ModelCallRecord(_Record):
    role: str
    provider: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    retries: int = 0
    cached: bool = False
    cost_usd: float | None = None
    # Counts the provider's reply gave unreadable: the tokens above are then the most the call
    # can have cost (lens.models.base.Usage.unknown). Written only when not empty.
    usage_unknown: list[str] = Field(default_factory=list, exclude_if=unset)


class BudgetOutcome(_Record):
    limits: dict[str, float]
    used: dict[str, float]
    # Why the session ended: "answered", or the name of the exhausted limit.
    stop_reason: str
    compliant: bool


# How a question ended. ``empty_answer``: the agent finished (or ran out of budget) without any
# answer text, even after lens reminded it once; it is scored as a wrong answer, never left out,
# so an agent cannot raise its mean by staying silent on the questions it would get wrong.
# ``no_memory``: the agent answered without a single tool call and had no standing context, so
# the answer, right or wrong, says what the model knows, not what the memory holds; like an
# error it is left out of every metric's mean and counts as a failure in the composite.
Status = Literal["answered", "empty_answer", "no_memory", "error"]
STATUSES: tuple[Status, ...] = ("answered", "empty_answer", "no_memory", "error")
# The statuses whose record holds a finished agent session: every metric scores them.
SCORED_STATUSES = frozenset({"answered", "empty_answer"})


def is_scored(status: str) -> bool:
    return status in SCORED_STATUSES


def session_status(answer: str, tool_calls: int, standing_context_bytes: int,
                   tools_offered: bool = True) -> Status:
    """How a finished agent session ended: no text is an empty answer; text given without any
    tool call, where tools were offered and no standing context stood in for them, did not
    come from memory."""
    if not answer.strip():
        return "empty_answer"
    if tools_offered and tool_calls == 0 and standing_context_bytes == 0:
        return "no_memory"
    return "answered"


class QuestionRecord(_Record):
    unit_key: str
    adapter: str
    scope_id: str
    repeat: int
    question_id: str
    checkpoint: int
    status: Status
    answer: str = ""
    # The dataset's answer, beside the given one for whoever reads the record. Written after
    # the session: the agent and the adapter never see it.
    expected_answer: str | None = None
    cited_refs: list[str] = Field(default_factory=list)
    retrieved_refs: list[str] = Field(default_factory=list)
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    tool_errors: int = 0
    model_calls: list[ModelCallRecord] = Field(default_factory=list)
    transcript: list[Message] = Field(default_factory=list)
    budget: BudgetOutcome | None = None
    error: str | None = None
    started_at: str = ""
    wall_s: float = 0.0
    # The episodes the adapter held when the question was asked (count), for the leak audit.
    episodes_ingested: int = 0
    # The adapter's standing-context block as the agent got it (its text is in the transcript's
    # system message): bytes charged to the payload budget, and whether lens cut it to fit.
    standing_context_bytes: int = 0
    standing_context_truncated: bool = False
    # The digest of the memory state the question was answered from (read before the
    # checkpoint's first question; lens/runner/memory_state.py), or None when the adapter
    # does not list its memory.
    memory_state: str | None = None

    @property
    def key(self) -> str:
        return question_key(self.unit_key, self.question_id)

    def tokens(self, role: str = "agent") -> int:
        return sum(c.prompt_tokens + c.completion_tokens for c in self.model_calls
                   if c.role == role)


def _part(text: str) -> str:
    # Keys join their parts with "|": escaping "|" (and "%", the escape) in each part keeps
    # label "a|b" on scope "c" and label "a" on scope "b|c" apart.
    return text.replace("%", "%25").replace("|", "%7C")


def unit_key(adapter: str, scope_id: str, repeat: int) -> str:
    return f"{_part(adapter)}|{_part(scope_id)}|r{repeat}"


def question_key(unit: str, question_id: str) -> str:
    return f"{unit}|{_part(question_id)}"
