"""LongMemEval's flat BM25 retriever as a lens memory (``longmemeval_bm25``): the retriever of the
benchmark's retrieval tables (``src/retrieval/run_retrieval.py``, ``flat-bm25``), set up the way
the official code sets it up, so that a lens run over the real items gives the published table.

* Library: ``rank_bm25.BM25Okapi`` with its default parameters (the ``bm25`` extra).
* Tokens: the text split at single spaces, case kept, no other processing (query alike).
* Granularity ``session``: one document per session, its user turns joined by a space; refs are
  episode ids. Granularity ``turn``: one document per user turn; refs ``episode_id#tN`` (N the
  turn's position among all turns of the session, from 1, as the official turn ids count).
  Assistant turns are not indexed at either granularity.
* Order: every document of the scope, best first, in the order ``numpy.argsort`` reversed gives
  (the official call), so ties fall as they fall there.

Sessions are read back from episodes imported with ``--format longmemeval``: lines beginning
``user:`` or ``assistant:`` start a turn, other lines continue the turn above. A search result
carries the session's whole text (session granularity) or the turn with the turn after it (turn
granularity: the official reader expands a retrieved turn into its round). Its listing
(``list_memory``) gives each document as a search result shows it, from its session, written at
the session's time.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

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
from lens.memory.listing import MemoryItem, MemoryListing

_TURN = re.compile(r"^(user|assistant): ", re.M)


@dataclass(frozen=True)
class Turn:
    role: str
    content: str


def session_turns(text: str) -> list[Turn]:
    """The turns of a LongMemEval session as lens's importer writes it (a header line, then
    ``role: content`` per turn)."""
    starts = list(_TURN.finditer(text))
    turns: list[Turn] = []
    for i, m in enumerate(starts):
        end = starts[i + 1].start() - 1 if i + 1 < len(starts) else len(text)
        turns.append(Turn(m.group(1), text[m.end():max(end, m.end())]))
    return turns


class LongMemEvalBm25Options(BaseModel):
    model_config = ConfigDict(extra="forbid")

    granularity: Literal["session", "turn"] = "session"
    max_results: int = Field(default=10, ge=1, le=100_000)


def _bm25_class() -> Any:
    try:
        from rank_bm25 import BM25Okapi
    except ImportError:
        raise ConfigError("adapter 'longmemeval_bm25' needs the rank_bm25 library: "
                          f"{install_hint('bm25')}") from None
    return BM25Okapi


@dataclass(frozen=True)
class _Doc:
    ref_id: str
    episode_id: str
    text: str
    shown: str


class LongMemEvalBm25Adapter(SyncMemoryAdapter):
    Options = LongMemEvalBm25Options

    def __init__(self, **options: Any) -> None:
        self.opts = read_options(self, LongMemEvalBm25Options, options)
        self._bm25 = _bm25_class()
        self._lock = threading.Lock()
        self._episodes: dict[str, Episode] = {}
        self._docs: list[_Doc] = []
        self._index: Any = None

    def reset(self, scope_id: str) -> None:
        with self._lock:
            self._episodes.clear()
            self._docs, self._index = [], None

    def ingest(self, episode: Episode) -> None:
        with self._lock:
            if episode.episode_id in self._episodes:
                self._docs = [d for d in self._docs if d.episode_id != episode.episode_id]
            self._episodes[episode.episode_id] = episode
            self._docs.extend(self._documents(episode))
            self._index = None

    def _documents(self, episode: Episode) -> list[_Doc]:
        turns = session_turns(episode.text)
        eid = episode.episode_id
        if self.opts.granularity == "session":
            text = " ".join(t.content for t in turns if t.role == "user")
            return [_Doc(eid, eid, text, episode.text)]
        docs = []
        for i, t in enumerate(turns):
            if t.role == "user":
                round_ = turns[i:i + 2]
                shown = "\n".join(f"{x.role}: {x.content}" for x in round_)
                docs.append(_Doc(f"{eid}#t{i + 1}", eid, t.content, shown))
        return docs

    def prepare(self, scope_id: str, checkpoint: int) -> None:
        with self._lock:
            self._index_locked()

    def _index_locked(self) -> Any:
        if self._index is None and self._docs:
            self._index = self._bm25([d.text.split(" ") for d in self._docs])
        return self._index

    def search(self, query: str, filters: dict[str, Any] | None = None,
               limit: int | None = None) -> list[SearchResult]:
        k = min(limit or self.opts.max_results, self.opts.max_results)
        with self._lock:
            index = self._index_locked()
            if index is None:
                return []
            scores = index.get_scores(query.split(" "))
            # The official ranking call: argsort reversed (its tie order is part of the table).
            order = np.argsort(scores)[::-1][:k]
            docs = [(self._docs[i], float(scores[i])) for i in order]
        return [SearchResult(ref_id=d.ref_id, text=d.shown, score=s,
                             metadata={"timestamp": self._episodes[d.episode_id]
                                       .timestamp.isoformat()})
                for d, s in docs]

    def retrieve(self, ref_id: str) -> Document | None:
        with self._lock:
            doc = next((d for d in self._docs if d.ref_id == ref_id), None)
            episode = self._episodes.get(ref_id)
        if doc is not None:
            return Document(ref_id=ref_id, text=doc.shown)
        return Document(ref_id=ref_id, text=episode.text) if episode is not None else None

    def list_memory(self, scope_id: str, checkpoint: int) -> MemoryListing:
        """Every document in ingest order, as a search result shows it (a session's whole text,
        or a user turn with the turn after it)."""
        with self._lock:
            return MemoryListing(items=[
                MemoryItem(item_id=d.ref_id, text=d.shown, source_episodes=[d.episode_id],
                           changed_at=self._episodes[d.episode_id].timestamp)
                for d in self._docs])

    def get_capabilities(self) -> CapabilityManifest:
        return CapabilityManifest(
            search_modes=["keyword"], max_results=self.opts.max_results, memory_listing=True,
            description=f"LongMemEval's flat BM25 (rank_bm25) over user {self.opts.granularity}s")
