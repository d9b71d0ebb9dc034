"""The options that the shipped adapters searching units of episodes (whole, or chunks of them:
:mod:`lens.adapters.chunking`) share; an embedding adapter adds
:class:`lens.adapters.embedder.EmbedderOptions`."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from lens.adapters.filters import DATE_FILTERS
from lens.memory.adapter import CapabilityManifest


class UnitOptions(BaseModel):
    """The options of an adapter that searches units of episodes: how many results, how much
    of each, and whether (and how) episodes are cut into chunks."""

    model_config = ConfigDict(extra="forbid")

    max_results: int = Field(default=10, ge=1, le=100)
    snippet_chars: int = Field(default=600, ge=50)
    chunk_chars: int | None = Field(default=None, ge=100,
                                    description="split episodes into chunks of this size")
    chunk_overlap: int = Field(default=150, ge=0)

    def capabilities(self, modes: list[str], how: str) -> CapabilityManifest:
        """The manifest of a search over units: ``how`` it ranks, over whole episodes or
        chunks, with the date filters and the memory listing every such adapter has."""
        unit = "chunks (refs episode_id#cN)" if self.chunk_chars else "whole episodes"
        return CapabilityManifest(search_modes=modes, filter_fields=list(DATE_FILTERS),
                                  max_results=self.max_results, memory_listing=True,
                                  description=f"{how} over {unit}")
