"""Adapters with a standing context, for tests (run in-process or as ``module:Class``)."""

from __future__ import annotations

from typing import Any

from lens.data.dataset import Episode
from lens.memory.adapter import CapabilityManifest, Document, MemoryAdapter, SearchResult


class NotesAdapter(MemoryAdapter):
    """Keeps every episode; its standing context lists the first sentence of each one."""

    def __init__(self) -> None:
        self.episodes: list[Episode] = []

    async def reset(self, scope_id: str) -> None:
        self.episodes = []

    async def ingest(self, episode: Episode) -> None:
        self.episodes.append(episode)

    async def search(self, query: str, filters: dict[str, Any] | None = None,
                     limit: int | None = None) -> list[SearchResult]:
        words = {w for w in query.lower().split() if len(w) > 3}
        hits = [e for e in self.episodes if words & set(e.text.lower().split())]
        return [SearchResult(ref_id=e.episode_id, text=e.text) for e in hits][: limit or 10]

    async def retrieve(self, ref_id: str) -> Document | None:
        for e in self.episodes:
            if e.episode_id == ref_id:
                return Document(ref_id=e.episode_id, text=e.text)
        return None

    async def get_capabilities(self) -> CapabilityManifest:
        return CapabilityManifest(standing_context=True)

    async def standing_context(self, scope_id: str, checkpoint: int) -> str | None:
        lines = [f"- {e.text.split('.')[0]} [{e.episode_id}]" for e in self.episodes]
        return "Notes so far:\n" + "\n".join(lines) if lines else None

    async def model_usage(self) -> dict[str, Any] | None:
        # As if each standing context took one model call of 10 + 5 tokens at a known price.
        n = len(self.episodes)
        return {"calls": n, "prompt_tokens": 10 * n, "completion_tokens": 5 * n,
                "cost_usd": 0.001 * n}


class HoardingNotes(NotesAdapter):
    """Wrong: its standing context keeps what earlier scopes held after reset."""

    def __init__(self) -> None:
        super().__init__()
        self.ever: list[Episode] = []

    async def ingest(self, episode: Episode) -> None:
        await super().ingest(episode)
        self.ever.append(episode)

    async def standing_context(self, scope_id: str, checkpoint: int) -> str | None:
        return "\n".join(e.text for e in self.ever)


class UndeclaredNotes(NotesAdapter):
    """Wrong: returns a standing context without declaring it."""

    async def get_capabilities(self) -> CapabilityManifest:
        return CapabilityManifest()


class HugeNotes(NotesAdapter):
    """A standing context far larger than any payload budget."""

    async def standing_context(self, scope_id: str, checkpoint: int) -> str | None:
        return "ü" * 100_000
