"""The fixed reader (``agent.mode: fixed_reader``): the memory is asked once, with the question,
and its top results go to the reader model in the benchmark's reader prompt. This is how the
field's published retrieval-augmented tables compare memories under one reader (LongMemEval's
``src/generation/run_generation.py``, the LongMemEval-V2 leaderboard's fixed reader), so a lens
figure from this mode can stand beside them; in the tool-using mode the agent under test is the
reader.

The prompt has the shape of LongMemEval's reader prompt (lens's own wording): an instruction, a
"History Chats" block with one section per retrieved result (its date and its text), sorted by
date as the official generation sorts the retrieved sessions, then "Current Date" (the question's
"now", left out when the dataset gives none) and the question. The history is cut as the
official generation cuts it: at the reader model's context window less the answer's
``max_tokens`` and 1,000 tokens, counted by the model's tokenizer where lens has it (llama_cpp)
and estimated otherwise, keeping the history's start; or at
``agent.budget.max_payload_bytes`` when the config sets it (``reader_cut`` resolves the rule from
the run's agent config, as the run's condition records it). A cut ends in a visible marker.
Under the window's rule the session's token limit is the window too, unless
``agent.budget.max_agent_tokens`` is set. ``agent.reader_prompt_file`` replaces lens's
wording with a publisher's template (lens/data/reader_prompts.py); the history, its order and
its cut stay lens's. The search is recorded as a ``memory_search`` tool call, so retrieval
metrics read it as they read the agent's first search. The record's budget says which cut
applied: ``max_history_tokens`` and ``context_window`` under the window's rule,
``max_payload_bytes`` when the config set it.
"""

from __future__ import annotations

import functools
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio

from lens.data.config import AgentConfig, BudgetConfig
from lens.data.dataset import AgentQuestion, parse_timestamp
from lens.data.reader_prompts import (
    DEFAULT_READING,
    DEFAULT_TOP_K,
    LLAMA_COUNTED_BY,
    EstimatedTokens,
    ReaderCut,
    Reading,
    Tokenizer,
    reader_cut,
    reader_prompt_history,
)
from lens.memory.adapter import MemoryAdapter, SearchResult
from lens.memory.contract import ContractBreach
from lens.memory.executor.remote import AdapterCallError, AdapterWorkerLost
from lens.models.base import CompletionRequest, Message, ModelClient
from lens.models.local_models import resolve_model_path
from lens.runner.agent import (
    TRUNCATION_MARKER,
    AgentResult,
    ToolError,
    checked_search,
    extract_citations,
)
from lens.runs.budget import BudgetMeter
from lens.runs.records import ModelCallRecord, ToolCallRecord


@functools.lru_cache(maxsize=4)
def _llama_vocab(path: str) -> Any:
    from llama_cpp import Llama

    return Llama(model_path=path, vocab_only=True, verbose=False)


class LlamaTokens:
    """The llama_cpp model's own tokenizer (its vocabulary only, loaded once per file)."""

    counted_by = LLAMA_COUNTED_BY

    def __init__(self, path: str) -> None:
        self.llm = _llama_vocab(path)

    def _ids(self, text: str) -> list[int]:
        return list(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def count(self, text: str) -> int:
        return len(self._ids(text))

    def head(self, text: str, tokens: int) -> str:
        out: bytes = self.llm.detokenize(self._ids(text)[:tokens])
        return out.decode("utf-8", errors="ignore")


def reader_tokenizer(agent: AgentConfig) -> Tokenizer:
    """The reader model's tokenizer where lens has one (llama_cpp, the model file the config
    names), else an estimate."""
    if agent.provider == "llama_cpp":
        models_dir = agent.options.get("models_dir")
        try:
            path, _ = resolve_model_path(agent.name, Path(models_dir) if models_dir else None)
            return LlamaTokens(str(path))
        except Exception:  # no llama-cpp-python, or a file it cannot read: the call will say
            pass
    return EstimatedTokens()


@dataclass
class FixedReader:
    """Answers a question with one search and one reader call; returns what the agent returns,
    so the run records it the same way."""

    model: ModelClient
    adapter: MemoryAdapter
    # The run's agent section: mode, top_k, reading, max_tokens, temperature, budget, and the
    # model whose window the history is cut at (``reader_cut``, as the condition records it).
    config: AgentConfig
    # A reader prompt file's text (``agent.reader_prompt_file``), in place of lens's wording.
    template: str | None = None
    # When each episode happened (the scope's timestamps), for results that do not carry one.
    episode_times: Mapping[str, datetime] | None = None
    call_timeout_s: float = 60.0
    seed: int | None = None
    repeat: int = 0
    # Resolved from ``config``.
    cut: ReaderCut = field(init=False)
    budget: BudgetConfig = field(init=False)
    top_k: int = field(init=False)
    reading: Reading = field(init=False)

    def __post_init__(self) -> None:
        self.cut = reader_cut(self.config)
        self.budget = self.config.budget
        self.top_k = self.config.top_k or DEFAULT_TOP_K
        self.reading = self.config.reading or DEFAULT_READING

    async def answer(self, question: AgentQuestion) -> AgentResult:
        answer_tokens = self.cut.answer_tokens
        limit = self.cut.limit(reader_tokenizer(self.config) if self.cut.tokens == "tokenizer"
                               else None)
        budget = self.budget
        if limit.window is not None and "max_agent_tokens" not in budget.model_fields_set:
            # One call of at most the window: the tool agent's session limit does not apply.
            budget = budget.model_copy(update={"max_agent_tokens": limit.window})
        meter = BudgetMeter(budget)
        tracebacks: list[str] = []
        search, results = await self._search(question.prompt, meter, tracebacks)
        sessions = [(self._date(r), r.text) for r in results]
        prompt, history = reader_prompt_history(
            question.prompt, question.now, sessions,
            limit if limit.max_bytes is None else meter.remaining_payload(),
            TRUNCATION_MARKER, self.reading, self.template)
        meter.payload_bytes += history.size
        search.payload_bytes, search.truncated = history.size, history.cut
        messages = [Message(role="user", content=prompt)]
        answer, calls = "", []
        stop = meter.before_model_call() or "answered"
        if stop == "answered":
            request = CompletionRequest(
                messages=list(messages), temperature=self.config.temperature,
                max_tokens=max(1, min(answer_tokens, meter.remaining_tokens())),
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
        outcome = meter.outcome(stop)
        if limit.max_tokens is not None:
            # The window's rule: the history's limit is in tokens, not in bytes.
            outcome.limits.pop("max_payload_bytes", None)
            outcome.limits["max_history_tokens"] = limit.max_tokens
            outcome.limits["context_window"] = limit.window or 0
            outcome.used["max_history_tokens"] = history.tokens or 0
            outcome.compliant = all(outcome.used[k] <= outcome.limits[k]
                                    for k in outcome.used if k in outcome.limits)
        return AgentResult(answer=answer, cited_refs=extract_citations(answer),
                           retrieved_refs=list(search.result_refs), tool_calls=[search],
                           tool_errors=0 if search.ok else 1, model_calls=calls,
                           transcript=messages, budget=outcome,
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
