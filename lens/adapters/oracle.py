"""The unit-level stand-in of the ``oracle`` arm: it holds nothing and answers nothing.

The oracle's evidence is ground truth, which never reaches an adapter: lens builds each
question's evidence in the driver (``lens.memory.oracle.OracleMemory``) and hands it to the agent in
place of this stand-in. The stand-in gives the arm the unit life of any other (reset, ingest,
prepare) and declares the tools the agent sees.
"""

from __future__ import annotations

from typing import Any

from lens.data.dataset import Episode
from lens.memory.adapter import CapabilityManifest, Document, MemoryAdapter, SearchResult
from lens.memory.oracle import oracle_capabilities


class OracleStandIn(MemoryAdapter):
    async def reset(self, scope_id: str) -> None:
        return None

    async def ingest(self, episode: Episode) -> None:
        return None

    async def search(self, query: str, filters: dict[str, Any] | None = None,
                     limit: int | None = None) -> list[SearchResult]:
        # Never asked during a run (lens serves the oracle arm's searches); holds nothing.
        return []

    async def retrieve(self, ref_id: str) -> Document | None:
        return None

    async def get_capabilities(self) -> CapabilityManifest:
        return oracle_capabilities()
