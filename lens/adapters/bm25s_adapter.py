"""Keyword memory ranked by BM25 with the ``bm25s`` library (the ``bm25`` extra): ``bm25s``
and, over chunks with refs ``episode_id#cN``, ``bm25s_chunked``.

Units are kept in memory, tokenized once (lower-cased words, as ``sqlite_fts`` reads a query);
bm25s's sparse index is rebuilt from those tokens by the first search after the store changed,
so a checkpoint's questions share one build. Scores are BM25 (higher is better); units that
match no query word are not returned; equal scores go to the unit stored first. Filters:
``start_date`` / ``end_date`` (ISO-8601, inclusive) on the episode timestamp.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from pydantic import Field

from lens.adapters.chunking import (
    Unit,
    episode_document,
    episode_units,
    split_ref,
    unit_document,
    unit_items,
    unit_results,
)
from lens.adapters.filters import DateRange
from lens.adapters.options import UnitOptions
from lens.adapters.snippet import TOKEN
from lens.core.distribution import install_hint
from lens.core.errors import ConfigError
from lens.data.dataset import Episode
from lens.memory.adapter import (
    CapabilityManifest,
    Document,
    SearchResult,
    SyncMemoryAdapter,
    read_options,
)
from lens.memory.listing import MemoryListing

DEFAULT_CHUNK_CHARS = 1200


class Bm25sOptions(UnitOptions):
    k1: float = Field(default=1.5, gt=0, description="BM25 term-frequency saturation")
    b: float = Field(default=0.75, ge=0, le=1, description="BM25 length normalisation")


class Bm25sChunkedOptions(Bm25sOptions):
    chunk_chars: int | None = Field(default=DEFAULT_CHUNK_CHARS, ge=100)


def _import_bm25s() -> Any:
    try:
        import bm25s
    except ImportError:
        raise ConfigError("adapter 'bm25s' needs the bm25s library: "
                          f"{install_hint('bm25')}") from None
    return bm25s


def tokens(text: str) -> list[str]:
    return TOKEN.findall(text.lower())


class Bm25sAdapter(SyncMemoryAdapter):
    Options = Bm25sOptions

    def __init__(self, **options: Any) -> None:
        self.opts = read_options(self, Bm25sOptions, options)
        self._bm25s = _import_bm25s()
        self._lock = threading.Lock()
        self._episodes: dict[str, Episode] = {}
        # Units in arrival order; a replaced episode's units leave the list.
        self._units: list[Unit] = []
        self._tokens: list[list[str]] = []
        self._index: Any = None
        # Index builds, for tests and benchmarks.
        self.builds = 0

    def reset(self, scope_id: str) -> None:
        with self._lock:
            self._episodes.clear()
            self._units, self._tokens = [], []
            self._index = None

    def ingest(self, episode: Episode) -> None:
        with self._lock:
            if episode.episode_id in self._episodes:
                keep = [i for i, u in enumerate(self._units)
                        if u.episode_id != episode.episode_id]
                self._units = [self._units[i] for i in keep]
                self._tokens = [self._tokens[i] for i in keep]
            self._episodes[episode.episode_id] = episode
            for unit in episode_units(episode, self.opts.chunk_chars, self.opts.chunk_overlap):
                self._units.append(unit)
                self._tokens.append(tokens(unit.text))
            self._index = None

    def prepare(self, scope_id: str, checkpoint: int) -> None:
        # Questions follow a checkpoint: build now, not in the first search.
        with self._lock:
            self._index_locked()

    def _index_locked(self) -> Any:
        if self._index is None and self._units:
            index = self._bm25s.BM25(k1=self.opts.k1, b=self.opts.b)
            index.index(self._tokens, show_progress=False)
            self._index = index
            self.builds += 1
        return self._index

    def search(self, query: str, filters: dict[str, Any] | None = None,
               limit: int | None = None) -> list[SearchResult]:
        dates = DateRange.from_filters(filters)
        words = list(dict.fromkeys(w for w in tokens(query) if len(w) > 1))
        if not words:
            return []
        k = min(limit or self.opts.max_results, self.opts.max_results)
        with self._lock:
            index = self._index_locked()
            if index is None:
                return []
            scores = np.asarray(index.get_scores(words), dtype=np.float64)
            found = np.flatnonzero(scores > 0)
            # Best score first, ties by arrival (lexsort's last key is the primary one).
            order = found[np.lexsort((found, -scores[found]))]
            hits: list[tuple[Unit, float]] = []
            for i in order:
                unit = self._units[i]
                if dates.empty or dates.admits(unit.timestamp):
                    hits.append((unit, float(scores[i])))
                    if len(hits) == k:
                        break
        return unit_results(hits, query, self.opts.snippet_chars)

    def retrieve(self, ref_id: str) -> Document | None:
        _, chunk = split_ref(ref_id)
        with self._lock:
            if chunk is None:
                return episode_document(self._episodes, ref_id)
            unit = next((u for u in self._units if u.ref_id == ref_id), None)
        return None if unit is None else unit_document(unit)

    def list_memory(self, scope_id: str, checkpoint: int) -> MemoryListing:
        with self._lock:
            return unit_items(list(self._units))

    def get_capabilities(self) -> CapabilityManifest:
        return self.opts.capabilities(["keyword"], "BM25 keyword search (bm25s)")


class Bm25sChunkedAdapter(Bm25sAdapter):
    """``bm25s`` over chunks of ``chunk_chars`` characters (default 1200)."""

    Options = Bm25sChunkedOptions

