"""How lens talks to a local model: a stable ChatML rendering of the conversation, and the JSON
schema that constrains each turn to one call of an offered tool or a final answer.

Rendering is a pure function of the messages, and earlier turns render identically on every
turn, so llama.cpp reuses the evaluated prefix instead of re-reading the whole conversation.
Tool results are rendered compactly (``[ref_id] timestamp: text``): a small model reads that
better than raw JSON, and every token saved is prompt-evaluation time saved.
"""

from __future__ import annotations

import json
from typing import Any

from lens.models.base import CompletionRequest, Message, ToolCall, ToolSpec

ANSWER_KEY = "answer"

_REPLY_RULES = """\
# How to reply
Reply with exactly one JSON object and nothing else:
- to call a tool: {"tool": "<tool name>", "arguments": {<arguments>}}
- to give your final answer: {"answer": "<the answer, citing records like [ref_id]>"}
Search first; answer only from what the tools returned."""

_ANSWER_ONLY_NOTE = "(No more tool calls are possible now: give your final answer.)"


def im(role: str, content: str) -> str:
    return f"<|im_start|>{role}\n{content}<|im_end|>\n"


def render_tools(tools: list[ToolSpec]) -> str:
    lines = ["# Tools", "You can call these tools:"]
    for t in tools:
        lines.append(json.dumps({"name": t.name, "description": t.description,
                                 "parameters": t.parameters}, sort_keys=False,
                                ensure_ascii=False))
    return "\n".join(lines)


def render_call(call: ToolCall) -> str:
    try:
        args: Any = json.loads(call.arguments or "{}", strict=False)
    except json.JSONDecodeError:
        args = call.arguments
    return json.dumps({"tool": call.name, "arguments": args}, ensure_ascii=False)


def _scalar_meta(meta: Any) -> str:
    if not isinstance(meta, dict):
        return ""
    parts = [str(v) if k == "timestamp" else f"{k}={v}" for k, v in meta.items()
             if isinstance(v, str | int | float | bool) and v != ""]
    return " ".join(parts)


def render_tool_result(name: str | None, content: str) -> str:
    """A tool message as the model sees it."""
    try:
        data = json.loads(content)
    except (json.JSONDecodeError, TypeError):
        data = None
    head = f"Result of {name}:" if name else "Tool result:"
    if isinstance(data, dict) and isinstance(data.get("results"), list):
        rows = [r for r in data["results"] if isinstance(r, dict)]
        if not rows:
            return f"{head} no matching records."
        lines = [f"{head} {len(rows)} record(s)"]
        for r in rows:
            meta = _scalar_meta(r.get("metadata"))
            text = " ".join(str(r.get("text", "")).split())
            lines.append(f"[{r.get('ref_id', '?')}] {meta + ': ' if meta else ''}{text}")
        return "\n".join(lines)
    if isinstance(data, dict) and "ref_id" in data and "text" in data:
        meta = _scalar_meta(data.get("metadata"))
        return f"{head} record [{data['ref_id']}]{' ' + meta if meta else ''}\n{data['text']}"
    if isinstance(data, dict) and set(data) == {"error"}:
        return f"{head} error: {data['error']}"
    return f"{head}\n{content}"


def tool_rounds(messages: list[Message]) -> int:
    return sum(1 for m in messages if m.role == "assistant" and m.tool_calls)


def render_prompt(request: CompletionRequest, *, answer_only: bool = False) -> str:
    """The whole conversation in ChatML, ending with the open assistant turn."""
    tools = request.tools if request.tool_choice != "none" else []
    agentic = bool(request.tools) and request.response_schema is None
    out: list[str] = []
    messages = list(request.messages)
    system_parts = []
    if messages and messages[0].role == "system":
        system_parts.append(messages.pop(0).content)
    if agentic:
        if tools:
            system_parts.append(render_tools(tools))
        system_parts.append(_REPLY_RULES)
    if system_parts:
        out.append(im("system", "\n\n".join(p for p in system_parts if p)))
    for m in messages:
        if m.role == "assistant":
            if m.tool_calls:
                out.append(im("assistant", "\n".join(render_call(c) for c in m.tool_calls)))
            elif agentic:
                out.append(im("assistant", json.dumps({ANSWER_KEY: m.content},
                                                      ensure_ascii=False)))
            else:
                out.append(im("assistant", m.content))
        elif m.role == "tool":
            out.append(im("user", render_tool_result(m.name, m.content)))
        else:
            out.append(im(m.role, m.content))
    if agentic and answer_only:
        out.append(im("user", _ANSWER_ONLY_NOTE))
    out.append("<|im_start|>assistant\n")
    return "".join(out)


def _tighten(schema: Any) -> Any:
    """Make bounds the grammar converter ignores hold anyway: a small bounded integer range
    becomes an enum, so a constrained model cannot write ``"limit": -3``."""
    if isinstance(schema, list):
        return [_tighten(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _tighten(v) for k, v in schema.items()}
    if out.get("type") == "integer":
        lo = out.get("minimum")
        hi = out.get("maximum")
        if isinstance(lo, int) and isinstance(hi, int) and 0 <= hi - lo <= 64:
            return {"enum": list(range(lo, hi + 1))}
    return out


def action_schema(request: CompletionRequest, *, answer_only: bool = False,
                  must_call: bool = False) -> dict[str, Any]:
    """oneOf(one call of an offered tool with schema-valid arguments, a final answer).

    ``answer_only`` leaves only the answer; ``must_call`` turns "auto" into "required".
    """
    choice = request.tool_choice
    if must_call and choice == "auto":
        choice = "required"
    tools: list[ToolSpec] = []
    if not answer_only and choice != "none":
        tools = [t for t in request.tools if choice in ("auto", "required") or t.name == choice]
    alternatives: list[dict[str, Any]] = []
    for t in tools:
        params = _tighten(t.parameters) if t.parameters else {"type": "object"}
        if not params.get("properties") and params.get("type") == "object":
            params = {"type": "object", "properties": {}, "additionalProperties": False}
        alternatives.append({
            "type": "object",
            "properties": {"tool": {"const": t.name}, "arguments": params},
            "required": ["tool", "arguments"],
            "additionalProperties": False,
        })
    if not tools or choice == "auto":
        alternatives.append({
            "type": "object",
            "properties": {ANSWER_KEY: {"type": "string"}},
            "required": [ANSWER_KEY],
            "additionalProperties": False,
        })
    return alternatives[0] if len(alternatives) == 1 else {"oneOf": alternatives}


def parse_action(text: str, turn: int) -> tuple[str, list[ToolCall]]:
    """(final answer text, tool calls) from the constrained output.

    Output cut off by max_tokens is salvaged where possible: a partial answer is kept, a partial
    tool call is dropped (its arguments would be a guess).
    """
    stripped = text.strip()
    try:
        data = json.loads(stripped, strict=False)
    except json.JSONDecodeError:
        return _partial_answer(stripped), []
    if isinstance(data, dict) and "tool" in data:
        args = data.get("arguments", {})
        return "", [ToolCall(id=f"call_{turn}_0", name=str(data["tool"]),
                             arguments=json.dumps(args, ensure_ascii=False))]
    if isinstance(data, dict) and ANSWER_KEY in data:
        return str(data[ANSWER_KEY]), []
    return stripped, []


def _partial_answer(text: str) -> str:
    prefix = '{"answer":'
    compact = text.replace(" ", "", 2)
    if not compact.startswith(prefix):
        return ""
    body = text[text.index(":") + 1:].strip()
    if body.startswith('"'):
        body = body[1:]
    try:
        return json.loads(f'"{body.rstrip(chr(92))}"', strict=False)
    except json.JSONDecodeError:
        return body
