"""The fixed reader (``agent.mode: fixed_reader``): the memory is asked once, with the question,
and its top results go to the reader model in the benchmark's reader prompt. This is how the
field's published retrieval-augmented tables compare memories under one reader (LongMemEval's
``src/generation/run_generation.py``, the LongMemEval-V2 leaderboard's fixed reader), so a lens
figure from this mode can stand beside them; in the tool-using mode the agent under test is the
reader.

The prompt has the shape of LongMemEval's reader prompt (lens's own wording): an instruction, a
"History Chats" block with one section per retrieved result (its date and its text), sorted by
date as the official generation sorts the retrieved sessions, then "Current Date" (the question's
"now", left out when the dataset gives none) and the question. The history is cut at the
session's payload budget (the official generation cuts it at a token limit), with a visible
marker. ``agent.reader_prompt_file`` replaces lens's wording with a publisher's template
(lens/data/reader_prompts.py); the history, its order and its cut stay lens's. The search is
recorded as a ``memory_search`` tool call, so retrieval metrics read it as
they read the agent's first search.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

import anyio

from lens.data.config import BudgetConfig
from lens.data.dataset import AgentQuestion, parse_timestamp
from lens.data.reader_prompts import DEFAULT_READING, DEFAULT_TOP_K, Reading, reader_prompt
from lens.memory.adapter import MemoryAdapter, SearchResult
from lens.memory.contract import ContractBreach
from lens.memory.executor.remote import AdapterCallError, AdapterWorkerLost
from lens.models.base import CompletionRequest, Message, ModelClient
from lens.runner.agent import (
    DEFAULT_TURN_MAX_TOKENS,
    TRUNCATION_MARKER,
    AgentResult,
    ToolError,
    checked_search,
    extract_citations,
)
from lens.runs.budget import BudgetMeter
from lens.runs.records import ModelCallRecord, ToolCallRecord


@dataclass
class FixedReader:
    """Answers a question with one search and one reader call; returns what the agent returns,
    so the run records it the same way."""

    model: ModelClient
    adapter: MemoryAdapter
    budget: BudgetConfig
    top_k: int = DEFAULT_TOP_K
    reading: Reading = DEFAULT_READING
    # A reader prompt file's text (``agent.reader_prompt_file``), in place of lens's wording.
    template: str | None = None
    # When each episode happened (the scope's timestamps), for results that do not carry one.
    episode_times: Mapping[str, datetime] | None = None
    call_timeout_s: float = 60.0
    temperature: float = 0.0
    max_tokens: int | None = None
    seed: int | None = None
    repeat: int = 0

    async def answer(self, question: AgentQuestion) -> AgentResult:
        meter = BudgetMeter(self.budget)
        tracebacks: list[str] = []
        search, results = await self._search(question.prompt, meter, tracebacks)
        sessions = [(self._date(r), r.text) for r in results]
        prompt, size, cut = reader_prompt(question.prompt, question.now, sessions,
                                          meter.remaining_payload(), TRUNCATION_MARKER,
                                          self.reading, self.template)
        meter.payload_bytes += size
        search.payload_bytes, search.truncated = size, cut
        messages = [Message(role="user", content=prompt)]
        answer, calls = "", []
        stop = meter.before_model_call() or "answered"
        if stop == "answered":
            request = CompletionRequest(
                messages=list(messages), temperature=self.temperature,
                max_tokens=max(1, min(self.max_tokens or DEFAULT_TURN_MAX_TOKENS,
                                      meter.remaining_tokens())),
                seed=self.seed, role="agent", repeat=self.repeat)
            meter.turns += 1
            with anyio.move_on_after(max(0.0, self.budget.max_seconds - meter.elapsed())) as cs:
                completion = await self.model.complete(request)
            if cs.cancelled_caught:
                stop = "max_seconds"
            else:
                meter.agent_tokens += completion.usage.total_tokens
                answer = (completion.text or "").strip()
                messages.append(Message(role="assistant", content=completion.text or ""))
                calls.append(ModelCallRecord(
                    role="agent", provider=completion.provider, model=completion.model,
                    prompt_tokens=completion.usage.prompt_tokens,
                    completion_tokens=completion.usage.completion_tokens,
                    latency_s=completion.latency_s, retries=completion.retries,
                    cached=completion.cached, cost_usd=completion.cost_usd,
                    usage_unknown=completion.usage.unknown))
                if not answer:
                    stop = "empty_answer"
        return AgentResult(answer=answer, cited_refs=extract_citations(answer),
                           retrieved_refs=list(search.result_refs), tool_calls=[search],
                           tool_errors=0 if search.ok else 1, model_calls=calls,
                           transcript=messages, budget=meter.outcome(stop),
                           tracebacks=tracebacks)

    def _date(self, result: SearchResult) -> datetime | None:
        raw = result.metadata.get("timestamp")
        if isinstance(raw, str):
            try:
                # Naive times are UTC (lens's rule), so that every date compares.
                return parse_timestamp(raw)
            except ValueError:
                pass
        # A chunk ref (episode_id#cN) dates from its episode.
        known = (self.episode_times or {}).get(result.ref_id.split("#", 1)[0])
        return parse_timestamp(known) if known is not None else None

    async def _search(self, query: str, meter: BudgetMeter, tracebacks: list[str]
                      ) -> tuple[ToolCallRecord, list[SearchResult]]:
        """The one search: its record, and its results (none when it failed: the reader then
        answers from no history, and the failure is counted as a tool error)."""
        args: dict[str, object] = {"query": query, "limit": self.top_k}
        meter.tool_calls += 1
        started = time.perf_counter()
        enforced = getattr(self.adapter, "enforces_timeouts", False)
        try:
            try:
                with anyio.fail_after(None if enforced else self.call_timeout_s):
                    raw = await self.adapter.search(query, None, self.top_k)
            except TimeoutError:
                raise ToolError(f"the memory system did not answer within "
                                f"{self.call_timeout_s} s") from None
            except (AdapterWorkerLost, ToolError):
                raise
            except ContractBreach as exc:  # found in the adapter's own process
                raise ToolError(str(exc)) from None
            except AdapterCallError as exc:
                tracebacks.append(exc.traceback_text or traceback.format_exc())
                raise ToolError(f"the memory system failed: {exc}") from None
            except Exception as exc:
                tracebacks.append(traceback.format_exc())
                raise ToolError(f"the memory system failed: {type(exc).__name__}: "
                                f"{exc}") from None
            results = checked_search(raw)[:self.top_k]
        except ToolError as exc:
            return ToolCallRecord(name="memory_search", arguments=args, ok=False, error=str(exc),
                                  latency_s=time.perf_counter() - started), []
        return ToolCallRecord(name="memory_search", arguments=args, ok=True,
                              result_refs=[r.ref_id for r in results], result_count=len(results),
                              latency_s=time.perf_counter() - started), results
