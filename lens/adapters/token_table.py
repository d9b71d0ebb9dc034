"""A persistent table of distilled token vectors: one row per (distillation key, token id).

The static encoder needs a vector for every token id it meets, and computing one costs a
forward pass of the teacher model. The table keeps them in memory as a dense matrix and in a
SQLite file (by default the embedding cache's file), so a machine distils each token once and
every later process only reads them. Rows are only ever added; a row's value depends only on
the distillation key and the token id, so two processes adding the same row at once is harmless.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from lens.adapters.embedding import Matrix

Ids = NDArray[np.int64]


class TokenTable:
    """Token vectors of one distillation (``key``): dense in memory, rows persisted in SQLite."""

    def __init__(self, path: Path | None, key: str, vocab_size: int, dim: int) -> None:
        self.path = path
        self.key = key
        self.vecs: Matrix = np.zeros((vocab_size, dim), dtype=np.float32)
        self.known = np.zeros(vocab_size, dtype=bool)
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._read_all = False

    def _conn(self) -> sqlite3.Connection:
        # Opened on first use (under the lock), so building an encoder touches no file.
        if self._db is None:
            if self.path is not None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(self.path) if self.path else ":memory:",
                                       check_same_thread=False, timeout=30)
            if self.path is not None:
                self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS token_vectors(table_key TEXT, token_id INTEGER, "
                "vec BLOB, PRIMARY KEY(table_key, token_id)) WITHOUT ROWID")
            self._db.commit()
        return self._db

    def _store(self, rows: list[tuple[int, bytes]]) -> int:
        dim = self.vecs.shape[1]
        added = 0
        for token_id, blob in rows:
            vec = np.frombuffer(blob, dtype=np.float32)
            if vec.shape == (dim,) and 0 <= token_id < len(self.known):
                self.vecs[token_id] = vec
                self.known[token_id] = True
                added += 1
        return added

    def missing(self, ids: Ids) -> Ids:
        """The ids among ``ids`` (unique) with no vector yet, after reading the file.

        The first call reads every stored row of this key at once (30k rows of a full
        vocabulary take tens of milliseconds); later calls ask the file only for ids still
        missing, which another process may have distilled since.
        """
        with self._lock:
            if not self._read_all:
                self._read_all = True
                rows = self._conn().execute(
                    "SELECT token_id, vec FROM token_vectors WHERE table_key = ?",
                    (self.key,)).fetchall()
                self._store(rows)
            want = ids[~self.known[ids]]
            if len(want) == 0:
                return want
            db = self._conn()
            for start in range(0, len(want), 500):
                part = [int(i) for i in want[start:start + 500]]
                marks = ",".join("?" * len(part))
                rows = db.execute(
                    f"SELECT token_id, vec FROM token_vectors WHERE table_key = ? "
                    f"AND token_id IN ({marks})", [self.key, *part]).fetchall()
                self._store(rows)
            return want[~self.known[want]]

    def add(self, ids: Ids, vecs: Matrix) -> None:
        with self._lock:
            self.vecs[ids] = vecs
            self.known[ids] = True
            db = self._conn()
            db.executemany(
                "INSERT OR IGNORE INTO token_vectors(table_key, token_id, vec) VALUES(?,?,?)",
                [(self.key, int(i), np.ascontiguousarray(v, dtype=np.float32).tobytes())
                 for i, v in zip(ids, vecs, strict=True)])
            db.commit()

    def stored(self) -> int:
        """Rows of this key in the file (the persisted part of the table)."""
        with self._lock:
            row = self._conn().execute(
                "SELECT count(*) FROM token_vectors WHERE table_key = ?", (self.key,)).fetchone()
            return int(row[0])

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
