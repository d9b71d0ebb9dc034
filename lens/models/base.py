"""The ModelClient protocol and the request/response types every backend speaks."""

from __future__ import annotations

import json
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["system", "user", "assistant", "tool"]
CallRole = Literal["agent", "judge", "adapter"]


class ToolCall(BaseModel):
    """A tool call as the model wrote it. ``arguments`` is the raw JSON text, parsed by the
    agent so that malformed arguments can go back to the model as an error."""

    model_config = ConfigDict(extra="forbid")

    id: str
    name: str
    arguments: str = "{}"

    def parsed_arguments(self) -> dict[str, Any]:
        """The arguments as a dict; raises ValueError with a message fit for the model."""
        try:
            value = json.loads(self.arguments or "{}")
        except json.JSONDecodeError as exc:
            raise ValueError(f"arguments are not valid JSON: {exc.msg} at char {exc.pos}") from None
        if not isinstance(value, dict):
            raise ValueError("arguments must be a JSON object")
        return value


class Message(BaseModel):
    # Frozen: request bodies cache each one's JSON by identity (models/chat_body.py).
    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None


class ToolSpec(BaseModel):
    # Frozen: request bodies cache each one's JSON by identity (models/chat_body.py).
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    description: str
    parameters: dict[str, Any]


class CompletionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    messages: list[Message]
    tools: list[ToolSpec] = Field(default_factory=list)
    tool_choice: Literal["auto", "required", "none"] | str = "auto"
    response_schema: dict[str, Any] | None = None
    temperature: float = 0.0
    top_p: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    stop: list[str] | None = None
    # Who is calling (agent, judge, adapter-internal): usage is metered per role.
    role: CallRole = "agent"
    # Repeat index of the run unit, part of the cache key so repeats do not collide.
    repeat: int = 0


class Usage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class Completion(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    finish_reason: str | None = None
    provider: str = ""
    model: str = ""
    latency_s: float = 0.0
    retries: int = 0
    cached: bool = False
    # None means the cost is not known (no price for this model), never "free".
    cost_usd: float | None = None


class ModelError(Exception):
    """A model call failed for good (after retries); the message is the provider's reason."""

    def __init__(self, message: str, *, retryable: bool = False, status: int | None = None):
        super().__init__(message)
        self.retryable = retryable
        self.status = status


@runtime_checkable
class ModelClient(Protocol):
    """Anything that completes a request. Backends and the wrappers around them all are one."""

    provider: str
    model: str

    async def complete(self, request: CompletionRequest) -> Completion: ...

    async def aclose(self) -> None: ...
