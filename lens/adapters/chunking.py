"""Splitting episodes into retrievable units.

A unit is what a search hit points at: the whole episode (ref = episode id) or one chunk of it
(ref = ``episode_id#cN``, N from 0). Chunks break on paragraph, then line, then sentence
boundaries so a chunk rarely cuts a fact in half; consecutive chunks overlap a little so a fact
on a boundary is whole in at least one of them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lens.adapters.filters import DateRange, search_bounds
from lens.adapters.options import UnitOptions
from lens.adapters.snippet import best_window, query_terms
from lens.data.dataset import Episode
from lens.memory.adapter import Document, SearchResult
from lens.memory.listing import MemoryItem, MemoryListing

CHUNK_SEPARATOR = "#c"
_CHUNK_REF = re.compile(r"^(?P<episode>.+)#c(?P<n>\d+)$")
_BREAKS = ("\n\n", "\n", ". ", " ")


@dataclass(frozen=True)
class Unit:
    ref_id: str
    episode_id: str
    timestamp: datetime
    text: str


def chunk_ref(episode_id: str, n: int) -> str:
    return f"{episode_id}{CHUNK_SEPARATOR}{n}"


def split_ref(ref_id: str) -> tuple[str, int | None]:
    """(episode id, chunk number or None for a whole-episode ref)."""
    m = _CHUNK_REF.match(ref_id)
    if m is None:
        return ref_id, None
    return m.group("episode"), int(m.group("n"))


def split_text(text: str, chunk_chars: int, overlap_chars: int = 0) -> list[str]:
    """Pieces of at most ``chunk_chars`` characters covering ``text`` in order."""
    if chunk_chars <= 0:
        raise ValueError("chunk_chars must be positive")
    overlap_chars = max(0, min(overlap_chars, chunk_chars // 2))
    pieces: list[str] = []
    start, n = 0, len(text)
    while start < n:
        end = min(start + chunk_chars, n)
        if end < n:
            window = text[start:end]
            for sep in _BREAKS:
                cut = window.rfind(sep)
                # Only break where the chunk keeps at least half its size.
                if cut >= chunk_chars // 2:
                    end = start + cut + len(sep)
                    break
        piece = text[start:end].strip()
        if piece:
            pieces.append(piece)
        if end >= n:
            break
        start = max(end - overlap_chars, start + 1)
    return pieces or [text]


def episode_units(episode: Episode, chunk_chars: int | None,
                  overlap_chars: int = 0) -> list[Unit]:
    """The units of ``episode``: itself when ``chunk_chars`` is None, else its chunks."""
    if chunk_chars is None:
        return [Unit(episode.episode_id, episode.episode_id, episode.timestamp, episode.text)]
    return [
        Unit(chunk_ref(episode.episode_id, i), episode.episode_id, episode.timestamp, piece)
        for i, piece in enumerate(split_text(episode.text, chunk_chars, overlap_chars))
    ]


def episode_document(episodes: dict[str, Episode], ref_id: str) -> Document | None:
    """The whole episode ``ref_id`` as retrieve returns it, or None for a ref never handed out."""
    episode = episodes.get(ref_id)
    if episode is None:
        return None
    return Document(ref_id=ref_id, text=episode.text,
                    metadata={"timestamp": episode.timestamp.isoformat()})


def unit_items(units: list[Unit]) -> MemoryListing:
    """The listing of a store of units: each unit as it is stored, from its episode, written at
    the episode's time (a store never changes a unit; a re-ingested episode replaces its)."""
    return MemoryListing(items=[MemoryItem(item_id=u.ref_id, text=u.text,
                                           source_episodes=[u.episode_id],
                                           changed_at=u.timestamp) for u in units])


def unit_meta(unit: Unit) -> dict[str, Any]:
    """A unit's metadata in results: its time, and its episode when the unit is a chunk."""
    meta: dict[str, Any] = {"timestamp": unit.timestamp.isoformat()}
    if unit.ref_id != unit.episode_id:
        meta["episode_id"] = unit.episode_id
    return meta


def unit_document(unit: Unit) -> Document:
    """A stored unit as retrieve returns it."""
    return Document(ref_id=unit.ref_id, text=unit.text, metadata=unit_meta(unit))


def unit_results(hits: list[tuple[Unit, float]], query: str,
                 snippet_chars: int) -> list[SearchResult]:
    """Ranked units as search results, each shown by its window holding most of the query."""
    terms = query_terms(query)
    return [SearchResult(ref_id=u.ref_id, text=best_window(u.text, terms, snippet_chars),
                         score=score, metadata=unit_meta(u)) for u, score in hits]




UnitRanking = Callable[[str, DateRange, int], list[tuple[Unit, float]]]


def search_ranked(ranked: UnitRanking, opts: UnitOptions, query: str,
                  filters: dict[str, Any] | None, limit: int | None) -> list[SearchResult]:
    """The search of an adapter that ranks units: the bounds every shipped adapter reads, then
    the ``k`` best units of ``ranked(query, dates, k)`` as results."""
    bounds = search_bounds(query, filters, limit, opts.max_results)
    if bounds is None:
        return []
    dates, k = bounds
    return unit_results(ranked(query, dates, k), query, opts.snippet_chars)
