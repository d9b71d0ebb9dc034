"""SQLite FTS5 full-text memory with BM25 ranking: the default store.

By default one episode is one row, its ``ref_id`` is the episode id and ``retrieve`` returns the
whole episode. With ``chunk_chars`` set (the ``sqlite_fts_chunked`` adapter) episodes are split
into chunks with refs ``episode_id#cN``; search ranks chunks, and ``retrieve`` accepts a chunk
ref (that chunk) or an episode ref (the whole episode).
Filters: ``start_date`` / ``end_date`` (ISO-8601, inclusive) on the episode timestamp.

Ranking is FTS5's BM25 at every size. A query whose words are rare is ranked by FTS5 itself; one
whose words are common (FTS5 would score tens of thousands of units) by ``adapters.bm25_index``,
which returns the same units, in the same order, with the same scores: it reads its statistics
and postings from the FTS5 table and tokenizes later units as FTS5 does
(``adapters.unicode61``). Ties are broken by insertion order on both paths.
"""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from adapters import fts5_data
from adapters.bm25_index import Bm25Index
from adapters.chunking import Unit, episode_units, split_ref
from adapters.filters import DATE_FILTERS, DateRange
from adapters.snippet import TOKEN, best_window, query_terms
from adapters.unicode61 import TOKENIZE, shared_tokenizer
from lens.adapter import CapabilityManifest, Document, SearchResult, SyncMemoryAdapter
from lens.dataset import Episode, parse_timestamp

DEFAULT_CHUNK_CHARS = 1200


class SqliteFtsOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str | None = Field(default=None, description="database file; in memory when unset")
    max_results: int = Field(default=10, ge=1, le=100)
    snippet_chars: int = Field(default=600, ge=50)
    chunk_chars: int | None = Field(default=None, ge=100,
                                    description="split episodes into chunks of this size")
    chunk_overlap: int = Field(default=150, ge=0)

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
    """A keyword query: the FTS5 expression, and the tokens FTS5 looks for in each of its
    phrases (one quoted query word is one phrase; ``service_b`` is the two tokens of one)."""

    expression: str
    phrases: tuple[tuple[str, ...], ...]

    @property
    def single_tokens(self) -> list[str] | None:
        """The phrases' tokens when every phrase is one token (empty phrases match nothing);
        None when a phrase needs positions."""
        if any(len(p) > 1 for p in self.phrases):
            return None
        return [p[0] for p in self.phrases if p]


_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS episodes(
    episode_id TEXT PRIMARY KEY, scope_id TEXT, ts TEXT, text TEXT);
CREATE TABLE IF NOT EXISTS units(
    rowid INTEGER PRIMARY KEY, ref_id TEXT UNIQUE, episode_id TEXT, ts TEXT, text TEXT);
CREATE INDEX IF NOT EXISTS units_episode ON units(episode_id);
CREATE VIRTUAL TABLE IF NOT EXISTS units_fts USING fts5(
    text, content='units', content_rowid='rowid', tokenize='{TOKENIZE}');
CREATE VIRTUAL TABLE IF NOT EXISTS units_vocab USING fts5vocab(units_fts, 'row');
CREATE VIRTUAL TABLE IF NOT EXISTS units_terms USING fts5vocab(units_fts, 'instance');
"""


COMMIT_EVERY = 256
# A query whose words' document frequencies sum to at least this many is ranked in memory. FTS5
# scores every unit it matches, about 1.2 µs each. Measured on a word of each frequency in 20k
# ops reports: at 2,000 FTS5 took 2.4 ms, the index 1.8 ms when it loads the word's postings and
# 0.18 ms once they are loaded; the two cross near 1,000. The threshold sits above the crossing
# so that stores whose queries FTS5 answers in a couple of milliseconds never build the index.
MEMORY_RANKING_DF = 2000


class SqliteFtsAdapter(SyncMemoryAdapter):
    Options = SqliteFtsOptions

    def __init__(self, path: str | None = None, max_results: int = 10,
                 snippet_chars: int = 600, chunk_chars: int | None = None,
                 chunk_overlap: int = 150) -> None:
        self.path = path
        self.max_results = max_results
        self.snippet_chars = snippet_chars
        self.chunk_chars = chunk_chars
        self.chunk_overlap = chunk_overlap
        self._lock = threading.Lock()
        # Episodes ingested since the last commit. FTS5 writes an index segment per commit and
        # merges segments as they pile up, so a commit per episode made ingest slower the larger
        # the store (2,800 -> 1,200 episodes/s over 30k); committing in batches keeps it flat.
        self._uncommitted = 0
        self._db: sqlite3.Connection | None = self._connect()
        self._tokenizer = shared_tokenizer()
        # Document frequencies of query words, valid until the next write: they decide whether
        # a query is ranked in memory before the index exists. Counting a word's units costs
        # time linear in them (3 ms for a word in 90k units), and the questions of a checkpoint
        # all search one unchanging store and share most of their common words.
        self._df: dict[str, int] = {}
        # Built by the first query too costly for FTS5. Units written after that are queued by
        # rowid and tokenized at the next search or prepare, so ingest itself costs no more.
        self._index: Bm25Index | None = None
        self._pending: set[int] = set()
        # Searches ranked by each path, for tests and benchmarks.
        self.searches_fts5 = 0
        self.searches_in_memory = 0

    def _connect(self) -> sqlite3.Connection:
        if self.path:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path or ":memory:", check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL" if self.path else "PRAGMA journal_mode=MEMORY")
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
            self._df.clear()
            self._index = None
            self._pending.clear()

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
                for unit in episode_units(episode, self.chunk_chars, self.chunk_overlap):
                    cur = db.execute(
                        "INSERT INTO units(ref_id, episode_id, ts, text) VALUES(?,?,?,?)",
                        (unit.ref_id, unit.episode_id, unit.timestamp.isoformat(), unit.text))
                    db.execute("INSERT INTO units_fts(rowid, text) VALUES(?, ?)",
                               (cur.lastrowid, unit.text))
                    if self._index is not None and cur.lastrowid is not None:
                        self._pending.add(cur.lastrowid)
            self._df.clear()
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
            # Questions follow a checkpoint: index the new units now, not in the first search.
            self._catch_up_locked()

    def _forget(self, episode_id: str) -> None:
        """Remove an episode and its units."""
        rows = self.db.execute("SELECT rowid, text FROM units WHERE episode_id = ?",
                               (episode_id,)).fetchall()
        for rowid, text in rows:
            # External-content FTS tables need the old text to remove an entry.
            self.db.execute("INSERT INTO units_fts(units_fts, rowid, text) VALUES('delete', ?, ?)",
                            (rowid, text))
            if self._index is not None and rowid not in self._pending:
                self._index.remove(rowid)
            self._pending.discard(rowid)
        self.db.execute("DELETE FROM units WHERE episode_id = ?", (episode_id,))
        self.db.execute("DELETE FROM episodes WHERE episode_id = ?", (episode_id,))

    def search(
        self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None
    ) -> list[SearchResult]:
        dates = DateRange.from_filters(filters)
        match = self.match_expression(query)
        if match is None:
            return []
        k = min(limit or self.max_results, self.max_results)
        return [
            SearchResult(ref_id=u.ref_id, text=best_window(u.text, query_terms(query),
                                                           self.snippet_chars),
                         score=score, metadata=self._meta(u))
            for u, score in self.ranked(match, dates, k)
        ]

    def match_expression(self, query: str) -> FtsMatch | None:
        """The keyword query for ``query``: each distinct word of two or more characters is a
        quoted phrase (so no FTS5 syntax leaks), OR-ed together."""
        words = list(dict.fromkeys(w for w in TOKEN.findall(query.lower()) if len(w) > 1))
        if not words:
            return None
        # Every read path starts here (hybrid ranks through it too): readers see a committed
        # index, not a half-written batch.
        self.commit()
        return FtsMatch(" OR ".join(f'"{w}"' for w in words),
                        tuple(tuple(self._tokenizer.tokens(w)) for w in words))

    def ranked(self, match: FtsMatch, dates: DateRange, k: int) -> list[tuple[Unit, float]]:
        """The ``k`` best units for ``match``, best first (higher score; ties by insertion)."""
        start, end = dates.iso_bounds()
        with self._lock:
            if self._uncommitted:
                self._commit_locked()
            terms = match.single_tokens
            index = self._index_for_locked(terms) if terms else None
            if index is not None and terms:
                self.searches_in_memory += 1
                return self._units_locked(index.search(terms, k, start, end))
            self.searches_fts5 += 1
            return self._ranked_by_fts5_locked(match.expression, start, end, k)

    def _index_for_locked(self, terms: list[str]) -> Bm25Index | None:
        """The in-memory index, up to date, when it should rank ``terms``; built for the first
        query too costly for FTS5. Once built it ranks every query it can: it is faster than
        FTS5 for all of them, and saves the frequency lookups."""
        if self._index is None:
            df = self._doc_freqs_locked(terms)
            if sum(df.values()) < MEMORY_RANKING_DF:
                return None
            self._build_index_locked()
        else:
            self._catch_up_locked()
        return self._index

    def _build_index_locked(self) -> None:
        db = self.db
        index = Bm25Index(lambda term: fts5_data.postings(db, "units_terms", term))
        rowids, lengths = fts5_data.row_lengths(db, "units_fts")
        stamped = db.execute("SELECT rowid, ts FROM units ORDER BY rowid").fetchall()
        if [r for r, _ in stamped] != rowids.tolist():
            raise RuntimeError("units and units_fts hold different rows: rebuild the store")
        index.load(rowids, lengths, [ts for _, ts in stamped])
        self._index = index
        self._pending.clear()

    def _catch_up_locked(self) -> None:
        """Index the units written since the index was built or last caught up."""
        if self._index is None or not self._pending:
            return
        if len(self._pending) > max(1000, len(self._index) // 4):
            # Tokenizing this many costs more than reading FTS5's statistics afresh and
            # reloading postings as queries need them.
            self._build_index_locked()
            return
        pending = sorted(self._pending)
        self._pending.clear()
        for i in range(0, len(pending), 500):
            chunk = pending[i:i + 500]
            rows = self.db.execute(
                f"SELECT rowid, ts, text FROM units WHERE rowid IN ({','.join('?' * len(chunk))})"
                " ORDER BY rowid", chunk).fetchall()
            self._index.add((rowid, ts, self._tokenizer.tokens(text)) for rowid, ts, text in rows)

    def _doc_freqs_locked(self, words: list[str]) -> dict[str, int]:
        missing = [w for w in words if w not in self._df]
        if missing:
            marks = ",".join("?" * len(missing))
            found = dict(self.db.execute(
                f"SELECT term, doc FROM units_vocab WHERE term IN ({marks})", missing
            ).fetchall())
            for w in missing:
                self._df[w] = int(found.get(w, 0))
        return {w: self._df[w] for w in words}

    def _units_locked(self, hits: list[tuple[int, float]]) -> list[tuple[Unit, float]]:
        if not hits:
            return []
        rowids = [r for r, _ in hits]
        rows = {r[0]: r[1:] for r in self.db.execute(
            "SELECT rowid, ref_id, episode_id, ts, text FROM units "
            f"WHERE rowid IN ({','.join('?' * len(rowids))})", rowids)}
        out = []
        for rowid, score in hits:
            ref, eid, ts, text = rows[rowid]
            out.append((Unit(ref, eid, parse_timestamp(ts), text), score))
        return out

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

    def _meta(self, unit: Unit) -> dict[str, Any]:
        meta: dict[str, Any] = {"timestamp": unit.timestamp.isoformat()}
        if unit.ref_id != unit.episode_id:
            meta["episode_id"] = unit.episode_id
        return meta

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

    def episode_count(self) -> int:
        with self._lock:
            return int(self.db.execute("SELECT count(*) FROM episodes").fetchone()[0])

    def get_capabilities(self) -> CapabilityManifest:
        unit = "chunks (refs episode_id#cN)" if self.chunk_chars else "whole episodes"
        return CapabilityManifest(
            search_modes=["keyword"],
            filter_fields=list(DATE_FILTERS),
            max_results=self.max_results,
            description=f"SQLite FTS5 keyword search with BM25 ranking over {unit}",
        )

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

    def __init__(self, chunk_chars: int | None = DEFAULT_CHUNK_CHARS, **kwargs: Any) -> None:
        super().__init__(chunk_chars=chunk_chars, **kwargs)
