"""Adapters that raise, hang, return garbage or fail to ingest: the question or the unit is
marked, the traceback is kept in the run directory, and every other unit finishes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from lens.data.config import AdapterConfig, parse_config
from lens.data.dataset import Episode
from lens.data.dataset_load import load_dataset
from lens.memory.adapter import CapabilityManifest, Document, MemoryAdapter, SearchResult
from lens.models.scripted import ScriptedClient
from lens.runner.orchestrator import Runner
from lens.runs.store import RunStore
from tests.core.helpers import make_dataset, write_json


class Misbehaving(MemoryAdapter):
    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.eps: list[Episode] = []

    async def reset(self, scope_id: str) -> None:
        self.eps.clear()

    async def ingest(self, episode: Episode) -> None:
        if self.mode == "ingest_fails" and len(self.eps) == 4:
            raise RuntimeError("vector index write failed")
        self.eps.append(episode)

    async def search(self, query: str, filters: dict[str, Any] | None = None,
                     limit: int | None = None) -> Any:
        if self.mode == "search_raises":
            raise KeyError("shard-7")
        if self.mode == "search_hangs":
            await anyio.sleep(3600)
        if self.mode == "malformed":
            return [{"id": "no ref_id here"}, 42]
        if self.mode == "not_a_list":
            return "oops"
        return [SearchResult(ref_id=e.episode_id, text=e.text) for e in self.eps[-2:]]

    async def retrieve(self, ref_id: str) -> Document | None:
        if self.mode == "retrieve_raises":
            raise ConnectionError("backend went away")
        return next((Document(ref_id=e.episode_id, text=e.text) for e in self.eps
                     if e.episode_id == ref_id), None)

    async def get_capabilities(self) -> CapabilityManifest:
        return CapabilityManifest()


MODES = ["fine", "search_raises", "search_hangs", "malformed", "not_a_list", "retrieve_raises",
         "ingest_fails"]


@pytest.mark.anyio
async def test_adapter_faults_are_contained(tmp_path: Path) -> None:
    ds_path = write_json(tmp_path / "ds.json", make_dataset(n_episodes=8, checkpoints=(3, 8),
                                                            questions_per_checkpoint=2))
    config = parse_config({
        "dataset": {"path": str(ds_path)},
        "adapters": [{"name": "null", "label": m, "call_timeout_s": 0.5} for m in MODES],
        "agent": {"model": "scripted/policy"},
        "concurrency": {"units": 7, "questions": 14},
    }, "t.yaml")
    store = RunStore.create(tmp_path / "runs", "t", "x")

    def factory(cfg: AdapterConfig) -> MemoryAdapter:
        return Misbehaving(cfg.display)

    with anyio.fail_after(60):
        summary = await Runner(config, load_dataset(ds_path), store,
                               ScriptedClient("policy"), adapter_factory=factory).run()
    recs: dict[str, list[Any]] = {}
    for r in store.load_records():
        recs.setdefault(r.adapter, []).append(r)
    assert {k: len(v) for k, v in recs.items()} == dict.fromkeys(MODES, 4)
    assert all(r.status == "answered" and r.tool_errors == 0 for r in recs["fine"])
    expected = {
        "search_raises": "KeyError: 'shard-7'",
        "search_hangs": "did not answer within 0.5 s",
        "malformed": "malformed search result",
        "not_a_list": "malformed search results (not a list)",
    }
    for mode, text in expected.items():
        for r in recs[mode]:
            assert r.status == "answered"  # the agent answered despite the failing tool
            assert r.tool_errors >= 1 and text in (r.tool_calls[0].error or ""), mode
    assert all("backend went away" in (r.tool_calls[1].error or "")
               for r in recs["retrieve_raises"])
    # ingest fails after 4 episodes: questions at checkpoint 3 answered, those at 8 errored
    ingest = sorted(recs["ingest_fails"], key=lambda r: r.checkpoint)
    assert [r.status for r in ingest] == ["answered", "answered", "error", "error"]
    assert "vector index write failed" in (ingest[-1].error or "")
    assert summary.units_failed == 1 and summary.errored == 2
    tracebacks = {p.name: p.read_text() for p in (store.root / "errors").iterdir()}
    assert any("KeyError" in t and "shard-7" in t for t in tracebacks.values())
    assert any("ConnectionError" in t for t in tracebacks.values())
    assert any("RuntimeError: vector index write failed" in t for t in tracebacks.values())
