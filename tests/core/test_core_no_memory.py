"""An answer that consulted no memory is not an answer from memory.

``agent.min_tool_rounds`` makes the agent call a tool before it answers, with every provider:
``tool_choice: "required"`` on those turns where the provider honours it, one reminder turn
otherwise. A question answered without any tool call is recorded as ``no_memory``, counted as a
failure of its arm (left out of the metrics, a failure in the composite) and flagged by its own
checklist row that names the arm."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from lens.commands.cli import main
from lens.data.config import BudgetConfig
from lens.data.prompts import TOOL_REMINDER
from lens.models.base import Completion, CompletionRequest
from lens.runner.agent import Agent
from lens.runs.records import is_scored, session_status
from lens.scoring.aggregation.aggregate import aggregate_group
from lens.scoring.foundations.types import QuestionScores
from tests.core.test_core_agent import DOCS, FakeMemory, Q, replay, search
from tests.support.fake_openai import FakeOpenAI, RecordedRequest, Reply

ROOT = Path(__file__).resolve().parents[2]
NARRATION = ("I will use the `memory_search` function with the following parameters: "
             '{"query": "latency"}')


@dataclass
class Honouring:
    """A client that honours tool_choice "required" and records what it was asked."""

    inner: Any
    tool_choice_required: bool = True
    provider: str = "scripted"
    model: str = "honouring"

    def __post_init__(self) -> None:
        self.choices: list[str] = []

    async def complete(self, request: CompletionRequest) -> Completion:
        self.choices.append(str(request.tool_choice))
        return await self.inner.complete(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def ask(model: Any, min_tool_rounds: int, **budget: Any) -> Any:
    memory = FakeMemory(DOCS)
    agent = Agent(model=model, adapter=memory, budget=BudgetConfig(**budget),
                  capabilities=await memory.get_capabilities(), call_timeout_s=0.5,
                  min_tool_rounds=min_tool_rounds)
    return await agent.answer(Q)


def test_session_status() -> None:
    assert session_status("It rose [ep1].", 1, 0) == "answered"
    assert session_status("It rose.", 0, 0) == "no_memory"
    # Standing context is memory given up front: answering from it consulted memory.
    assert session_status("It rose.", 0, 120) == "answered"
    # No tools offered: nothing could have been consulted by a call.
    assert session_status("It rose.", 0, 0, tools_offered=False) == "answered"
    assert session_status("  ", 0, 0) == "empty_answer"
    assert not is_scored("no_memory") and is_scored("empty_answer")


def test_no_memory_counts_as_a_failure_in_the_composite() -> None:
    def row(qid: str, status: str, recall: float | None) -> QuestionScores:
        return QuestionScores(key=f"a|s|r0|{qid}", unit_key="a|s|r0", question_id=qid,
                              scope_id="s", adapter="a", repeat=0,
                              question_type="longitudinal", checkpoint=1, status=status,
                              metrics={"fact_recall": recall, "evidence_grounding": recall,
                                       "citation_coverage": recall})
    weights = {"fact_recall": 1.0}
    honest, _ = aggregate_group([row("q1", "answered", 1.0), row("q2", "answered", 0.0)],
                                weights=weights, gate_threshold=0.0, tiers={1})
    lucky, _ = aggregate_group([row("q1", "answered", 1.0), row("q2", "no_memory", 1.0)],
                               weights=weights, gate_threshold=0.0, tiers={1})
    # The unconsulted answer adds nothing to the mean, and halves the composite as an error
    # would: knowing the answer without memory cannot lift an arm.
    assert lucky["fact_recall"] == 1.0 and lucky["n_errored"] == 1.0
    assert honest["composite"] == pytest.approx(0.5)
    assert lucky["composite"] is not None and lucky["composite"] <= honest["composite"]


@pytest.mark.anyio
async def test_required_tool_choice_on_the_turns_short_of_min_tool_rounds() -> None:
    model = Honouring(replay(search(), search("410"), {"text": "It rose to 410ms [ep2]."}))
    r = await ask(model, min_tool_rounds=2)
    assert model.choices == ["required", "required", "auto"]
    assert r.budget.stop_reason == "answered" and len(r.tool_calls) == 2
    assert TOOL_REMINDER not in [m.content for m in r.transcript]


@pytest.mark.anyio
async def test_a_reminder_turn_where_required_is_not_honoured() -> None:
    model = Honouring(replay({"text": NARRATION}, search(), {"text": "410ms [ep2]."}),
                      tool_choice_required=False)
    r = await ask(model, min_tool_rounds=1)
    assert model.choices == ["auto", "auto", "auto"]
    users = [m.content for m in r.transcript if m.role == "user"]
    assert users == [Q.prompt, TOOL_REMINDER]
    assert r.answer == "410ms [ep2]." and len(r.tool_calls) == 1


@pytest.mark.anyio
async def test_one_reminder_only_and_it_stays_within_the_budget() -> None:
    model = replay({"text": NARRATION}, {"text": "The answer is 410ms."})
    r = await ask(model, min_tool_rounds=1)
    assert r.answer == "The answer is 410ms." and r.tool_calls == []
    assert [m.content for m in r.transcript if m.role == "user"].count(TOOL_REMINDER) == 1
    capped = await ask(replay({"text": NARRATION}, {"text": "late"}), min_tool_rounds=1,
                       max_turns=1)
    assert capped.budget.stop_reason == "max_turns" and capped.budget.compliant


@pytest.mark.anyio
async def test_without_min_tool_rounds_nothing_is_forced() -> None:
    model = Honouring(replay({"text": NARRATION}))
    r = await ask(model, min_tool_rounds=0)
    assert model.choices == ["auto"] and r.answer == NARRATION


# --- through the CLI, against a real HTTP server that narrates tool calls ---------------------

def narrating_server(honours_required: bool) -> Any:
    """Like a model behind llama-server that writes out the calls it means to make: a narration
    with tool_choice "auto"; a tool call when "required" is sent (if honoured) or after a
    reminder; a cited answer once a tool result is in."""

    def respond(req: RecordedRequest) -> Reply:
        messages = req.body.get("messages", [])
        tool = next((m for m in messages if m.get("role") == "tool"), None)
        if tool is not None:
            results = json.loads(tool["content"]).get("results") or [{"ref_id": "none"}]
            return Reply.text(f"The records say so [{results[0]['ref_id']}].")
        reminded = messages[-1].get("content") == TOOL_REMINDER
        if (honours_required and req.body.get("tool_choice") == "required") or reminded:
            question = next(m["content"] for m in messages if m.get("role") == "user")
            return Reply.tool_call("memory_search", {"query": question})
        return Reply.text(NARRATION)

    return respond


def config(tmp_path: Path, base_url: str, agent: dict[str, Any]) -> Path:
    data = json.loads((ROOT / "datasets" / "quickstart.json").read_text())
    data["questions"] = data["questions"][:4]
    dataset = tmp_path / "four.json"
    dataset.write_text(json.dumps(data))
    cfg = {"name": "narrator", "dataset": {"path": str(dataset)},
           "adapters": [{"name": "sqlite_fts"}],
           "agent": {"model": "openai/fake", "base_url": base_url, "max_retries": 0, **agent},
           "cache": {"enabled": False}, "out_dir": str(tmp_path / "runs"),
           "concurrency": {"units": 1, "questions": 2}}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def run(tmp_path: Path, agent: dict[str, Any], honours_required: bool,
        capsys: pytest.CaptureFixture[str]) -> tuple[int, str, list[dict], dict, list]:
    with FakeOpenAI(narrating_server(honours_required)) as server:
        code = main(["run", str(config(tmp_path, server.base_url, agent))])
        requests = list(server.requests)
    out = capsys.readouterr().out
    (run_dir,) = (tmp_path / "runs").iterdir()
    records = [json.loads(ln) for ln in (run_dir / "records.jsonl").read_text().splitlines()]
    summary = json.loads((run_dir / "summary.json").read_text())
    return code, out, records, summary, requests


def test_narrated_tool_calls_are_no_memory_answers_flagged_everywhere(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, records, summary, _ = run(tmp_path, {}, False, capsys)
    assert code != 2
    assert {r["status"] for r in records} == {"no_memory"} and len(records) == 4
    ad = summary["adapters"]["sqlite_fts"]
    assert ad["no_memory"] == 4 and ad["answered"] == 0
    check = next(c for c in summary["checklist"] if c["id"] == "no_memory")
    assert check["status"] == "fail" and check["failing"] == ["sqlite_fts"]
    assert check["value"].startswith("4 of 4 questions")
    assert "4 answered without memory" in out and "0 empty, 4 without memory, 0 errored" in out
    assert "FAIL  answers given without consulting memory: failed by sqlite_fts" in out
    assert summary["adapters"]["sqlite_fts"]["metrics"]["composite"]["mean"] in (0.0, None)
    report = (tmp_path / "runs").glob("*/report.md")
    assert "failed by sqlite_fts" in next(report).read_text()


def test_min_tool_rounds_sends_required_to_a_server_that_honours_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, records, summary, requests = run(tmp_path, {"min_tool_rounds": 1}, True, capsys)
    assert code == 0
    assert {r["status"] for r in records} == {"answered"}
    choices = [r.body.get("tool_choice") for r in requests]
    assert choices.count("required") == 4 and choices.count("auto") == 4
    assert all(TOOL_REMINDER not in json.dumps(r["transcript"]) for r in records)
    check = next(c for c in summary["checklist"] if c["id"] == "no_memory")
    assert check["status"] == "pass" and check["failing"] == []


def test_min_tool_rounds_reminds_where_required_is_switched_off(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    agent = {"min_tool_rounds": 1, "options": {"tool_choice_required": False}}
    code, _, records, _, requests = run(tmp_path, agent, False, capsys)
    assert code == 0
    assert {r["status"] for r in records} == {"answered"}
    assert all(r.body.get("tool_choice") == "auto" for r in requests)
    assert all(any(m["role"] == "user" and m["content"] == TOOL_REMINDER
                   for m in r["transcript"]) for r in records)
