"""The OpenAI chat format's JSON objects that lens writes: messages and tools sent to a
provider (``openai_backend``), and the assistant's tool calls the model gateway returns
(``lens.runner.gateway.wire``)."""

from __future__ import annotations

from typing import Any, Literal, Required, TypedDict


class FunctionCallJson(TypedDict):
    name: str
    arguments: str  # JSON text


class ToolCallJson(TypedDict):
    id: str
    type: Literal["function"]
    function: FunctionCallJson


class ChatMessageJson(TypedDict, total=False):
    role: Required[str]  # system, user, assistant or tool
    content: Required[str | None]
    tool_call_id: str  # a tool message: the call it answers
    tool_calls: list[ToolCallJson]  # an assistant message


class FunctionSpecJson(TypedDict):
    name: str
    description: str
    parameters: dict[str, Any]  # the arguments' JSON schema


class ToolJson(TypedDict):
    type: Literal["function"]
    function: FunctionSpecJson


def tool_call_json(call_id: str, name: str, arguments: str) -> ToolCallJson:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": arguments}}
