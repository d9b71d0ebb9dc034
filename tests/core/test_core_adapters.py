from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from lens.adapters.sqlite_fts import SqliteFtsAdapter, fts_query
from lens.core.errors import AdapterNotFound, ConfigError
from lens.data.dataset import Episode
from lens.memory.adapter import (
    CapabilityManifest,
    Document,
    SearchResult,
    SyncMemoryAdapter,
    ThreadedAdapter,
    adapter_names,
    create_adapter,
    register_adapter,
    resolve_adapter,
)


def ep(i: int, text: str, day: int | None = None) -> Episode:
    return Episode(episode_id=f"e{i}", scope_id="s", timestamp=f"2024-03-{day or i:02d}T09:00:00",
                   text=text)


class RecordingSync(SyncMemoryAdapter):
    def __init__(self) -> None:
        self.threads: set[int] = set()
        self.items: list[Episode] = []

    def _seen(self) -> None:
        self.threads.add(threading.get_ident())

    def reset(self, scope_id: str) -> None:
        self._seen()
        self.items.clear()

    def ingest(self, episode: Episode) -> None:
        self._seen()
        self.items.append(episode)

    def search(self, query: str, filters: dict[str, Any] | None = None,
               limit: int | None = None) -> list[SearchResult]:
        self._seen()
        return [SearchResult(ref_id=e.episode_id, text=e.text) for e in self.items
                if query in e.text][: limit or 10]

    def retrieve(self, ref_id: str) -> Document | None:
        self._seen()
        return None

    def get_capabilities(self) -> CapabilityManifest:
        return CapabilityManifest()


@pytest.mark.anyio
async def test_sync_adapter_runs_in_worker_threads() -> None:
    inner = RecordingSync()
    wrapped = ThreadedAdapter(inner)
    await wrapped.reset("s")
    await wrapped.ingest(ep(1, "alpha beta"))
    hits = await wrapped.search("alpha")
    assert [h.ref_id for h in hits] == ["e1"]
    assert threading.get_ident() not in inner.threads
    assert inner.threads


def test_registry_builtins_and_module_paths() -> None:
    assert {"null", "sqlite_fts"} <= set(adapter_names())
    assert resolve_adapter("sqlite_fts") is SqliteFtsAdapter
    assert resolve_adapter("lens.adapters.sqlite_fts:SqliteFtsAdapter") is SqliteFtsAdapter
    with pytest.raises(AdapterNotFound,
                       match=r"unknown adapter .nope.; valid adapters: .*sqlite_fts"):
        resolve_adapter("nope")
    with pytest.raises(AdapterNotFound, match="not a MemoryAdapter"):
        resolve_adapter("lens.data.dataset:Episode")


def test_registered_class_and_option_validation() -> None:
    register_adapter("recording_test")(RecordingSync)
    assert isinstance(create_adapter("recording_test"), ThreadedAdapter)
    with pytest.raises(ConfigError, match="max_results"):
        create_adapter("sqlite_fts", {"max_results": 0})
    with pytest.raises(ConfigError, match="bogus"):
        create_adapter("sqlite_fts", {"bogus": 1})


@pytest.mark.anyio
async def test_sqlite_fts_bm25_filters_and_retrieve(tmp_path: Path) -> None:
    a = create_adapter("sqlite_fts")
    await a.reset("s")
    await a.ingest(ep(1, "The geo lookup latency rose to 320ms at p99."))
    await a.ingest(ep(2, "Latency latency latency: geo lookup latency p99 at 900ms."))
    await a.ingest(ep(3, "Cafeteria menu: soup and bread."))
    hits = await a.search("geo lookup latency")
    assert [h.ref_id for h in hits] == ["e2", "e1"]  # BM25 ranks the denser mention first
    assert hits[0].score is not None and hits[0].score > hits[1].score
    assert len(await a.search("latency", limit=1)) == 1
    ranged = await a.search("latency", filters={"start_date": "2024-03-02",
                                                "end_date": "2024-03-02"})
    assert [h.ref_id for h in ranged] == ["e2"]
    doc = await a.retrieve("e1")
    assert doc is not None and doc.text.startswith("The geo lookup")
    assert await a.retrieve("missing") is None
    with pytest.raises(ValueError, match="unknown filter"):
        await a.search("x", filters={"author": "me"})
    caps = await a.get_capabilities()
    assert caps.filter_fields == ["start_date", "end_date"]
    await a.reset("other")
    assert await a.search("latency") == []
    await a.aclose()


@pytest.mark.anyio
async def test_sqlite_fts_on_disk_persists(tmp_path: Path) -> None:
    db = tmp_path / "mem.db"
    a = create_adapter("sqlite_fts", {"path": str(db)})
    await a.reset("s")
    await a.ingest(ep(1, "quarterly invoice from vendor Acme"))
    await a.aclose()
    b = create_adapter("sqlite_fts", {"path": str(db)})
    assert [h.ref_id for h in await b.search("Acme invoice")] == ["e1"]
    await b.aclose()


def test_fts_query_quotes_syntax() -> None:
    assert fts_query('NEAR(ab cd) OR "xy" -zz*') == '"near" OR "ab" OR "cd" OR "or" OR "xy" OR "zz"'
    assert fts_query("?? !!") is None


@pytest.mark.anyio
async def test_null_adapter_remembers_nothing() -> None:
    a = create_adapter("null")
    await a.reset("s")
    await a.ingest(ep(1, "something"))
    assert await a.search("something") == []
    assert await a.retrieve("e1") is None
