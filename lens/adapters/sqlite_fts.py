"""SQLite FTS5 full-text memory with BM25 ranking: the default store.

By default one episode is one row, its ``ref_id`` is the episode id and ``retrieve`` returns the
whole episode. With ``chunk_chars`` set (the ``sqlite_fts_chunked`` adapter) episodes are split
into chunks with refs ``episode_id#cN``; search ranks chunks, and ``retrieve`` accepts a chunk
ref (that chunk) or an episode ref (the whole episode).
Filters: ``start_date`` / ``end_date`` (ISO-8601, inclusive) on the episode timestamp.

Ranking is FTS5's own ``bm25()`` at every size, ties broken by insertion order. A query of
common words makes FTS5 score every unit holding them, which grows with the store
(``bench/adapters.py`` measures search time at 10k and 100k episodes); an agent's model call
takes seconds, so lens keeps the one ranking FTS5 maintains itself.
"""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from lens.adapters.chunking import Unit, episode_units, split_ref, unit_items, unit_results
from lens.adapters.filters import DateRange
from lens.adapters.options import UnitOptions
from lens.adapters.snippet import TOKEN
from lens.data.dataset import Episode, parse_timestamp
from lens.memory.adapter import (
    CapabilityManifest,
    Document,
    SearchResult,
    SyncMemoryAdapter,
    read_options,
)
from lens.memory.listing import MemoryListing

DEFAULT_CHUNK_CHARS = 1200
# FTS5's default tokenizer, named so that a store's schema says what it was built with.
TOKENIZE = "unicode61"


class SqliteFtsOptions(UnitOptions):
    path: str | None = Field(default=None, description="database file; in memory when unset")

    @model_validator(mode="before")
    @classmethod
    def _removed_options(cls, data: Any) -> Any:
        removed = sorted({"max_df", "prune_above"} & set(data)) if isinstance(data, dict) else []
        if removed:
            what = "is no longer an option" if len(removed) == 1 else "are no longer options"
            raise ValueError(
                f"{' and '.join(removed)} {what}: sqlite_fts ranks with exact BM25 over every "
                "query word at any size (common words no longer make a search slow); delete "
                f"{'it' if len(removed) == 1 else 'them'} from the options")
        return data


class SqliteFtsChunkedOptions(SqliteFtsOptions):
    chunk_chars: int | None = Field(default=DEFAULT_CHUNK_CHARS, ge=100)


def fts_query(text: str) -> str | None:
    """An FTS5 query matching any of the words of ``text`` (quoted, so no syntax leaks)."""
    words = [w for w in TOKEN.findall(text.lower()) if len(w) > 1]
    seen: dict[str, None] = dict.fromkeys(words)
    if not seen:
        return None
    return " OR ".join(f'"{w}"' for w in seen)


@dataclass(frozen=True)
class FtsMatch:
    """A keyword query: the FTS5 MATCH expression."""

    expression: str


_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS episodes(
    episode_id TEXT PRIMARY KEY, scope_id TEXT, ts TEXT, text TEXT);
CREATE TABLE IF NOT EXISTS units(
    rowid INTEGER PRIMARY KEY, ref_id TEXT UNIQUE, episode_id TEXT, ts TEXT, text TEXT);
CREATE INDEX IF NOT EXISTS units_episode ON units(episode_id);
CREATE VIRTUAL TABLE IF NOT EXISTS units_fts USING fts5(
    text, content='units', content_rowid='rowid', tokenize='{TOKENIZE}');
"""


COMMIT_EVERY = 256


class SqliteFtsAdapter(SyncMemoryAdapter):
    Options = SqliteFtsOptions

    def __init__(self, **options: Any) -> None:
        self.opts = read_options(self, SqliteFtsOptions, options)
        self._lock = threading.Lock()
        # Episodes ingested since the last commit. FTS5 writes an index segment per commit and
        # merges segments as they pile up, so a commit per episode made ingest slower the larger
        # the store (2,800 -> 1,200 episodes/s over 30k); committing in batches keeps it flat.
        self._uncommitted = 0
        self._db: sqlite3.Connection | None = self._connect()

    def _connect(self) -> sqlite3.Connection:
        if self.opts.path:
            Path(self.opts.path).parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.opts.path or ":memory:", check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL" if self.opts.path else "PRAGMA journal_mode=MEMORY")
        db.executescript(_SCHEMA)
        return db

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            raise RuntimeError("the adapter is closed")
        return self._db

    def reset(self, scope_id: str) -> None:
        with self._lock:
            self.db.executescript(
                "DELETE FROM episodes; DELETE FROM units; "
                "INSERT INTO units_fts(units_fts) VALUES('delete-all');"
            )
            self._commit_locked()

    def ingest(self, episode: Episode) -> None:
        self.ingest_many([episode])

    def ingest_many(self, episodes: list[Episode]) -> None:
        """Store several episodes in one transaction (re-ingesting an id replaces it)."""
        with self._lock:
            db = self.db
            for episode in episodes:
                self._forget(episode.episode_id)
                db.execute("INSERT INTO episodes(episode_id, scope_id, ts, text) VALUES(?,?,?,?)",
                           (episode.episode_id, episode.scope_id, episode.timestamp.isoformat(),
                            episode.text))
                for unit in episode_units(episode, self.opts.chunk_chars, self.opts.chunk_overlap):
                    cur = db.execute(
                        "INSERT INTO units(ref_id, episode_id, ts, text) VALUES(?,?,?,?)",
                        (unit.ref_id, unit.episode_id, unit.timestamp.isoformat(), unit.text))
                    db.execute("INSERT INTO units_fts(rowid, text) VALUES(?, ?)",
                               (cur.lastrowid, unit.text))
            self._uncommitted += len(episodes)
            if self._uncommitted >= COMMIT_EVERY:
                self._commit_locked()

    def _commit_locked(self) -> None:
        self.db.commit()
        self._uncommitted = 0

    def commit(self) -> None:
        """Make every ingested episode durable and visible to other connections."""
        with self._lock:
            if self._uncommitted:
                self._commit_locked()

    def prepare(self, scope_id: str, checkpoint: int) -> None:
        with self._lock:
            if self._uncommitted:
                self._commit_locked()

    def _forget(self, episode_id: str) -> None:
        """Remove an episode and its units."""
        rows = self.db.execute("SELECT rowid, text FROM units WHERE episode_id = ?",
                               (episode_id,)).fetchall()
        for rowid, text in rows:
            # External-content FTS tables need the old text to remove an entry.
            self.db.execute("INSERT INTO units_fts(units_fts, rowid, text) VALUES('delete', ?, ?)",
                            (rowid, text))
        self.db.execute("DELETE FROM units WHERE episode_id = ?", (episode_id,))
        self.db.execute("DELETE FROM episodes WHERE episode_id = ?", (episode_id,))

    def search(
        self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None
    ) -> list[SearchResult]:
        dates = DateRange.from_filters(filters)
        match = self.match_expression(query)
        if match is None:
            return []
        k = min(limit or self.opts.max_results, self.opts.max_results)
        return unit_results(self.ranked(match, dates, k), query, self.opts.snippet_chars)

    def match_expression(self, query: str) -> FtsMatch | None:
        """The keyword query for ``query``: each distinct word of two or more characters is a
        quoted phrase (so no FTS5 syntax leaks), OR-ed together."""
        words = list(dict.fromkeys(w for w in TOKEN.findall(query.lower()) if len(w) > 1))
        if not words:
            return None
        # Every read path starts here (hybrid ranks through it too): readers see a committed
        # index, not a half-written batch.
        self.commit()
        return FtsMatch(" OR ".join(f'"{w}"' for w in words))

    def ranked(self, match: FtsMatch, dates: DateRange, k: int) -> list[tuple[Unit, float]]:
        """The ``k`` best units for ``match``, best first (higher score; ties by insertion)."""
        start, end = dates.iso_bounds()
        with self._lock:
            if self._uncommitted:
                self._commit_locked()
            return self._ranked_by_fts5_locked(match.expression, start, end, k)

    def _ranked_by_fts5_locked(self, match: str, start: str | None, end: str | None,
                               k: int) -> list[tuple[Unit, float]]:
        if not start and not end:
            # Rank inside FTS5 and join only the k winners: joining first reads the text of
            # every matching unit before the sort (5x slower at 10k units, same results).
            sql = (
                "SELECT u.ref_id, u.episode_id, u.ts, u.text, r.rank FROM "
                "(SELECT rowid, rank FROM units_fts WHERE units_fts MATCH ? "
                "ORDER BY rank, rowid LIMIT ?) r JOIN units u ON u.rowid = r.rowid "
                "ORDER BY r.rank, r.rowid"
            )
            rows = self.db.execute(sql, [match, k]).fetchall()
        else:
            where, params = ["units_fts MATCH ?"], [match]
            if start:
                where.append("u.ts >= ?")
                params.append(start)
            if end:
                where.append("u.ts <= ?")
                params.append(end)
            sql = (
                "SELECT u.ref_id, u.episode_id, u.ts, u.text, bm25(units_fts) AS rank "
                "FROM units_fts JOIN units u ON u.rowid = units_fts.rowid "
                f"WHERE {' AND '.join(where)} ORDER BY rank, u.rowid LIMIT ?"
            )
            rows = self.db.execute(sql, [*params, k]).fetchall()
        # bm25() is lower-is-better; negate so every adapter's scores read higher-is-better.
        return [(Unit(ref, eid, parse_timestamp(ts), text), -float(rank))
                for ref, eid, ts, text, rank in rows]

    def retrieve(self, ref_id: str) -> Document | None:
        episode_id, chunk = split_ref(ref_id)
        self.commit()
        with self._lock:
            if chunk is None:
                row = self.db.execute(
                    "SELECT episode_id, ts, text FROM episodes WHERE episode_id = ?", (ref_id,)
                ).fetchone()
            else:
                row = self.db.execute(
                    "SELECT episode_id, ts, text FROM units WHERE ref_id = ?", (ref_id,)
                ).fetchone()
        if row is None:
            return None
        meta: dict[str, Any] = {"timestamp": row[1]}
        if chunk is not None:
            meta["episode_id"] = episode_id
        return Document(ref_id=ref_id, text=row[2], metadata=meta)

    def list_memory(self, scope_id: str, checkpoint: int) -> MemoryListing:
        """Every stored unit (episode or chunk) in insertion order."""
        with self._lock:
            rows = self.db.execute(
                "SELECT ref_id, episode_id, ts, text FROM units ORDER BY rowid").fetchall()
        return unit_items([Unit(ref, eid, parse_timestamp(ts), text)
                           for ref, eid, ts, text in rows])

    def episode_count(self) -> int:
        with self._lock:
            return int(self.db.execute("SELECT count(*) FROM episodes").fetchone()[0])

    def get_capabilities(self) -> CapabilityManifest:
        return self.opts.capabilities(["keyword"], "SQLite FTS5 keyword search with BM25 ranking")

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                if self._uncommitted:
                    self._commit_locked()
                self._db.close()
                self._db = None


class SqliteFtsChunkedAdapter(SqliteFtsAdapter):
    """``sqlite_fts`` over chunks of ``chunk_chars`` characters (default 1200)."""

    Options = SqliteFtsChunkedOptions

