"""Hybrid retrieval: reciprocal-rank fusion of ``sqlite_fts`` (BM25) and ``vector`` (cosine).

Each leg ranks its best ``candidates`` units; a unit's fused score is the sum over the legs that
found it of ``1 / (rrf_k + rank)`` (rank from 1). RRF needs no score calibration between BM25 and
cosine, which is why it is the usual baseline for hybrid search. Both legs index the same units,
so refs agree: episode ids, or ``episode_id#cN`` for ``hybrid_chunked``.
Filters: ``start_date`` / ``end_date`` (ISO-8601, inclusive), applied by both legs.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from lens.adapters.chunking import Unit, search_ranked
from lens.adapters.embedder import EmbedderOptions
from lens.adapters.filters import DateRange
from lens.adapters.options import UnitOptions
from lens.adapters.sqlite_fts import SqliteFtsAdapter
from lens.adapters.vector import VectorAdapter
from lens.data.dataset import Episode
from lens.memory.adapter import (
    CapabilityManifest,
    Document,
    SearchResult,
    SyncMemoryAdapter,
    read_options,
)
from lens.memory.listing import MemoryListing

DEFAULT_CHUNK_CHARS = 1000


class HybridOptions(EmbedderOptions, UnitOptions):
    """The keyword leg's ``path``, the vector leg's embedding options, and how they are fused."""

    rrf_k: int = Field(default=60, ge=1, description="RRF constant: larger flattens rank weight")
    candidates: int = Field(default=30, ge=1, le=500, description="units each leg ranks")
    path: str | None = Field(default=None, description="FTS database file; in memory when unset")


class HybridChunkedOptions(HybridOptions):
    chunk_chars: int | None = Field(default=DEFAULT_CHUNK_CHARS, ge=100)


def rrf(rankings: list[list[Unit]], k: int) -> list[tuple[Unit, float]]:
    """Reciprocal-rank fusion of several rankings of units, best first; ties keep first-seen
    order so the result is deterministic."""
    scores: dict[str, float] = {}
    units: dict[str, Unit] = {}
    for ranking in rankings:
        for rank, unit in enumerate(ranking, start=1):
            scores[unit.ref_id] = scores.get(unit.ref_id, 0.0) + 1.0 / (k + rank)
            units.setdefault(unit.ref_id, unit)
    order = sorted(scores, key=lambda r: -scores[r])
    return [(units[r], scores[r]) for r in order]


class HybridAdapter(SyncMemoryAdapter):
    Options = HybridOptions

    def __init__(self, **options: Any) -> None:
        self.opts = read_options(self, HybridOptions, options)
        o = self.opts
        # Each leg ranks up to 100 units; the fusion keeps the best of max_results.
        self.keyword = SqliteFtsAdapter(path=o.path, max_results=100, chunk_chars=o.chunk_chars,
                                        chunk_overlap=o.chunk_overlap)
        self.semantic = VectorAdapter(model=o.model, embedding_cache=o.embedding_cache,
                                      max_results=100, chunk_chars=o.chunk_chars,
                                      chunk_overlap=o.chunk_overlap, encoder=o.encoder)

    def reset(self, scope_id: str) -> None:
        self.keyword.reset(scope_id)
        self.semantic.reset(scope_id)

    def ingest(self, episode: Episode) -> None:
        self.keyword.ingest(episode)
        self.semantic.ingest(episode)

    def prepare(self, scope_id: str, checkpoint: int) -> None:
        self.semantic.prepare(scope_id, checkpoint)

    def search(
        self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None
    ) -> list[SearchResult]:
        return search_ranked(self.ranked, self.opts, query, filters, limit)

    def ranked(self, query: str, dates: DateRange, k: int) -> list[tuple[Unit, float]]:
        """The ``k`` best units of the fused legs, each leg ranking ``candidates`` (or ``k``)."""
        n = max(self.opts.candidates, k)
        match = self.keyword.match_expression(query)
        by_keyword = [u for u, _ in self.keyword.ranked(match, dates, n)] if match else []
        by_meaning = [u for u, _ in self.semantic.ranked(query, dates, n)]
        return rrf([by_keyword, by_meaning], self.opts.rrf_k)[:k]

    def retrieve(self, ref_id: str) -> Document | None:
        return self.keyword.retrieve(ref_id)

    def list_memory(self, scope_id: str, checkpoint: int) -> MemoryListing:
        # Both legs hold the same units; the keyword store lists them in insertion order.
        return self.keyword.list_memory(scope_id, checkpoint)

    def get_capabilities(self) -> CapabilityManifest:
        return self.opts.capabilities(
            ["keyword", "semantic", "hybrid"], f"reciprocal-rank fusion (k={self.opts.rrf_k}) "
            f"of BM25 and {self.semantic.embedder.label} cosine")

    def close(self) -> None:
        self.keyword.close()
        self.semantic.close()


class HybridChunkedAdapter(HybridAdapter):
    Options = HybridChunkedOptions

