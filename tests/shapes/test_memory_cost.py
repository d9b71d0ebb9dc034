"""The memory cost and latency section against hand-computed values; unknown prices stay
unknown."""

from __future__ import annotations

from pathlib import Path

import pytest

from lens.report.foundations.data import QuestionRow, RunData
from lens.report.sections.memory_cost import memory_cost, memory_cost_section, percentiles
from lens.runs.records import ModelCallRecord, QuestionRecord, ToolCallRecord


def _row(adapter: str, latencies: list[float], agent_cost: float | None) -> QuestionRow:
    calls = [ToolCallRecord(name="memory_search", arguments={}, ok=True, latency_s=x)
             for x in latencies]
    calls.append(ToolCallRecord(name="memory_retrieve", arguments={}, ok=True, latency_s=0.5))
    model = [ModelCallRecord(role="agent", provider="p", model="m", prompt_tokens=10,
                             completion_tokens=5, latency_s=1.0, cost_usd=agent_cost)]
    rec = QuestionRecord(unit_key=f"{adapter}|s|r0", adapter=adapter, scope_id="s", repeat=0,
                         question_id=f"q{len(latencies)}", checkpoint=2, status="answered",
                         tool_calls=calls, model_calls=model, standing_context_bytes=100)
    return QuestionRow(record=rec, scores=None)


def _run(mem_cost: float | None, agent_cost: float | None = 0.01) -> RunData:
    events = [
        {"kind": "ingest_segment", "key": "a|s|r0", "first": 0, "upto": 4,
         "episode_seconds": [0.1, 0.2, 0.3, 0.4]},
        {"kind": "ingest_segment", "key": "old|s|r0", "first": 0, "upto": 2, "seconds": 1.0},
        {"kind": "prepare_done", "key": "a|s|r0", "seconds": 2.0},
        {"kind": "adapter_usage", "key": "a|s|r0", "calls": 1, "prompt_tokens": 5,
         "completion_tokens": 5, "cost_usd": 0.0},
        # Cumulative: the last event of a unit is its total.
        {"kind": "adapter_usage", "key": "a|s|r0", "calls": 3, "prompt_tokens": 100,
         "completion_tokens": 50, "cost_usd": mem_cost},
    ]
    rows = [_row("a", [0.1, 0.3], agent_cost), _row("a", [0.2], agent_cost),
            _row("old", [0.05], agent_cost)]
    return RunData(root=Path("."), manifest={}, rows=rows, scores=None, events=events)


def test_hand_computed_values() -> None:
    data = memory_cost(_run(0.04))["adapters"]
    a = data["a"]
    assert a["ingest_s_per_episode"] == {"p50": pytest.approx(0.25), "p95": pytest.approx(0.385),
                                         "n": 4}
    assert a["search_latency_s"]["p50"] == pytest.approx(0.2)
    assert a["retrieve_latency_s"]["n"] == 2
    assert a["prepare_s_per_checkpoint"]["p50"] == 2.0
    assert a["memory_model"] == {"calls": 3, "prompt_tokens": 100, "completion_tokens": 50,
                                 "cost_usd": 0.04, "truncated": 0}
    # agent 0.01 + memory 0.04 / 2 questions + no judge
    assert a["cost_per_question"] == {"agent": pytest.approx(0.01), "memory": pytest.approx(0.02),
                                      "judge": 0.0, "total": pytest.approx(0.03)}
    # A run logged before per-episode timings: each episode gets its segment's mean.
    assert data["old"]["ingest_s_per_episode"]["p50"] == pytest.approx(0.5)
    assert data["old"]["memory_model"] is None
    assert data["old"]["cost_per_question"]["memory"] == 0.0
    assert percentiles([]) == {"p50": None, "p95": None, "n": 0}


def test_unpriced_memory_or_agent_makes_the_total_unknown() -> None:
    """A memory that hides its spend behind an unpriced model cannot look free."""
    a = memory_cost(_run(None))["adapters"]["a"]
    assert a["cost_per_question"]["memory"] is None and a["cost_per_question"]["total"] is None
    b = memory_cost(_run(0.04, agent_cost=None))["adapters"]["a"]
    assert b["cost_per_question"]["agent"] is None and b["cost_per_question"]["total"] is None


def test_section_renders_unknown_and_plot() -> None:
    section = memory_cost_section(_run(None))
    assert section is not None
    assert "unknown" in section.markdown and "| a |" in section.markdown
    assert "not scored" in section.html  # no scores: no frontier to draw


def test_an_errored_question_does_not_hide_the_cost() -> None:
    run = _run(0.04)
    failed = QuestionRecord(unit_key="a|s|r0", adapter="a", scope_id="s", repeat=0,
                            question_id="qx", checkpoint=2, status="error", error="boom")
    run.rows.append(QuestionRow(record=failed, scores=None))
    a = memory_cost(run)["adapters"]["a"]
    assert a["questions"] == 3
    assert a["cost_per_question"]["total"] == pytest.approx(0.03)
