"""The ``oracle`` arm: each question's required evidence, served by lens, never by an adapter.

The oracle is the ceiling of a comparison (``null`` is the floor, ``full_context`` the
alternative). Its evidence is ground truth, and ground truth never reaches a memory system, so
the oracle is not an adapter: a unit of the arm runs the stand-in registered as ``oracle``
(``lens.adapters.oracle``), which holds nothing, and the orchestrator answers each of its
questions through an :class:`OracleMemory` built in the driver from that one question's required
evidence, cut to the episodes ingested at its checkpoint. No other arm's agent or adapter is ever
handed an ``OracleMemory``, so the oracle's evidence reaches only the oracle arm's own tool
results, where its records show exactly what it was given.
"""

from __future__ import annotations

from typing import Any

from lens.data.config import AdapterConfig
from lens.data.dataset import MAX_REFS, Episode, Question, Scope
from lens.memory.adapter import CapabilityManifest, Document, MemoryAdapter, SearchResult

# The registered names of the reference arms a comparison is read against.
FLOOR = "null"
ALTERNATIVE = "full_context"
CEILING = "oracle"

ORACLE_DESCRIPTION = (
    "oracle (a reference arm, not a memory system): lens serves each question's required "
    "evidence, as ingested by its checkpoint, to every search and retrieve; the ceiling of the "
    "comparison")


def oracle_capabilities() -> CapabilityManifest:
    # One manifest for every question of the arm, so the agent sees the same tools throughout.
    # No search mode: the arm does not search, it is handed the evidence whatever the query
    # (and the conformance suite, which searches for what it ingested, skips it as it skips
    # the floor).
    return CapabilityManifest(search_modes=[], max_results=MAX_REFS,
                              description=ORACLE_DESCRIPTION)


def is_oracle(adapter: AdapterConfig) -> bool:
    return adapter.name == CEILING


def _episode_of(ref: str) -> str:
    return ref.split("#", 1)[0]


def evidence_episodes(scope: Scope, question: Question, ingested: int) -> list[Episode]:
    """The episodes of ``question``'s required evidence among the first ``ingested`` of the
    stream, in stream order: never an episode the memory systems had not been given yet."""
    wanted = {_episode_of(r) for r in question.ground_truth.required_evidence_refs}
    return [e for e in scope.ordered_episodes()[:ingested] if e.episode_id in wanted]


class OracleMemory(MemoryAdapter):
    """One question's evidence behind the memory tools: every search returns all of it (up to
    the limit), and retrieve gives back exactly those episodes."""

    def __init__(self, episodes: list[Episode]) -> None:
        self._episodes = {e.episode_id: e for e in episodes}

    @classmethod
    def for_question(cls, scope: Scope, question: Question, ingested: int) -> OracleMemory:
        return cls(evidence_episodes(scope, question, ingested))

    @staticmethod
    def _metadata(e: Episode) -> dict[str, Any]:
        return {"timestamp": e.timestamp.isoformat()}

    async def reset(self, scope_id: str) -> None:
        return None

    async def ingest(self, episode: Episode) -> None:
        raise RuntimeError("the oracle is built per question; it ingests nothing")

    async def search(self, query: str, filters: dict[str, Any] | None = None,
                     limit: int | None = None) -> list[SearchResult]:
        found = [SearchResult(ref_id=e.episode_id, text=e.text, metadata=self._metadata(e))
                 for e in self._episodes.values()]
        return found[:limit] if limit else found

    async def retrieve(self, ref_id: str) -> Document | None:
        e = self._episodes.get(_episode_of(ref_id))
        if e is None:
            return None
        return Document(ref_id=e.episode_id, text=e.text, metadata=self._metadata(e))

    async def get_capabilities(self) -> CapabilityManifest:
        return oracle_capabilities()
