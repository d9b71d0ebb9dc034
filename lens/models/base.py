"""The ModelClient protocol and the request/response types every backend speaks."""

from __future__ import annotations

import json
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from lens.core.fields import unset

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
        except RecursionError:
            raise ValueError(f"arguments nest deeper than {MAX_ARGUMENT_DEPTH} levels") from None
        except ValueError as exc:
            # e.g. an integer of thousands of digits
            raise ValueError(f"arguments are not usable JSON: {exc}") from None
        if not isinstance(value, dict):
            raise ValueError("arguments must be a JSON object")
        if json_depth(value) > MAX_ARGUMENT_DEPTH:
            # Parsed, but records and reports serialise the arguments again, deeper in the
            # stack: refuse here, where it is one tool error the model can read.
            raise ValueError(f"arguments nest deeper than {MAX_ARGUMENT_DEPTH} levels")
        return value


# Memory tools take flat arguments; anything this deep is a broken or hostile model.
MAX_ARGUMENT_DEPTH = 32


def json_depth(value: Any) -> int:
    """How deeply lists and dicts nest in a decoded JSON value (a scalar is 0); iterative, so
    it cannot itself run out of stack."""
    if isinstance(value, dict) and not any(isinstance(v, dict | list) for v in value.values()):
        return 1  # tool arguments: a flat object
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        depth += 1
        deepest = max(deepest, depth)
        stack.extend((child, depth) for child in children)
    return deepest


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None


class ToolSpec(BaseModel):
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
    # Parts of prompt_tokens the provider's prompt cache served (read) or stored (write); they
    # are priced at the cache's own rates.
    cached_prompt_tokens: int = 0
    cache_write_tokens: int = 0
    # The counts the provider sent unreadable (a string, a negative number): each is the most
    # the call can have used (see lens.models.openai_backend), so budgets and cost caps still
    # bite; empty when every count was reported.
    # Written only when something is unknown: cached and recorded usage stays as it was.
    unknown: list[str] = Field(default_factory=list, exclude_if=unset)

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
