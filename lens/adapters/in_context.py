"""Baselines that need no retrieval skill: ``full_context`` and ``recency``.

Both ignore the query. ``search`` hands back whole episodes, newest first:
- ``full_context``: every episode held, cut to a payload budget (``max_chars`` of episode text in
  all; the oldest episodes are the ones left out, and an episode that would cross the budget is
  cut short and marked ``truncated``). It answers "what if the agent could read everything
  recent that fits?".
- ``recency``: the latest ``n`` episodes. It answers "how far does remembering the last few
  episodes get you?".
``limit`` still caps the number of results, and the date filters still apply.
"""

from __future__ import annotations

import bisect
import threading
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from lens.adapters.chunking import Unit, episode_document, unit_items
from lens.adapters.filters import DATE_FILTERS, DateRange
from lens.data.dataset import Episode
from lens.memory.adapter import (
    CapabilityManifest,
    Document,
    SearchResult,
    SyncMemoryAdapter,
    read_options,
)
from lens.memory.listing import MemoryListing


class FullContextOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_chars: int = Field(default=32_000, ge=100, description="payload budget per search")
    max_results: int = Field(default=200, ge=1, le=10_000)


class RecencyOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    n: int = Field(default=10, ge=1, le=1000, description="how many of the latest episodes")


class _Timeline(SyncMemoryAdapter):
    """Episodes kept in timestamp order (ties in arrival order); a search returns the newest,
    at most ``cap`` of them, as the baseline ``fit`` makes them results."""

    def __init__(self, cap: int) -> None:
        self._cap = cap
        self._lock = threading.Lock()
        self._episodes: list[Episode] = []
        self._keys: list[tuple[float, int]] = []
        self._by_id: dict[str, Episode] = {}
        self._arrivals = 0

    def reset(self, scope_id: str) -> None:
        with self._lock:
            self._episodes, self._keys, self._by_id = [], [], {}

    def ingest(self, episode: Episode) -> None:
        with self._lock:
            if episode.episode_id in self._by_id:
                i = self._episodes.index(self._by_id[episode.episode_id])
                del self._episodes[i], self._keys[i]
            self._arrivals += 1
            key = (episode.timestamp.timestamp(), self._arrivals)
            i = bisect.bisect(self._keys, key)
            self._keys.insert(i, key)
            self._episodes.insert(i, episode)
            self._by_id[episode.episode_id] = episode

    def search(
        self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None
    ) -> list[SearchResult]:
        dates = DateRange.from_filters(filters)
        with self._lock:
            newest = [e for e in reversed(self._episodes) if dates.admits(e.timestamp)]
        return self.fit(newest[:min(limit or self._cap, self._cap)])

    def fit(self, episodes: list[Episode]) -> list[SearchResult]:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def retrieve(self, ref_id: str) -> Document | None:
        with self._lock:
            return episode_document(self._by_id, ref_id)

    def list_memory(self, scope_id: str, checkpoint: int) -> MemoryListing:
        with self._lock:
            return unit_items([Unit(e.episode_id, e.episode_id, e.timestamp, e.text)
                               for e in self._episodes])

    def get_capabilities(self) -> CapabilityManifest:
        return CapabilityManifest(search_modes=["recency"], filter_fields=list(DATE_FILTERS),
                                  max_results=self._cap, memory_listing=True,
                                  description=self.describe())


def _result(ep: Episode, text: str | None = None) -> SearchResult:
    meta: dict[str, Any] = {"timestamp": ep.timestamp.isoformat()}
    if text is not None:
        meta["truncated"] = True
    return SearchResult(ref_id=ep.episode_id, text=ep.text if text is None else text,
                        score=None, metadata=meta)


class FullContextAdapter(_Timeline):
    Options = FullContextOptions

    def __init__(self, **options: Any) -> None:
        self.opts = read_options(self, FullContextOptions, options)
        super().__init__(self.opts.max_results)

    def fit(self, episodes: list[Episode]) -> list[SearchResult]:
        out: list[SearchResult] = []
        left = self.opts.max_chars
        for ep in episodes:
            if left <= 0:
                break
            if len(ep.text) <= left:
                out.append(_result(ep))
                left -= len(ep.text)
            else:
                out.append(_result(ep, ep.text[:left] + "…"))
                break
        return out

    def describe(self) -> str:
        return (f"full-context baseline: search ignores the query and returns every episode, "
                f"newest first, up to {self.opts.max_chars} characters")


class RecencyAdapter(_Timeline):
    Options = RecencyOptions

    def __init__(self, **options: Any) -> None:
        self.opts = read_options(self, RecencyOptions, options)
        super().__init__(self.opts.n)

    def fit(self, episodes: list[Episode]) -> list[SearchResult]:
        return [_result(ep) for ep in episodes]

    def describe(self) -> str:
        return (f"recency baseline: search ignores the query and returns the latest "
                f"{self.opts.n} episodes, newest first")
