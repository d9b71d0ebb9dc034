"""The OpenAI chat and embeddings wire format, translated to and from lens's model types.

Only what a memory system's client sends is read: messages (text, or text parts), tools and
``tool_choice``, ``response_format`` (JSON mode and JSON schema), sampling settings and stop
words. What lens cannot honour (streaming, several choices, token-id input) is refused with a
400 that names the field, never silently ignored.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from typing import Any, Literal, Required, TypedDict

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from lens.models.base import Completion, CompletionRequest, Message, Role, ToolCall, ToolSpec
from lens.models.openai_json import ToolCallJson, tool_call_json


class WireError(ValueError):
    """A request lens cannot serve as asked; the message names the field. ``status`` is the
    HTTP status of the refusal (413 for a body over the size limit, 400 for the rest)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class ChatBody(BaseModel):
    # Clients send many fields lens has no use for (user, logprobs, metadata …): accepted and
    # left alone, since none changes what the model is asked.
    model_config = ConfigDict(extra="allow")

    model: str = ""
    messages: list[dict[str, Any]] = Field(min_length=1)
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    response_format: dict[str, Any] | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    seed: int | None = None
    stop: str | list[str] | None = None
    stream: bool = False
    n: int = 1

    @field_validator("stream")
    @classmethod
    def _no_stream(cls, value: bool) -> bool:
        if value:
            raise ValueError("streaming is not supported by lens's model gateway; send "
                             "stream=false")
        return value

    @field_validator("n")
    @classmethod
    def _one_choice(cls, value: int) -> int:
        if value != 1:
            raise ValueError("lens's model gateway returns one choice; send n=1")
        return value


class EmbeddingsBody(BaseModel):
    model_config = ConfigDict(extra="allow")

    model: str = ""
    input: str | list[str] | list[int] | list[list[int]]
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = Field(default=None, ge=1)

    def texts(self) -> list[str]:
        value = self.input
        if isinstance(value, str):
            return [value]
        if all(isinstance(x, str) for x in value):
            return [str(x) for x in value]
        raise WireError("input: token ids are not supported by lens's model gateway; send text")


def _content(value: Any, where: str) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for i, part in enumerate(value):
            if isinstance(part, dict) and part.get("type") in ("text", "input_text"):
                parts.append(str(part.get("text", "")))
            else:
                kind = part.get("type") if isinstance(part, dict) else type(part).__name__
                raise WireError(f"{where}.content[{i}]: only text parts are supported, "
                                f"not {kind!r}")
        return "".join(parts)
    raise WireError(f"{where}.content: must be a string or a list of text parts")


def _tool_calls(value: Any, where: str) -> list[ToolCall]:
    calls = []
    for i, call in enumerate(value or []):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise WireError(f"{where}.tool_calls[{i}]: needs function.name")
        args = fn.get("arguments", "{}")
        calls.append(ToolCall(id=str(call.get("id") or f"call_{i}"), name=fn["name"],
                              arguments=args if isinstance(args, str) else json.dumps(args)))
    return calls


_ROLES: dict[str, Role] = {"system": "system", "developer": "system", "user": "user",
                           "assistant": "assistant", "tool": "tool", "function": "tool"}


def _messages(raw: list[dict[str, Any]]) -> list[Message]:
    out = []
    for i, m in enumerate(raw):
        where = f"messages[{i}]"
        role = _ROLES.get(str(m.get("role")))
        if role is None:
            raise WireError(f"{where}.role: {m.get('role')!r} is not one of "
                            f"{', '.join(sorted(_ROLES))}")
        out.append(Message(
            role=role,
            content=_content(m.get("content"), where),
            tool_calls=_tool_calls(m.get("tool_calls"), where) if role == "assistant" else [],
            tool_call_id=m.get("tool_call_id") or (m.get("name") if role == "tool" else None),
            name=m.get("name") if role != "tool" else None,
        ))
    return out


def _tools(raw: list[dict[str, Any]] | None) -> list[ToolSpec]:
    tools = []
    for i, t in enumerate(raw or []):
        fn = t.get("function") if isinstance(t, dict) else None
        if t.get("type", "function") != "function" or not isinstance(fn, dict) \
                or not isinstance(fn.get("name"), str):
            raise WireError(f"tools[{i}]: only function tools with function.name are supported")
        tools.append(ToolSpec(name=fn["name"], description=str(fn.get("description") or ""),
                              parameters=fn.get("parameters") or {"type": "object",
                                                                  "properties": {}}))
    return tools


def _tool_choice(value: str | dict[str, Any] | None) -> str:
    if value is None:
        return "auto"
    if isinstance(value, str):
        if value not in ("auto", "required", "none"):
            raise WireError(f"tool_choice: {value!r} is not auto, required or none")
        return value
    fn = value.get("function")
    if value.get("type") == "function" and isinstance(fn, dict) and isinstance(fn.get("name"), str):
        return str(fn["name"])
    raise WireError("tool_choice: an object must be {type: function, function: {name: ...}}")


def _schema(value: dict[str, Any] | None) -> dict[str, Any] | None:
    if value is None or value.get("type") == "text":
        return None
    if value.get("type") == "json_object":
        return {"type": "object"}
    if value.get("type") == "json_schema":
        spec = value.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, dict) else None
        if not isinstance(schema, dict):
            raise WireError("response_format.json_schema.schema: must be a JSON schema object")
        return schema
    raise WireError(f"response_format.type: {value.get('type')!r} is not text, json_object or "
                    "json_schema")


def completion_request(body: ChatBody, *, repeat: int) -> CompletionRequest:
    """The lens request for an OpenAI chat body; role ``adapter``, the unit's repeat index."""
    stop = [body.stop] if isinstance(body.stop, str) else body.stop
    return CompletionRequest(
        messages=_messages(body.messages), tools=_tools(body.tools),
        tool_choice=_tool_choice(body.tool_choice), response_schema=_schema(body.response_format),
        temperature=0.0 if body.temperature is None else body.temperature, top_p=body.top_p,
        max_tokens=body.max_completion_tokens or body.max_tokens, seed=body.seed, stop=stop,
        role="adapter", repeat=repeat,
    )


_FINISH = {"stop", "length", "tool_calls", "content_filter"}


class AssistantMessageJson(TypedDict, total=False):
    role: Required[Literal["assistant"]]
    content: Required[str | None]
    tool_calls: list[ToolCallJson]


class ChoiceJson(TypedDict):
    index: int
    message: AssistantMessageJson
    finish_reason: str
    logprobs: None


class UsageJson(TypedDict, total=False):
    prompt_tokens: Required[int]
    completion_tokens: int
    total_tokens: Required[int]


class ChatCompletionJson(TypedDict):
    id: str
    object: Literal["chat.completion"]
    created: int
    model: str
    choices: list[ChoiceJson]
    usage: UsageJson


class EmbeddingJson(TypedDict):
    object: Literal["embedding"]
    index: int
    embedding: list[float] | str  # base64 of little-endian float32 when asked for


class EmbeddingsJson(TypedDict):
    object: Literal["list"]
    data: list[EmbeddingJson]
    model: str
    usage: UsageJson


class ErrorDetailJson(TypedDict):
    message: str
    type: str
    code: str | None
    param: None


class ErrorJson(TypedDict):
    error: ErrorDetailJson


def chat_response(completion: Completion, model: str) -> ChatCompletionJson:
    message: AssistantMessageJson = {"role": "assistant",
                                     "content": completion.text if completion.text or
                                     not completion.tool_calls else None}
    if completion.tool_calls:
        message["tool_calls"] = [tool_call_json(c.id, c.name, c.arguments)
                                 for c in completion.tool_calls]
        finish = "tool_calls"
    else:
        finish = completion.finish_reason if completion.finish_reason in _FINISH else "stop"
    usage = completion.usage
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion",
        "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish,
                     "logprobs": None}],
        "usage": {"prompt_tokens": usage.prompt_tokens,
                  "completion_tokens": usage.completion_tokens,
                  "total_tokens": usage.total_tokens},
    }


def embeddings_response(vectors: np.ndarray, model: str, tokens: int,
                        encoding: Literal["float", "base64"]) -> EmbeddingsJson:
    data: list[EmbeddingJson] = []
    for i, vec in enumerate(np.asarray(vectors, dtype=np.float32)):
        value: list[float] | str = (base64.b64encode(vec.astype("<f4").tobytes()).decode("ascii")
                      if encoding == "base64" else [float(x) for x in vec])
        data.append({"object": "embedding", "index": i, "embedding": value})
    return {"object": "list", "data": data, "model": model,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}


def error_body(message: str, kind: str, code: str | None = None) -> ErrorJson:
    return {"error": {"message": message, "type": kind, "code": code, "param": None}}
