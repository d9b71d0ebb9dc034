"""SQLite FTS5 full-text memory with BM25 ranking: the default store.

One episode is one row; ``ref_id`` is the episode id and ``retrieve`` returns the whole episode.
Filters: ``start_date`` / ``end_date`` (ISO-8601, inclusive) on the episode timestamp.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from lens.adapter import CapabilityManifest, Document, SearchResult, SyncMemoryAdapter
from lens.dataset import Episode, parse_timestamp

_TOKEN = re.compile(r"\w+", re.UNICODE)


class SqliteFtsOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str | None = Field(default=None, description="database file; in memory when unset")
    max_results: int = Field(default=10, ge=1, le=100)
    snippet_chars: int = Field(default=600, ge=50)


def fts_query(text: str) -> str | None:
    """An FTS5 query matching any of the words of ``text`` (quoted, so no syntax leaks)."""
    words = [w for w in _TOKEN.findall(text.lower()) if len(w) > 1]
    seen: dict[str, None] = dict.fromkeys(words)
    if not seen:
        return None
    return " OR ".join(f'"{w}"' for w in seen)


def _iso(value: Any, field: str) -> str:
    try:
        return parse_timestamp(str(value)).isoformat()
    except ValueError:
        raise ValueError(f"filter {field!r}: {value!r} is not an ISO-8601 date") from None


class SqliteFtsAdapter(SyncMemoryAdapter):
    Options = SqliteFtsOptions

    def __init__(self, path: str | None = None, max_results: int = 10,
                 snippet_chars: int = 600) -> None:
        self.path = path
        self.max_results = max_results
        self.snippet_chars = snippet_chars
        self._lock = threading.Lock()
        self._db = self._connect()

    def _connect(self) -> sqlite3.Connection:
        if self.path:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path or ":memory:", check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL" if self.path else "PRAGMA journal_mode=MEMORY")
        db.executescript(
            """
            CREATE TABLE IF NOT EXISTS episodes(
                rowid INTEGER PRIMARY KEY, episode_id TEXT UNIQUE, scope_id TEXT,
                ts TEXT, text TEXT);
            CREATE VIRTUAL TABLE IF NOT EXISTS episodes_fts USING fts5(
                text, content='episodes', content_rowid='rowid', tokenize='unicode61');
            """
        )
        return db

    def reset(self, scope_id: str) -> None:
        with self._lock:
            self._db.executescript(
                "DELETE FROM episodes; INSERT INTO episodes_fts(episodes_fts) VALUES('delete-all');"
            )
            self._db.commit()

    def ingest(self, episode: Episode) -> None:
        with self._lock:
            cur = self._db.execute(
                "INSERT OR REPLACE INTO episodes(episode_id, scope_id, ts, text) VALUES(?,?,?,?)",
                (episode.episode_id, episode.scope_id, episode.timestamp.isoformat(),
                 episode.text),
            )
            self._db.execute("INSERT INTO episodes_fts(rowid, text) VALUES(?, ?)",
                             (cur.lastrowid, episode.text))
            self._db.commit()

    def search(
        self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None
    ) -> list[SearchResult]:
        filters = filters or {}
        unknown = set(filters) - {"start_date", "end_date"}
        if unknown:
            raise ValueError(f"unknown filter(s) {sorted(unknown)}; supported: start_date, "
                             "end_date")
        match = fts_query(query)
        if match is None:
            return []
        k = min(limit or self.max_results, self.max_results)
        where, params = ["episodes_fts MATCH ?"], [match]
        if filters.get("start_date"):
            where.append("e.ts >= ?")
            params.append(_iso(filters["start_date"], "start_date"))
        if filters.get("end_date"):
            end = _iso(filters["end_date"], "end_date")
            # A bare date means the whole day.
            if re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(filters["end_date"])):
                end = end[:10] + "T23:59:59.999999" + end[19:]
            where.append("e.ts <= ?")
            params.append(end)
        sql = (
            "SELECT e.episode_id, e.ts, e.text, bm25(episodes_fts) AS rank "
            "FROM episodes_fts JOIN episodes e ON e.rowid = episodes_fts.rowid "
            f"WHERE {' AND '.join(where)} ORDER BY rank LIMIT ?"
        )
        with self._lock:
            rows = self._db.execute(sql, [*params, k]).fetchall()
        terms = set(_TOKEN.findall(query.lower()))
        return [
            SearchResult(ref_id=eid, text=self._snippet(text, terms), score=-float(rank),
                         metadata={"timestamp": ts})
            for eid, ts, text, rank in rows
        ]

    def _snippet(self, text: str, terms: set[str]) -> str:
        """The window of the episode with the most query words, so a hit shows why it matched."""
        n = self.snippet_chars
        if len(text) <= n:
            return text
        best, best_at = -1, 0
        step = max(1, n // 4)
        for start in range(0, len(text) - n + step, step):
            window = text[start : start + n].lower()
            hits = sum(1 for t in terms if t in window)
            if hits > best:
                best, best_at = hits, start
        snippet = text[best_at : best_at + n]
        return ("…" if best_at else "") + snippet + ("…" if best_at + n < len(text) else "")

    def retrieve(self, ref_id: str) -> Document | None:
        with self._lock:
            row = self._db.execute(
                "SELECT episode_id, ts, text FROM episodes WHERE episode_id = ?", (ref_id,)
            ).fetchone()
        if row is None:
            return None
        return Document(ref_id=row[0], text=row[2], metadata={"timestamp": row[1]})

    def get_capabilities(self) -> CapabilityManifest:
        return CapabilityManifest(
            search_modes=["keyword"],
            filter_fields=["start_date", "end_date"],
            max_results=self.max_results,
            description="SQLite FTS5 keyword search with BM25 ranking over whole episodes",
        )

    def close(self) -> None:
        with self._lock:
            self._db.close()


