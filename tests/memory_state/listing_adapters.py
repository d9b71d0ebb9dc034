"""Adapters for the memory-state tests: real SQLite stores whose listing behaves in one way."""

from __future__ import annotations

from typing import Any

from lens.adapters.sqlite_fts import SqliteFtsAdapter
from lens.data.dataset import Episode
from lens.memory.adapter import CapabilityManifest, SearchResult
from lens.memory.listing import MemoryItem, MemoryListing


class LearnsFromQuestions(SqliteFtsAdapter):
    """Writes every query it is asked into its memory: a memory that changes while questioned."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.queries: list[str] = []

    def reset(self, scope_id: str) -> None:
        super().reset(scope_id)
        self.queries = []

    def search(self, query: str, filters: dict[str, Any] | None = None,
               limit: int | None = None) -> list[SearchResult]:
        self.queries.append(query)
        return super().search(query, filters, limit)

    def list_memory(self, scope_id: str, checkpoint: int) -> MemoryListing:
        stored = super().list_memory(scope_id, checkpoint)
        learned = [MemoryItem(item_id=f"query:{i}", text=q) for i, q in enumerate(self.queries)]
        return MemoryListing(items=[*stored.items, *learned])


class VerbatimStore(SqliteFtsAdapter):
    """Stores every episode as it came (the shipped store, named for the write-side tests)."""


class StoresNothing(SqliteFtsAdapter):
    """Searches like a store but holds nothing: it forgets each episode as it arrives."""

    def ingest(self, episode: Episode) -> None:
        return None

    def get_capabilities(self) -> CapabilityManifest:
        return super().get_capabilities().model_copy(update={"description": "stores nothing"})


class Invents(SqliteFtsAdapter):
    """Stores every episode, and at each checkpoint writes a note of figures no episode gives."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.notes: list[str] = []

    def reset(self, scope_id: str) -> None:
        super().reset(scope_id)
        self.notes = []

    def prepare(self, scope_id: str, checkpoint: int) -> None:
        super().prepare(scope_id, checkpoint)
        self.notes.append(f"Note {checkpoint}: the p99 latency peaked at 98765 ms, "
                          f"{checkpoint * 1000 + 4321} requests failed.")

    def list_memory(self, scope_id: str, checkpoint: int) -> MemoryListing:
        stored = super().list_memory(scope_id, checkpoint)
        notes = [MemoryItem(item_id=f"note:{i}", text=t) for i, t in enumerate(self.notes)]
        return MemoryListing(items=[*notes, *stored.items])


class MissesCorrections(SqliteFtsAdapter):
    """Stores every episode but the ones that correct an earlier report: it keeps stale figures."""

    def ingest(self, episode: Episode) -> None:
        if "Correction to the" not in episode.text:
            super().ingest(episode)


class NeverSettles(SqliteFtsAdapter):
    """A memory still writing in the background: every reading of it finds one more note."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.readings = 0

    def list_memory(self, scope_id: str, checkpoint: int) -> MemoryListing:
        self.readings += 1
        stored = super().list_memory(scope_id, checkpoint)
        return MemoryListing(items=[*stored.items, MemoryItem(
            item_id="extracting", text=f"{self.readings} notes extracted so far")])


class ListingRaises(SqliteFtsAdapter):
    """Declares a listing it cannot give."""

    def list_memory(self, scope_id: str, checkpoint: int) -> MemoryListing:
        raise RuntimeError("the listing endpoint is down")
