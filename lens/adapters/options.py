"""The options that the shipped adapters searching units of episodes (whole, or chunks of them:
:mod:`lens.adapters.chunking`) share; an embedding adapter adds
:class:`lens.adapters.embedder.EmbedderOptions`."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class UnitOptions(BaseModel):
    """The options of an adapter that searches units of episodes: how many results, how much
    of each, and whether (and how) episodes are cut into chunks."""

    model_config = ConfigDict(extra="forbid")

    max_results: int = Field(default=10, ge=1, le=100)
    snippet_chars: int = Field(default=600, ge=50)
    chunk_chars: int | None = Field(default=None, ge=100,
                                    description="split episodes into chunks of this size")
    chunk_overlap: int = Field(default=150, ge=0)
