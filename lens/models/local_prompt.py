"""How lens talks to a local model: a stable ChatML rendering of the conversation, and the JSON
schema that constrains each turn to one call of an offered tool or a final answer.

Rendering is a pure function of the messages, and earlier turns render identically on every
turn, so llama.cpp reuses the evaluated prefix instead of re-reading the whole conversation.
Tool results are rendered compactly (``[ref_id] timestamp: text``): a small model reads that
better than raw JSON, and every token saved is prompt-evaluation time saved.
"""

from __future__ import annotations

import json
import re
from typing import Any

from lens.data.prompts import register_template
from lens.models.base import CompletionRequest, Message, ToolCall, ToolSpec

ANSWER_KEY = "answer"
SOURCES_KEY = "sources"
MAX_SOURCES = 4

_REPLY_RULES = """\
# How to reply
Reply with exactly one JSON object and nothing else:
- to call a tool: {"tool": "<tool name>", "arguments": {<arguments>}}
- to give your final answer: {"sources": ["<ref_id>", ...], "answer": "<the answer>"}
  where sources are the ref_ids of the records your answer relies on.
Search first; answer only from what the tools returned; give figures, dates and names exactly
as the records state them."""

_ANSWER_ONLY_NOTE = (
    "No more tool calls are possible. Answer the question now from the records above, with "
    "figures, dates and names exactly as they appear there.\nQuestion: {question}"
)


# The reply rules shape every answer a local model gives: they are part of the prompts hash.
register_template("local_reply_rules", _REPLY_RULES)
register_template("local_answer_only_note", _ANSWER_ONLY_NOTE)


def im(role: str, content: str) -> str:
    return f"<|im_start|>{role}\n{content}<|im_end|>\n"


def _arg_type(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any"
    if "enum" in schema:
        return "|".join(json.dumps(v) for v in schema["enum"])
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list of {_arg_type(schema.get('items'))}"
    return str(kind)


def render_tools(tools: list[ToolSpec], *, optional_args: bool = True) -> str:
    """One line a tool: ``name(arg: type, opt?: type) - description``. Shorter than JSON schemas
    (every prompt token costs time on a CPU) and it shows exactly the arguments the grammar
    allows."""
    lines = ["# Tools"]
    for t in tools:
        params = t.parameters if optional_args else required_only(t.parameters)
        declared = params.get("properties")
        props: dict[str, Any] = declared if isinstance(declared, dict) else {}
        required = set(params.get("required", []))
        args = ", ".join(f"{k}{'' if k in required else '?'}: {_arg_type(v)}"
                         for k, v in props.items())
        lines.append(f"- {t.name}({args}) - {' '.join(t.description.split())}")
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
        lines = [f"{head} matching records, best first:"]
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


def seen_refs(messages: list[Message]) -> list[str]:
    """Ref ids the tools have shown in this conversation, in order of first appearance."""
    refs: dict[str, None] = {}
    for m in messages:
        if m.role != "tool":
            continue
        try:
            data = json.loads(m.content)
        except (json.JSONDecodeError, TypeError):
            continue
        if not isinstance(data, dict):
            continue
        results = data.get("results")
        rows: list[Any] = results if isinstance(results, list) else [data]
        for r in rows:
            if isinstance(r, dict) and isinstance(r.get("ref_id"), str) and "text" in r:
                refs.setdefault(r["ref_id"], None)
    return list(refs)


def tool_rounds(messages: list[Message]) -> int:
    return sum(1 for m in messages if m.role == "assistant" and m.tool_calls)


def render_prompt(request: CompletionRequest, *, answer_only: bool = False,
                  optional_args: bool = True) -> str:
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
            system_parts.append(render_tools(tools, optional_args=optional_args))
        system_parts.append(_REPLY_RULES)
    if system_parts:
        out.append(im("system", "\n\n".join(p for p in system_parts if p)))
    for m in messages:
        if m.role == "assistant":
            if m.tool_calls:
                out.append(im("assistant", "\n".join(render_call(c) for c in m.tool_calls)))
            elif agentic:
                out.append(im("assistant", json.dumps({SOURCES_KEY: [], ANSWER_KEY: m.content},
                                                      ensure_ascii=False)))
            else:
                out.append(im("assistant", m.content))
        elif m.role == "tool":
            out.append(im("user", render_tool_result(m.name, m.content)))
        else:
            out.append(im(m.role, m.content))
    if agentic and answer_only:
        question = next((m.content for m in messages if m.role == "user"), "")
        out.append(im("user", _ANSWER_ONLY_NOTE.format(question=question)))
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


def required_only(params: dict[str, Any]) -> dict[str, Any]:
    """The tool's parameters without its optional ones: still schema-valid, and it keeps a small
    model from filling optional filters with invented values."""
    props = params.get("properties")
    if not isinstance(props, dict):
        return params
    required = [r for r in params.get("required", []) if r in props]
    return {**params, "properties": {k: props[k] for k in required},
            "additionalProperties": False}


def answer_schema(refs: list[str]) -> dict[str, Any]:
    """A final answer; its sources must be ref ids the tools actually returned, so every
    citation names a real record (which ones is still the model's choice)."""
    props: dict[str, Any] = {}
    required = [ANSWER_KEY]
    if refs:
        props[SOURCES_KEY] = {"type": "array", "items": {"enum": refs},
                              "maxItems": MAX_SOURCES}
        required.insert(0, SOURCES_KEY)
    props[ANSWER_KEY] = {"type": "string"}
    return {"type": "object", "properties": props, "required": required,
            "additionalProperties": False}


def ground_ref_args(params: dict[str, Any], refs: list[str]) -> dict[str, Any] | None:
    """A string ``ref_id`` argument may only name a record the tools have returned; None when
    no record has been seen yet (the tool cannot be called sensibly)."""
    props = params.get("properties")
    if not isinstance(props, dict):
        return params
    ref = props.get("ref_id")
    if not (isinstance(ref, dict) and ref.get("type") == "string"):
        return params
    if not refs:
        return None
    return {**params, "properties": {**props, "ref_id": {"enum": refs}}}


def action_schema(request: CompletionRequest, *, answer_only: bool = False,
                  must_call: bool = False, optional_args: bool = True,
                  ground_refs: bool = False) -> dict[str, Any]:
    """oneOf(one call of an offered tool with schema-valid arguments, a final answer).

    ``answer_only`` leaves only the answer; ``must_call`` turns "auto" into "required";
    without ``optional_args`` only a tool's required arguments may be written; with
    ``ground_refs`` a ``ref_id`` argument must be one the tools returned.
    """
    choice = request.tool_choice
    if must_call and choice == "auto":
        choice = "required"
    tools: list[ToolSpec] = []
    if not answer_only and choice != "none":
        tools = [t for t in request.tools if choice in ("auto", "required") or t.name == choice]
    alternatives: list[dict[str, Any]] = []
    refs = seen_refs(request.messages)
    for t in tools:
        params = _tighten(t.parameters) if t.parameters else {"type": "object"}
        if not optional_args:
            params = required_only(params)
        if ground_refs:
            grounded = ground_ref_args(params, refs)
            if grounded is None:
                continue
            params = grounded
        if not params.get("properties") and params.get("type") == "object":
            params = {"type": "object", "properties": {}, "additionalProperties": False}
        alternatives.append({
            "type": "object",
            "properties": {"tool": {"const": t.name}, "arguments": params},
            "required": ["tool", "arguments"],
            "additionalProperties": False,
        })
    if not alternatives or choice == "auto":
        alternatives.append(answer_schema(refs))
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
        return with_sources(str(data[ANSWER_KEY]), data.get(SOURCES_KEY)), []
    return stripped, []


def with_sources(answer: str, sources: Any) -> str:
    """The answer text with its chosen sources appended as ``[ref]`` citations."""
    refs = [s for s in sources or [] if isinstance(s, str) and s]
    refs = [r for r in dict.fromkeys(refs) if f"[{r}]" not in answer]
    if not refs:
        return answer.strip()
    return f"{answer.strip()} " + " ".join(f"[{r}]" for r in refs)


_PARTIAL = re.compile(
    r'^\{\s*(?:"sources"\s*:\s*(?P<src>\[[^\]]*\])\s*,\s*)?"answer"\s*:\s*"(?P<body>.*)$',
    re.DOTALL,
)


def _partial_answer(text: str) -> str:
    match = _PARTIAL.match(text)
    if match is None:
        return ""
    body = match.group("body").rstrip("\\")
    try:
        answer = json.loads(f'"{body}"', strict=False)
    except json.JSONDecodeError:
        answer = body
    sources: Any = None
    if match.group("src"):
        try:
            sources = json.loads(match.group("src"))
        except json.JSONDecodeError:
            sources = None
    return with_sources(answer, sources)
