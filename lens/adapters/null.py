"""An adapter that remembers nothing: the floor every memory system must beat."""

from __future__ import annotations

from typing import Any

from lens.data.dataset import Episode
from lens.memory.adapter import CapabilityManifest, Document, MemoryAdapter, SearchResult
from lens.memory.listing import MemoryListing


class NullAdapter(MemoryAdapter):
    async def reset(self, scope_id: str) -> None:
        return None

    async def ingest(self, episode: Episode) -> None:
        return None

    async def search(
        self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None
    ) -> list[SearchResult]:
        return []

    async def retrieve(self, ref_id: str) -> Document | None:
        return None

    async def list_memory(self, scope_id: str, checkpoint: int) -> MemoryListing:
        return MemoryListing()

    async def get_capabilities(self) -> CapabilityManifest:
        return CapabilityManifest(search_modes=[], max_results=1, memory_listing=True,
                                  description="remembers nothing")
