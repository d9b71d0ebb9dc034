from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from lens.data.config import BudgetConfig
from lens.data.dataset import AgentQuestion, Episode
from lens.memory.adapter import CapabilityManifest, Document, MemoryAdapter, SearchResult
from lens.models.base import Completion, CompletionRequest, ToolCall, Usage
from lens.models.scripted import ScriptedClient
from lens.runner.agent import TRUNCATION_MARKER, Agent, extract_citations

Q = AgentQuestion(question_id="q1", prompt="What happened to latency?")


class FakeMemory(MemoryAdapter):
    def __init__(self, docs: dict[str, str], hang: bool = False, fail: bool = False) -> None:
        self.docs = docs
        self.hang = hang
        self.fail = fail

    async def reset(self, scope_id: str) -> None: ...

    async def ingest(self, episode: Episode) -> None: ...

    async def search(self, query: str, filters: dict[str, Any] | None = None,
                     limit: int | None = None) -> list[SearchResult]:
        if self.hang:
            await anyio.sleep(60)
        if self.fail:
            raise RuntimeError("index corrupted")
        return [SearchResult(ref_id=k, text=v) for k, v in self.docs.items()][: limit or 10]

    async def retrieve(self, ref_id: str) -> Document | None:
        text = self.docs.get(ref_id)
        return Document(ref_id=ref_id, text=text) if text is not None else None

    async def get_capabilities(self) -> CapabilityManifest:
        return CapabilityManifest(max_results=5)


def replay(*replies: dict[str, Any]) -> ScriptedClient:
    return ScriptedClient("replay", {"replies": list(replies)})


def search(query: str = "latency") -> dict[str, Any]:
    return {"tool_calls": [{"name": "memory_search", "arguments": {"query": query}}]}


def retrieve(ref: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "memory_retrieve", "arguments": {"ref_id": ref}}]}


async def ask(model: Any, memory: MemoryAdapter, **budget: Any) -> Any:
    agent = Agent(model=model, adapter=memory, budget=BudgetConfig(**budget),
                  capabilities=await memory.get_capabilities(), call_timeout_s=0.5)
    return await agent.answer(Q)


DOCS = {"ep1": "p99 latency 320ms", "ep2": "p99 latency 410ms", "ep3": "p99 latency 900ms"}


def test_extract_citations() -> None:
    text = "Rose [ep1] then [ep2, ep3]; see [ep1] again. Not refs: [INFO] [CRITICAL] [1] [a b c?]"
    assert extract_citations(text) == ["ep1", "ep2", "ep3"]
    assert extract_citations("[scope_01_ep_007#c2] and [doc:42]") == ["scope_01_ep_007#c2",
                                                                        "doc:42"]


@pytest.mark.anyio
async def test_cited_and_retrieved_recorded_separately() -> None:
    model = replay(search(), retrieve("ep2"), {"text": "It rose to 410ms [ep2] and [ep9]."})
    r = await ask(model, FakeMemory(DOCS))
    assert r.answer == "It rose to 410ms [ep2] and [ep9]."
    assert r.cited_refs == ["ep2", "ep9"]
    assert r.retrieved_refs == ["ep1", "ep2", "ep3"]
    assert [t.name for t in r.tool_calls] == ["memory_search", "memory_retrieve"]
    assert r.budget.stop_reason == "answered" and r.budget.compliant
    assert r.budget.used["max_turns"] == 3 and r.budget.used["max_tool_calls"] == 2
    assert len(r.model_calls) == 3


@pytest.mark.anyio
async def test_malformed_arguments_and_unknown_tool_go_back_as_errors() -> None:
    model = replay(
        {"tool_calls": [{"name": "memory_search", "arguments": '{"query": "lat'}]},
        {"tool_calls": [{"name": "delete_everything", "arguments": {}}]},
        {"tool_calls": [{"name": "memory_search", "arguments": {"query": ""}}]},
        {"text": "done"},
    )
    r = await ask(model, FakeMemory(DOCS))
    assert r.answer == "done"
    assert r.tool_errors == 3
    errors = [json.loads(m.content)["error"] for m in r.transcript if m.role == "tool"]
    assert "not valid JSON" in errors[0]
    assert "unknown tool 'delete_everything'" in errors[1]
    assert "non-empty string" in errors[2]
    assert all(not t.ok for t in r.tool_calls)


@pytest.mark.anyio
async def test_max_turns_ends_with_best_answer_so_far() -> None:
    model = replay({"text": "draft answer [ep1]", **search()}, search(), search(), search())
    r = await ask(model, FakeMemory(DOCS), max_turns=2)
    assert r.budget.stop_reason == "max_turns"
    assert r.answer == "draft answer [ep1]"
    assert r.budget.used["max_turns"] == 2
    assert r.budget.compliant  # exactly the allowance is compliant


@pytest.mark.anyio
async def test_max_tool_calls_checked_before_each_call() -> None:
    model = replay(search(), search(), search(), {"text": "never reached"})
    r = await ask(model, FakeMemory(DOCS), max_tool_calls=2)
    assert r.budget.stop_reason == "max_tool_calls"
    assert len(r.tool_calls) == 2 and r.answer == ""
    assert r.budget.compliant


@pytest.mark.anyio
async def test_payload_budget_truncates_with_visible_marker() -> None:
    big = {"ep1": "x" * 5000, "ep2": "y" * 5000}
    model = replay(search(), retrieve("ep1"), {"text": "ok"})
    r = await ask(model, FakeMemory(big), max_payload_bytes=3000)
    tool_msgs = [m.content for m in r.transcript if m.role == "tool"]
    first = json.loads(tool_msgs[0])  # still valid JSON
    assert all(res["text"].endswith(TRUNCATION_MARKER) for res in first["results"])
    assert r.tool_calls[0].truncated
    assert r.budget.used["max_payload_bytes"] <= 3000
    assert r.budget.compliant


@pytest.mark.anyio
async def test_token_budget_overrun_is_not_compliant() -> None:
    class Wordy:
        provider, model = "test", "wordy"

        async def complete(self, request: CompletionRequest) -> Completion:
            assert request.max_tokens is not None and request.max_tokens <= 100
            return Completion(text="answer", usage=Usage(prompt_tokens=80, completion_tokens=50))

        async def aclose(self) -> None: ...

    r = await ask(Wordy(), FakeMemory(DOCS), max_agent_tokens=100)
    assert r.budget.used["max_agent_tokens"] == 130
    assert not r.budget.compliant
    assert r.answer == "answer"


@pytest.mark.anyio
async def test_max_seconds_stops_a_slow_model() -> None:
    model = ScriptedClient("replay", {"replies": [search(), {"text": "late"}], "delay_s": 0.4})
    r = await ask(model, FakeMemory(DOCS), max_seconds=0.6)
    assert r.budget.stop_reason == "max_seconds"
    assert r.answer == ""
    assert r.budget.compliant


@pytest.mark.anyio
async def test_adapter_failure_and_hang_become_tool_errors() -> None:
    r = await ask(replay(search(), {"text": "nothing"}), FakeMemory(DOCS, fail=True))
    assert r.tool_errors == 1 and "index corrupted" in (r.tool_calls[0].error or "")
    assert r.tracebacks and "RuntimeError" in r.tracebacks[0]
    r = await ask(replay(search(), {"text": "nothing"}), FakeMemory(DOCS, hang=True))
    assert "did not answer within 0.5 s" in (r.tool_calls[0].error or "")
    assert r.answer == "nothing"


@pytest.mark.anyio
async def test_scripted_policy_cites_what_it_retrieved() -> None:
    memory = FakeMemory({"ep1": "The p99 latency rose to 410ms on Tuesday.",
                         "ep2": "Lunch was served at noon."})
    r = await ask(ScriptedClient("policy"), memory)
    assert "410ms" in r.answer
    assert r.cited_refs and set(r.cited_refs) <= set(r.retrieved_refs)
    assert r.cited_refs[0] == "ep1"


def test_tool_call_parsed_arguments_rejects_non_objects() -> None:
    with pytest.raises(ValueError, match="JSON object"):
        ToolCall(id="1", name="x", arguments="[1, 2]").parsed_arguments()
