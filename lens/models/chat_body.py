"""The JSON body of a chat request, joined from pieces encoded once.

An agent's conversation only grows: every turn re-sends the system prompt, the tool list and
all earlier messages. Encoding the whole conversation afresh on each turn was the largest single
cost of a model call in lens's profile at hundreds of calls in flight (``bench/RESULTS.md``,
"Runner"). Here each message and each tool list is encoded once and the body is joined from
the pieces: the same JSON object that encoding the whole request gives, with the conversation
last.

Pieces are keyed by object identity and hold their object, so an identity is never reused while
its piece is cached; ``Message``, ``ToolCall`` and ``ToolSpec`` are frozen, so a cached piece
cannot go stale. The cache keeps the most recent pieces only, up to a byte budget: a few
hundred conversations in flight need a few megabytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lens.models.base import Message, ToolSpec
from lens.models.json_http import dumps

_MAX_BYTES = 32 * 1024 * 1024
_MAX_TOOL_LISTS = 64


def openai_message(m: Message) -> dict[str, Any]:
    if m.role == "tool":
        return {"role": "tool", "tool_call_id": m.tool_call_id or "", "content": m.content}
    if m.role == "assistant":
        # "" rather than None: some compatible servers reject a null content.
        msg: dict[str, Any] = {"role": "assistant", "content": m.content or ""}
        if m.tool_calls:
            msg["tool_calls"] = [
                {"id": c.id, "type": "function",
                 "function": {"name": c.name, "arguments": c.arguments}}
                for c in m.tool_calls
            ]
        return msg
    return {"role": m.role, "content": m.content}


def openai_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [{"type": "function",
             "function": {"name": t.name, "description": t.description,
                          "parameters": t.parameters}}
            for t in tools]


class ChatBodyEncoder:
    def __init__(self, max_bytes: int = _MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._messages: dict[int, tuple[Message, bytes]] = {}
        self._message_bytes = 0
        self._tools: dict[tuple[int, ...], tuple[Sequence[ToolSpec], bytes]] = {}

    def body(self, params: dict[str, Any], messages: Sequence[Message],
             tools: Sequence[ToolSpec] | None) -> bytes:
        """``params`` (everything but the conversation) with ``"messages"`` and, when given,
        ``"tools"`` added, as compact UTF-8 JSON."""
        head = dumps(params)
        parts = [head[:-1], b"," if len(head) > 2 else b"", b'"messages":[',
                 b",".join([self._message(m) for m in messages]), b"]"]
        if tools is not None:
            parts += [b',"tools":', self._tool_list(tools)]
        parts.append(b"}")
        return b"".join(parts)

    def _message(self, m: Message) -> bytes:
        # An entry holds its message, so the id names this very object while it is cached.
        hit = self._messages.get(id(m))
        if hit is not None:
            return hit[1]
        data = dumps(openai_message(m))
        self._messages[id(m)] = (m, data)
        self._message_bytes += len(data)
        while self._message_bytes > self.max_bytes:
            # Oldest first: dicts keep insertion order.
            oldest = next(iter(self._messages))
            self._message_bytes -= len(self._messages.pop(oldest)[1])
        return data

    def _tool_list(self, tools: Sequence[ToolSpec]) -> bytes:
        # An entry holds its specs, so the ids name these very objects while it is cached.
        key = tuple(map(id, tools))
        hit = self._tools.get(key)
        if hit is not None:
            return hit[1]
        data = dumps(openai_tools(tools))
        if len(self._tools) >= _MAX_TOOL_LISTS:
            del self._tools[next(iter(self._tools))]
        self._tools[key] = (list(tools), data)
        return data
