"""What a run stores about each answered question: the input of every scorer and report."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

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


class BudgetOutcome(_Record):
    limits: dict[str, float]
    used: dict[str, float]
    # Why the session ended: "answered", or the name of the exhausted limit.
    stop_reason: str
    compliant: bool


class QuestionRecord(_Record):
    unit_key: str
    adapter: str
    scope_id: str
    repeat: int
    question_id: str
    checkpoint: int
    status: Literal["answered", "error"]
    answer: str = ""
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

    @property
    def key(self) -> str:
        return question_key(self.unit_key, self.question_id)

    def tokens(self, role: str = "agent") -> int:
        return sum(c.prompt_tokens + c.completion_tokens for c in self.model_calls
                   if c.role == role)


def unit_key(adapter: str, scope_id: str, repeat: int) -> str:
    return f"{adapter}|{scope_id}|r{repeat}"


def question_key(unit: str, question_id: str) -> str:
    return f"{unit}|{question_id}"
