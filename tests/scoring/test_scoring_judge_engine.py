"""The one judge engine behind lens's judge and the protocols' judge: verdicts recorded and
reused per model and scope, failures asked again, and a batched transport given every call at
once whatever the concurrency limit."""

from __future__ import annotations

import json

import anyio
import pytest

from lens.models.base import Completion, CompletionRequest, ModelError, Usage
from lens.runs.store import RunStore
from lens.scoring.judging.judge import Judge, pairwise_task
from lens.scoring.judging.judge_engine import Ask, JudgeEngine
from lens.scoring.protocols import get_protocol
from lens.scoring.protocols.base import ProtocolTask
from lens.scoring.protocols.run import ProtocolJudge


class Client:
    provider, model = "fake", "judge"

    def __init__(self, reply: str, *, batched: bool = False, fail: bool = False) -> None:
        self.reply, self.batched, self.fail = reply, batched, fail
        self.calls = self.in_flight = self.most_in_flight = 0

    async def complete(self, request: CompletionRequest) -> Completion:
        self.calls += 1
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        await anyio.sleep(0.01)
        self.in_flight -= 1
        if self.fail:
            raise ModelError("down")
        return Completion(text=self.reply, usage=Usage(prompt_tokens=10, completion_tokens=2),
                          provider=self.provider, model=self.model, cost_usd=0.0)

    async def aclose(self) -> None:
        return None


def _asks(n: int) -> list[Ask]:
    return [Ask(f"k{i}", "t", CompletionRequest(messages=[]), lambda text: text)
            for i in range(n)]


@pytest.mark.anyio
async def test_a_batched_transport_gets_every_call_at_once() -> None:
    sync, batch = Client("A"), Client("A", batched=True)
    for client in (sync, batch):
        await JudgeEngine(client, None, concurrency=2).run(_asks(12))
    assert sync.most_in_flight == 2 and batch.most_in_flight == 12


@pytest.mark.anyio
async def test_lens_and_protocol_verdicts_are_recorded_and_reused_by_scope(tmp_path) -> None:
    store = RunStore.create(tmp_path, "t", "run1")
    lens_task = pairwise_task("q?", "accuracy", "one", "two")
    protocol = get_protocol("longmemeval")
    ptask = ProtocolTask("default", "Is it right? yes or no")
    first = Client(json.dumps({"verdict": "A", "reason": "r"}))
    await Judge(first, store).run([lens_task, lens_task])
    await ProtocolJudge(Client("yes"), protocol, store).run([ptask])
    assert first.calls == 1  # the same task twice is asked once
    events = [e for e in store.events() if e["kind"] == "judge_verdict"]
    assert [e.get("protocol") for e in events] == [None, "longmemeval"]
    assert all(e["attempts"] == 1 for e in events)
    # Scored again: both read back their own verdicts and call nothing.
    again, pagain = Client("unused"), Client("unused")
    judge = Judge(again, store)
    verdicts = await judge.run([lens_task])
    pj = ProtocolJudge(pagain, protocol, store)
    pverdicts = await pj.run([ptask])
    assert again.calls == pagain.calls == 0
    assert judge.usage.reused == pj.usage.reused == 1
    assert next(iter(verdicts.values())).value == "A" and next(iter(verdicts.values())).reused
    assert next(iter(pverdicts.values())).value == "correct"


@pytest.mark.anyio
async def test_a_failed_call_is_not_stored_and_is_asked_again(tmp_path) -> None:
    store = RunStore.create(tmp_path, "t", "run1")
    task = pairwise_task("q?", "accuracy", "one", "two")
    down = Client("", fail=True)
    judge = Judge(down, store)
    assert await judge.run([task]) == {}
    assert judge.usage.errors == 1 and judge.usage.error_messages == ["down"]
    up = Client(json.dumps({"verdict": "B", "reason": "r"}))
    assert [v.value for v in (await Judge(up, store).run([task])).values()] == ["B"]
    assert up.calls == 1
