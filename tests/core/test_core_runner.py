from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, ClassVar

import anyio
import pytest

from lens.data.config import parse_config
from lens.data.dataset import Episode
from lens.data.dataset_load import load_dataset
from lens.memory.adapter import CapabilityManifest, Document, MemoryAdapter, SearchResult
from lens.models.base import Completion, CompletionRequest
from lens.models.scripted import ScriptedClient
from lens.runner.orchestrator import Runner
from lens.runs.store import RunStore
from tests.core.helpers import make_dataset, write_json
from tests.support.gates import InFlightGate


class SpyMemory(MemoryAdapter):
    """Remembers everything it is given and what it held whenever it was searched."""

    instances: ClassVar[list[SpyMemory]] = []
    lock = threading.Lock()

    def __init__(self) -> None:
        self.held: list[Episode] = []
        self.scope: str | None = None
        self.searches: list[tuple[str, list[str]]] = []
        self.received: list[str] = []
        with SpyMemory.lock:
            SpyMemory.instances.append(self)

    async def reset(self, scope_id: str) -> None:
        self.scope = scope_id
        self.held.clear()
        self.received.append(scope_id)

    async def ingest(self, episode: Episode) -> None:
        self.held.append(episode)
        self.received.append(episode.model_dump_json())

    async def prepare(self, scope_id: str, checkpoint: int) -> None:
        self.received.append(f"{scope_id}:{checkpoint}")

    async def search(self, query: str, filters: dict[str, Any] | None = None,
                     limit: int | None = None) -> list[SearchResult]:
        self.received.append(query)
        self.searches.append((query, [e.episode_id for e in self.held]))
        return [SearchResult(ref_id=e.episode_id, text=e.text) for e in self.held[-3:]]

    async def retrieve(self, ref_id: str) -> Document | None:
        self.received.append(ref_id)
        for e in self.held:
            if e.episode_id == ref_id:
                return Document(ref_id=ref_id, text=e.text)
        return None

    async def get_capabilities(self) -> CapabilityManifest:
        return CapabilityManifest()


class SpyModel:
    """Wraps a model and keeps every request it saw. With ``gate``, every call is held until
    ``gate`` calls are in flight together (then all go through); a caller that never gets
    there fails after ``give_up_s`` instead of hanging."""

    provider = "spy"
    model = "spy"

    def __init__(self, inner: Any, gate: int | None = None, give_up_s: float = 120.0) -> None:
        self.inner = inner
        self.requests: list[CompletionRequest] = []
        self.gate = InFlightGate(gate, give_up_s)

    @property
    def peak(self) -> int:
        return self.gate.peak

    async def complete(self, request: CompletionRequest) -> Completion:
        self.requests.append(request)
        async with self.gate.passing():
            return await self.inner.complete(request)

    async def aclose(self) -> None: ...


def build(tmp_path: Path, data: dict[str, Any], **overrides: Any) -> tuple[Any, Any, RunStore]:
    ds_path = write_json(tmp_path / "ds.json", data)
    raw: dict[str, Any] = {
        "dataset": {"path": str(ds_path)},
        "adapters": [{"name": "spy"}],
        "agent": {"model": "scripted/policy"},
        **overrides,
    }
    config = parse_config(raw, "test.yaml")
    store = RunStore.create(tmp_path / "runs", "t", "x")
    return config, load_dataset(ds_path), store


@pytest.fixture(autouse=True)
def _fresh_spies() -> None:
    SpyMemory.instances.clear()


@pytest.mark.anyio
async def test_no_future_leak_adapter_holds_exactly_the_prefix(tmp_path: Path) -> None:
    data = make_dataset(n_episodes=12, checkpoints=(2, 5, 9, 12), questions_per_checkpoint=3)
    config, ds, store = build(tmp_path, data)
    model = SpyModel(ScriptedClient("policy"))
    runner = Runner(config, ds, store, model, adapter_factory=lambda cfg: SpyMemory())
    summary = await runner.run()
    assert summary.answered == 12 and summary.errored == 0
    order = [e.episode_id for e in ds.scopes[0].ordered_episodes()]
    prompts = {q.prompt: q.checkpoint_after for q in ds.questions}
    (spy,) = SpyMemory.instances
    assert len(spy.searches) == 12
    for query, held in spy.searches:
        assert held == order[: prompts[query]]
    for rec in store.load_records():
        cp = rec.checkpoint
        assert rec.episodes_ingested == cp
        assert set(rec.retrieved_refs) <= set(order[:cp])
    # Ingest stopped at the last checkpoint and followed timestamp order.
    assert [e.episode_id for e in spy.held] == order


@pytest.mark.anyio
async def test_gold_never_reaches_adapter_or_agent(tmp_path: Path) -> None:
    data = make_dataset(secret="XYZZYGOLD")
    data["questions"][0]["question_type"] = "counterfactual"
    config, ds, store = build(tmp_path, data)
    model = SpyModel(ScriptedClient("policy"))
    await Runner(config, ds, store, model, adapter_factory=lambda cfg: SpyMemory()).run()
    seen_by_adapter = "\n".join(s for spy in SpyMemory.instances for s in spy.received)
    seen_by_agent = "\n".join(r.model_dump_json() for r in model.requests)
    for text in (seen_by_adapter, seen_by_agent):
        assert "XYZZYGOLD" not in text
        assert "longitudinal" not in text and "counterfactual" not in text
        assert "episode_type" not in text and "checkpoint_after" not in text
    assert "widget count" in seen_by_adapter  # the spies did see the real traffic


@pytest.mark.anyio
async def test_questions_of_a_checkpoint_run_concurrently(tmp_path: Path) -> None:
    data = make_dataset(n_episodes=4, checkpoints=(4,), questions_per_checkpoint=16)
    replies = [{"tool_calls": [{"name": "memory_search", "arguments": {"query": "w"}}]},
               {"text": "answer"}]
    config, ds, store = build(tmp_path, data, concurrency={"units": 1, "questions": 4})
    # The gate opens only once 4 questions are in the model together: run one at a time, the
    # run would fail on the gate's timeout.
    model = SpyModel(ScriptedClient("replay", {"replies": replies}), gate=4)
    summary = await Runner(config, ds, store, model,
                           adapter_factory=lambda cfg: SpyMemory()).run()
    assert summary.answered == 16
    assert model.peak == 4  # the limit is reached and never exceeded


@pytest.mark.anyio
async def test_one_adapter_instance_per_unit_and_units_concurrent(tmp_path: Path) -> None:
    data = make_dataset(n_episodes=5, checkpoints=(5,), questions_per_checkpoint=1,
                        scope_ids=("a", "b", "c"))
    config, ds, store = build(tmp_path, data, repeats=2, concurrency={"units": 6,
                                                                      "questions": 6})
    gate = anyio.Event()
    entered = 0

    class Barrier(SpyMemory):
        async def prepare(self, scope_id: str, checkpoint: int) -> None:
            nonlocal entered
            entered += 1
            if entered == 6:
                gate.set()
            # far bound: deadlocks unless all six units are in flight together; 60 s stands for
            # "never" on a loaded machine
            with anyio.fail_after(60):
                await gate.wait()

    summary = await Runner(config, ds, store, ScriptedClient("policy"),
                           adapter_factory=lambda cfg: Barrier()).run()
    assert summary.answered == 6 and summary.units == 6
    assert len(SpyMemory.instances) == 6
    assert sorted(s.scope for s in SpyMemory.instances) == ["a", "a", "b", "b", "c", "c"]
    keys = {r.unit_key for r in store.load_records()}
    assert keys == {f"spy|{s}|r{i}" for s in "abc" for i in (0, 1)}


@pytest.mark.anyio
async def test_failing_unit_is_marked_and_others_finish(tmp_path: Path) -> None:
    data = make_dataset(n_episodes=4, checkpoints=(2, 4), questions_per_checkpoint=1,
                        scope_ids=("good", "bad"))
    config, ds, store = build(tmp_path, data)

    class Flaky(SpyMemory):
        async def ingest(self, episode: Episode) -> None:
            if episode.scope_id == "bad" and len(self.held) == 2:
                raise OSError("disk full")
            await super().ingest(episode)

    summary = await Runner(config, ds, store, ScriptedClient("policy"),
                           adapter_factory=lambda cfg: Flaky()).run()
    recs = {(r.scope_id, r.question_id): r for r in store.load_records()}
    assert recs[("good", "good_q01")].status == "answered"
    assert recs[("good", "good_q02")].status == "answered"
    assert recs[("bad", "bad_q01")].status == "answered"  # before the failure
    failed = recs[("bad", "bad_q02")]
    assert failed.status == "error" and "disk full" in (failed.error or "")
    assert summary.units_failed == 1 and summary.errored == 1
    errors = list((store.root / "errors").iterdir())
    assert any("OSError: disk full" in p.read_text() for p in errors)
    kinds = [e["kind"] for e in store.events()]
    assert kinds.count("unit_error") == 1 and kinds.count("unit_done") == 1


@pytest.mark.parametrize("hung", [False, True])
@pytest.mark.anyio
async def test_a_failing_unit_is_asked_its_spend_once_and_briefly(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hung: bool) -> None:
    """As a unit fails, its adapter's own model usage is logged for the memory-cost report; an
    adapter that cannot answer (hung) does not hold the failure up for its call_timeout_s."""
    import lens.runner.orchestrator as orchestrator

    monkeypatch.setattr(orchestrator, "USAGE_AT_FAILURE_S", 0.2)
    data = make_dataset(n_episodes=4, checkpoints=(4,), questions_per_checkpoint=1)
    config, ds, store = build(tmp_path, data)
    config.adapters[0].call_timeout_s = 600.0

    class Spender(SpyMemory):
        async def ingest(self, episode: Episode) -> None:
            if len(self.held) == 2:
                raise OSError("cost limit reached")
            await super().ingest(episode)

        async def model_usage(self) -> dict[str, Any] | None:
            if hung:
                await anyio.sleep(3600)
            return {"calls": 2, "prompt_tokens": 40, "cost_usd": 0.5}

    with anyio.fail_after(30):
        summary = await Runner(config, ds, store, ScriptedClient("policy"),
                               adapter_factory=lambda cfg: Spender()).run()
    assert summary.units_failed == 1
    usage = [e for e in store.events() if e["kind"] == "adapter_usage"]
    if hung:
        assert usage == []
    else:
        assert [(e["calls"], e["cost_usd"]) for e in usage] == [(2, 0.5)]


def test_events_are_flushed_lines(tmp_path: Path) -> None:
    data = make_dataset(n_episodes=3, checkpoints=(3,), questions_per_checkpoint=2)
    config, ds, store = build(tmp_path, data)
    anyio.run(Runner(config, ds, store, ScriptedClient("policy"),
                     adapter_factory=lambda cfg: SpyMemory()).run)
    lines = (store.root / "events.jsonl").read_text().splitlines()
    events = [json.loads(x) for x in lines]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert sum(e["kind"] == "question_done" for e in events) == 2
