"""Adapters that misbehave on purpose, named in configs as ``tests.hostile.hostile_adapters:X``."""

from __future__ import annotations

import math
from typing import Any

from lens.adapters.sqlite_fts import SqliteFtsAdapter
from lens.data.dataset import Episode
from lens.memory.adapter import Document, SearchResult


class FutureLeakAdapter(SqliteFtsAdapter):
    """Searches honestly, then appends episodes it was never given: the ids of the test
    datasets (``<scope>_ep_001`` ... ``_ep_010``) that it has not ingested yet, as if it had
    read the dataset file."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._seen: set[str] = set()
        self._scope = ""

    def reset(self, scope_id: str) -> None:
        self._seen.clear()
        self._scope = scope_id
        super().reset(scope_id)

    def ingest(self, episode: Episode) -> None:
        self._seen.add(episode.episode_id)
        super().ingest(episode)

    def ingest_many(self, episodes: list[Episode]) -> None:
        self._seen.update(e.episode_id for e in episodes)
        super().ingest_many(episodes)

    def search(self, query: str, filters: dict[str, Any] | None = None,
               limit: int | None = None) -> list[SearchResult]:
        leaked = [SearchResult(ref_id=ref, text=f"widget count report {ref}", score=99.0)
                  for ref in self._future()]
        return leaked + super().search(query, filters, limit)

    def retrieve(self, ref_id: str) -> Document | None:
        if ref_id in self._future():
            return Document(ref_id=ref_id, text=f"The widget count is 999 in {ref_id}.")
        return super().retrieve(ref_id)

    def _future(self) -> list[str]:
        ids = [f"{self._scope}_ep_{i:03d}" for i in range(1, 11)]
        return [ref for ref in ids if ref not in self._seen]


class Unserialisable:
    def __repr__(self) -> str:
        return "<Unserialisable>"


class BadMetadataAdapter(SqliteFtsAdapter):
    """Search results carry metadata JSON cannot hold (an object) when the query says "bad",
    and NaN/Infinity scores otherwise: the first kind fails its tool call alone, the second
    reaches the model as valid JSON."""

    def search(self, query: str, filters: dict[str, Any] | None = None,
               limit: int | None = None) -> list[SearchResult]:
        hits = super().search(query.replace("bad", ""), filters, limit)
        if "bad" in query:
            return [h.model_copy(update={"metadata": {"obj": Unserialisable()}}) for h in hits]
        return [h.model_copy(update={"score": math.nan, "metadata": {"x": math.inf}})
                for h in hits]


class SearchRaises(SqliteFtsAdapter):
    """Ingests honestly; every search raises (a broken index): the arm answers from nothing."""

    def search(self, query: str, filters: dict[str, Any] | None = None,
               limit: int | None = None) -> list[SearchResult]:
        raise RuntimeError("the index is corrupt")


class OwnIdsAdapter(SqliteFtsAdapter):
    """Finds the right text but hands out its own row ids instead of episode ids."""

    def search(self, query: str, filters: dict[str, Any] | None = None,
               limit: int | None = None) -> list[SearchResult]:
        return [h.model_copy(update={"ref_id": f"row-{i}"})
                for i, h in enumerate(super().search(query, filters, limit))]

    def retrieve(self, ref_id: str) -> Document | None:
        return None


class IngestRaises(SqliteFtsAdapter):
    """Its unit fails at the first episode: every question of the unit ends in an error."""

    def ingest(self, episode: Episode) -> None:
        raise RuntimeError("the disk is full")

    def ingest_many(self, episodes: list[Episode]) -> None:
        raise RuntimeError("the disk is full")


class NaiveTimestampAdapter(SqliteFtsAdapter):
    """Searches honestly and dates its first result with a naive ISO time (no offset) in its
    metadata, beside results that carry none (dated from their episodes, in UTC)."""

    def search(self, query: str, filters: dict[str, Any] | None = None,
               limit: int | None = None) -> list[SearchResult]:
        results = super().search(query, filters, limit)
        if results:
            results[0] = results[0].model_copy(
                update={"metadata": {**results[0].metadata, "timestamp": "2024-01-01T09:30:00"}})
        return results
