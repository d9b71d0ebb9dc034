"""The tool-calling agent: answers one question only through a memory adapter's tools."""

from __future__ import annotations

import asyncio
import json
import re
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

import anyio

from lens.data.config import BudgetConfig
from lens.data.dataset import AgentQuestion
from lens.data.prompts import (
    AGENT_SYSTEM_PROMPT,
    EMPTY_ANSWER_REMINDER,
    TOOL_DESCRIPTIONS,
    TOOL_REMINDER,
    question_message,
)
from lens.data.standing import apply_standing_context
from lens.memory.adapter import CapabilityManifest, Document, MemoryAdapter, SearchResult
from lens.memory.contract import ContractBreach, check_result
from lens.memory.executor.remote import AdapterCallError, AdapterWorkerLost
from lens.memory.executor.worker import finite, tool_result
from lens.models.base import (
    Completion,
    CompletionRequest,
    Message,
    ModelClient,
    ToolCall,
    ToolSpec,
)
from lens.models.providers import honours_tool_choice_required
from lens.runs.budget import BudgetMeter
from lens.runs.records import BudgetOutcome, ModelCallRecord, ToolCallRecord

# The completion allowance of one agent turn when the agent's config sets no max_tokens. Hosted
# APIs book a request's max_tokens against the tokens-per-minute limit when it arrives, so
# sending the session's whole remaining budget (16,000 by default) would make every call count
# as a very long one and throttle the run; an answer or a tool call fits well within this.
DEFAULT_TURN_MAX_TOKENS = 2048
TRUNCATION_MARKER = " …[truncated by lens: payload budget reached]"
_CITATION = re.compile(r"\[([^\[\]\n]{1,200})\]")
_REF = re.compile(r"^[A-Za-z0-9_.:#/-]+$")
# A ref carries a digit or a separator; a bracketed plain word ([INFO], [CRITICAL]) is a log tag
# the answer quoted, not a citation.
_REF_MARK = re.compile(r"[0-9_#:-]")
# Code cites nothing: fenced blocks and inline backtick spans.
_CODE = re.compile(r"```.*?(?:```|$)|`[^`\n]*`", re.S)
CORE_TOOLS = ("memory_search", "memory_retrieve", "memory_capabilities")


def extract_citations(answer: str) -> list[str]:
    """Ref ids cited as ``[ref]`` or ``[ref1, ref2]``, in order of first appearance.

    Only that syntax cites: a bracket is a citation when everything in it is a ref (a token
    with a digit or a separator, unquoted), so a JSON array (``["CHG-5382", "224 ms"]``), a
    bracketed remark ("[see CHG-5382]"), a log tag ("[INFO]") or anything inside code
    (backticks, fenced blocks) cites nothing."""
    out: dict[str, None] = {}
    for group in _CITATION.findall(_CODE.sub(" ", answer)):
        parts = [p for p in re.split(r"[,;]\s*|\s+", group.strip()) if p]
        if parts and all(_REF.match(p) and _REF_MARK.search(p) and not p.isdigit()
                         for p in parts):
            out.update(dict.fromkeys(parts))
    return list(out)


def tool_specs(caps: CapabilityManifest) -> list[ToolSpec]:
    search_props: dict[str, Any] = {
        "query": {"type": "string", "description": "what to look for"},
        "limit": {"type": "integer", "minimum": 1, "maximum": caps.max_results},
    }
    for f in caps.filter_fields:
        search_props[f] = {"type": "string", "description": f"filter on {f}"}
    specs = [
        ToolSpec(name="memory_search", description=TOOL_DESCRIPTIONS["memory_search"],
                 parameters={"type": "object", "properties": search_props,
                             "required": ["query"], "additionalProperties": False}),
        ToolSpec(name="memory_retrieve", description=TOOL_DESCRIPTIONS["memory_retrieve"],
                 parameters={"type": "object",
                             "properties": {"ref_id": {"type": "string"}},
                             "required": ["ref_id"], "additionalProperties": False}),
        ToolSpec(name="memory_capabilities",
                 description=TOOL_DESCRIPTIONS["memory_capabilities"],
                 parameters={"type": "object", "properties": {},
                             "additionalProperties": False}),
    ]
    for extra in caps.extra_tools:
        if extra.name in CORE_TOOLS:
            continue
        specs.append(ToolSpec(name=extra.name, description=extra.description,
                              parameters=extra.parameters))
    return specs


@dataclass
class AgentResult:
    answer: str
    cited_refs: list[str]
    retrieved_refs: list[str]
    tool_calls: list[ToolCallRecord]
    tool_errors: int
    model_calls: list[ModelCallRecord]
    transcript: list[Message]
    budget: BudgetOutcome
    tracebacks: list[str] = field(default_factory=list)
    standing_context_bytes: int = 0
    standing_context_truncated: bool = False


class ToolError(Exception):
    """A tool call the agent got wrong or the adapter failed; reported back to the model."""


@dataclass
class Agent:
    model: ModelClient
    adapter: MemoryAdapter
    budget: BudgetConfig
    capabilities: CapabilityManifest
    call_timeout_s: float = 60.0
    temperature: float = 0.0
    max_tokens: int | None = None
    seed: int | None = None
    repeat: int = 0
    system_prompt: str = AGENT_SYSTEM_PROMPT
    # The tool specs of ``capabilities``, when the caller built them once for many questions.
    tools: list[ToolSpec] | None = None
    # The adapter's standing-context block for this checkpoint (see lens/data/standing.py).
    standing_context: str | None = None
    # Rounds of tool calls before the agent may answer (AgentConfig.min_tool_rounds).
    min_tool_rounds: int = 0

    async def answer(self, question: AgentQuestion) -> AgentResult:
        meter = BudgetMeter(self.budget)
        session = _Session(self, meter, question)
        stop_reason = "max_seconds"
        with anyio.move_on_after(self.budget.max_seconds):
            stop_reason = await session.loop()
        outcome = meter.outcome(stop_reason)
        if stop_reason == "max_seconds":
            # lens itself stopped the session at the deadline; the overshoot is cancellation
            # latency, not the agent's.
            outcome.used["max_seconds"] = min(outcome.used["max_seconds"],
                                              self.budget.max_seconds)
            outcome.compliant = all(outcome.used[k] <= outcome.limits[k] for k in outcome.used)
        answer = session.final_answer
        return AgentResult(
            answer=answer,
            cited_refs=extract_citations(answer),
            retrieved_refs=list(session.retrieved),
            tool_calls=session.tool_records,
            tool_errors=session.tool_errors,
            model_calls=session.model_records,
            transcript=session.messages,
            budget=outcome,
            tracebacks=session.tracebacks,
            standing_context_bytes=session.standing.bytes,
            standing_context_truncated=session.standing.truncated,
        )


class _Session:
    def __init__(self, agent: Agent, meter: BudgetMeter, question: AgentQuestion) -> None:
        self.agent = agent
        self.meter = meter
        self.tools = agent.tools if agent.tools is not None else tool_specs(agent.capabilities)
        self.tool_names = {t.name for t in self.tools}
        # System prompt assembly: the standing context is memory payload, charged up front.
        self.standing = apply_standing_context(agent.system_prompt, agent.standing_context,
                                               meter.remaining_payload())
        meter.payload_bytes += self.standing.bytes
        self.messages: list[Message] = [
            Message(role="system", content=self.standing.system_prompt),
            # "Now" goes with the question, so the transcript records what the agent was told.
            Message(role="user", content=question_message(question.prompt, question.now)),
        ]
        self.retrieved: dict[str, None] = {}
        self.tool_records: list[ToolCallRecord] = []
        self.model_records: list[ModelCallRecord] = []
        self.tool_errors = 0
        self.tracebacks: list[str] = []
        self.final_answer = ""
        self.reminded = False
        # Assistant turns that called a tool, and whether the model was reminded to call one.
        self.tool_rounds = 0
        self.tool_reminded = False
        self.must_call = bool(self.tools) and agent.min_tool_rounds > 0
        self.required = honours_tool_choice_required(agent.model)

    async def loop(self) -> str:
        while True:
            exhausted = self.meter.before_model_call()
            if exhausted:
                return exhausted
            completion = await self._call_model()
            text = completion.text or ""
            self.messages.append(
                Message(role="assistant", content=text, tool_calls=completion.tool_calls)
            )
            if text.strip():
                self.final_answer = text.strip()
            if not completion.tool_calls:
                if text.strip():
                    if self._short_of_tool_rounds() and not self.tool_reminded:
                        # The model answered (or narrated the calls it meant to make) before
                        # consulting memory: one reminder, counted against the budget.
                        self.tool_reminded = True
                        self.messages.append(Message(role="user", content=TOOL_REMINDER))
                        continue
                    return "answered"
                # Text said beside an earlier tool call ("let me search") is not the answer
                # the agent finished with.
                self.final_answer = ""
                if self.reminded:
                    return "empty_answer"
                # One reminder, counted against the budget like any turn.
                self.reminded = True
                self.messages.append(Message(role="user", content=EMPTY_ANSWER_REMINDER))
                continue
            self.tool_rounds += 1
            for call in completion.tool_calls:
                exhausted = self.meter.before_tool_call()
                if exhausted:
                    return exhausted
                content = await self._run_tool(call)
                self.messages.append(
                    Message(role="tool", content=content, tool_call_id=call.id, name=call.name)
                )

    def _short_of_tool_rounds(self) -> bool:
        return self.must_call and self.tool_rounds < self.agent.min_tool_rounds

    async def _call_model(self) -> Completion:
        a = self.agent
        remaining = self.meter.remaining_tokens()
        max_tokens = min(a.max_tokens or DEFAULT_TURN_MAX_TOKENS, remaining)
        choice = "required" if self._short_of_tool_rounds() and self.required else "auto"
        # Validation makes the request's own copy of the list (the conversation grows on).
        request = CompletionRequest(
            messages=self.messages, tools=self.tools, tool_choice=choice,
            temperature=a.temperature, max_tokens=max(1, max_tokens), seed=a.seed,
            role="agent", repeat=a.repeat,
        )
        self.meter.turns += 1
        completion = await a.model.complete(request)
        self.meter.agent_tokens += completion.usage.total_tokens
        self.model_records.append(ModelCallRecord(
            role="agent", provider=completion.provider, model=completion.model,
            prompt_tokens=completion.usage.prompt_tokens,
            completion_tokens=completion.usage.completion_tokens,
            latency_s=completion.latency_s, retries=completion.retries,
            cached=completion.cached, cost_usd=completion.cost_usd,
            usage_unknown=completion.usage.unknown,
        ))
        return completion

    async def _run_tool(self, call: ToolCall) -> str:
        self.meter.tool_calls += 1
        started = time.perf_counter()
        args: dict[str, Any] | str = call.arguments
        refs: list[str] = []
        count = 0
        try:
            if call.name not in self.tool_names:
                raise ToolError(f"unknown tool {call.name!r}; available: "
                                f"{', '.join(sorted(self.tool_names))}")
            try:
                args = call.parsed_arguments()
            except ValueError as exc:
                raise ToolError(str(exc)) from None
            try:
                payload, refs, count = await self._dispatch(call.name, args)
                content, truncated, refs = _fit(payload, refs, self.meter.remaining_payload())
            except (TypeError, ValueError, RecursionError) as exc:
                # What the adapter returned cannot be written as JSON (an object in metadata):
                # this call fails, the question goes on.
                raise ToolError("the memory system returned a result that cannot be sent as "
                                f"JSON ({type(exc).__name__}: {str(exc)[:200]})") from None
            ok, error = True, None
        except ToolError as exc:
            self.tool_errors += 1
            content, truncated, ok, error = json.dumps({"error": str(exc)}), False, False, str(exc)
        size = len(content.encode("utf-8"))
        if content == BUDGET_NOTICE:
            # lens's own notice is not memory payload; it only uses up what was left.
            size = min(size, self.meter.remaining_payload())
        self.meter.payload_bytes += size
        self.retrieved.update(dict.fromkeys(refs))
        self.tool_records.append(ToolCallRecord(
            name=call.name, arguments=args, ok=ok, error=error, result_refs=refs,
            result_count=count, payload_bytes=size, truncated=truncated,
            latency_s=time.perf_counter() - started,
        ))
        return content

    async def _adapter_call(self, fn: Any, *args: Any) -> Any:
        # An adapter in a process of its own enforces the timeout itself: only it can stop
        # the call, and the loss of its process ends the unit rather than one tool call.
        enforced = getattr(self.agent.adapter, "enforces_timeouts", False)
        try:
            if enforced:
                return await fn(*args)
            # asyncio.timeout, not anyio.fail_after: an anyio cancel scope per tool call cost
            # more of lens's CPU per call than the tool call itself with a fast memory. An
            # outside cancellation (the session's time budget) stays a cancellation.
            async with asyncio.timeout(self.agent.call_timeout_s):
                return await fn(*args)
        except TimeoutError:
            raise ToolError(
                f"the memory system did not answer within {self.agent.call_timeout_s} s"
            ) from None
        except AdapterWorkerLost:
            raise
        except ContractBreach as exc:  # found in the adapter's own process
            raise ToolError(str(exc)) from None
        except AdapterCallError as exc:
            self.tracebacks.append(exc.traceback_text or traceback.format_exc())
            raise ToolError(f"the memory system failed: {exc}") from None
        except Exception as exc:
            self.tracebacks.append(traceback.format_exc())
            raise ToolError(f"the memory system failed: {type(exc).__name__}: {exc}") from None

    async def _dispatch(self, name: str, args: dict[str, Any]) -> tuple[dict[str, Any],
                                                                          list[str], int]:
        adapter = self.agent.adapter
        caps = self.agent.capabilities
        if name == "memory_search":
            query = args.get("query")
            if not isinstance(query, str) or not query.strip():
                raise ToolError("'query' must be a non-empty string")
            limit = args.get("limit")
            if limit is not None and (not isinstance(limit, int) or limit < 1):
                raise ToolError("'limit' must be a positive integer")
            limit = min(limit or caps.max_results, caps.max_results)
            unknown = set(args) - {"query", "limit", *caps.filter_fields}
            if unknown:
                raise ToolError(f"unknown argument(s) {sorted(unknown)}")
            filters = {k: v for k, v in args.items() if k in caps.filter_fields and v}
            raw = await self._adapter_call(adapter.search, query, filters or None, limit)
            results = checked_search(raw)[:limit]
            payload = {"results": [r.model_dump(mode="json") for r in results]}
            return payload, [r.ref_id for r in results], len(results)
        if name == "memory_retrieve":
            ref = args.get("ref_id")
            if not isinstance(ref, str) or not ref:
                raise ToolError("'ref_id' must be a non-empty string")
            doc = checked_document(await self._adapter_call(adapter.retrieve, ref))
            if doc is None:
                return {"error": f"no record with ref_id {ref!r}"}, [], 0
            return ({"ref_id": doc.ref_id, "text": doc.text, "metadata": doc.metadata},
                    [doc.ref_id], 1)
        if name == "memory_capabilities":
            return caps.model_dump(mode="json"), [], 0
        result = tool_result(await self._adapter_call(adapter.call_extended_tool, name, args))
        return {"result": result}, [], 1



def checked_search(raw: Any) -> list[SearchResult]:
    """A search's results, or the breach of the contract as a failed tool call."""
    try:
        return list(check_result("search", raw))
    except ContractBreach as exc:
        raise ToolError(str(exc)) from None


def checked_document(raw: Any) -> Document | None:
    try:
        doc: Document | None = check_result("retrieve", raw)
    except ContractBreach as exc:
        raise ToolError(str(exc)) from None
    return doc


BUDGET_NOTICE = json.dumps({"error": "payload budget exhausted; answer with what you have"})


# json.dumps(ensure_ascii=False, allow_nan=False), without building an encoder per call.
_TOOL_JSON = json.JSONEncoder(ensure_ascii=False, allow_nan=False)


def _fit(payload: dict[str, Any], refs: list[str], allowance: int) -> tuple[str, bool, list[str]]:
    """Serialise a tool result within ``allowance`` bytes, trimming texts with a visible marker.

    NaN and infinities go as null (``finite``); the result is walked for them only when it
    has one. Trimming keeps the JSON well-formed; refs whose result no longer fits are dropped
    so that the agent is only credited with what it actually received."""
    try:
        content = _TOOL_JSON.encode(payload)
    except ValueError:
        payload = finite(payload)
        content = _TOOL_JSON.encode(payload)
    if len(content.encode("utf-8")) <= allowance:
        return content, False, refs
    is_search = "results" in payload
    texts: list[dict[str, Any]] = payload["results"] if is_search else [payload]
    if texts and all(isinstance(t.get("text"), str) for t in texts):
        blank = [{**t, "text": ""} for t in texts]
        skeleton = {**payload, "results": blank} if is_search else blank[0]
        fixed = len(json.dumps(skeleton, ensure_ascii=False).encode("utf-8"))
        # JSON escaping can grow a text; leave headroom so the result still fits.
        per_text = (allowance - fixed) // len(texts) - len(TRUNCATION_MARKER.encode()) - 16
        if per_text > 0:
            trimmed = [
                t if len(json.dumps(t["text"], ensure_ascii=False).encode()) <= per_text
                else {**t, "text": _cut(t["text"], per_text // 2) + TRUNCATION_MARKER}
                for t in texts
            ]
            new = {**payload, "results": trimmed} if is_search else trimmed[0]
            content = json.dumps(new, ensure_ascii=False, allow_nan=False)
            if len(content.encode("utf-8")) <= allowance:
                return content, True, refs
    return BUDGET_NOTICE, True, []


def _cut(text: str, max_bytes: int) -> str:
    return text.encode("utf-8")[:max_bytes].decode("utf-8", errors="ignore")
