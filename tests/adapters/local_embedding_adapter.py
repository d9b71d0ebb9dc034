"""A memory that embeds in its own process with ``lens.plugin_api.LocalEmbedder``, no gateway:
named ``tests.adapters.local_embedding_adapter:LocalVectors`` in configs and checks."""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from lens import CapabilityManifest, Document, Episode, SearchResult, SyncMemoryAdapter
from lens.plugin_api import LocalEmbedder


class Options(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cache: str | None = None  # a file of the adapter's own; None: lens's embedding cache


class LocalVectors(SyncMemoryAdapter):
    Options = Options

    def __init__(self, **options: Any) -> None:
        opts = Options.model_validate(options)
        self.embedder = LocalEmbedder(cache=opts.cache if opts.cache is not None else True)
        self.texts: dict[str, str] = {}
        self.vectors: dict[str, np.ndarray] = {}

    def reset(self, scope_id: str) -> None:
        self.texts, self.vectors = {}, {}

    def ingest(self, episode: Episode) -> None:
        self.texts[episode.episode_id] = episode.text
        self.vectors[episode.episode_id] = self.embedder.embed([episode.text])[0]

    def search(self, query: str, filters: dict[str, Any] | None = None,
               limit: int | None = None) -> list[SearchResult]:
        if not self.vectors:
            return []
        q = self.embedder.embed([query])[0]
        scores = {ref: float(v @ q) for ref, v in self.vectors.items()}
        ranked = sorted(scores, key=scores.__getitem__, reverse=True)[: limit or 10]
        return [SearchResult(ref_id=r, text=self.texts[r], score=scores[r]) for r in ranked]

    def retrieve(self, ref_id: str) -> Document | None:
        text = self.texts.get(ref_id)
        return Document(ref_id=ref_id, text=text) if text is not None else None

    def get_capabilities(self) -> CapabilityManifest:
        return CapabilityManifest(description=f"episodes embedded in-process with "
                                              f"{self.embedder.model}")

    def close(self) -> None:
        self.embedder.close()
