"""The model-call cache: SQLite, keyed by everything that decides a completion.

The key covers provider, model, base_url, messages, tools, tool choice, response schema, the
sampling settings and the run unit's repeat index (so repeats at temperature > 0 do not collide),
plus backend options that change outputs. Never the API key. Hits and misses are counted per run.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, TypedDict

from lens.core.errors import UserError
from lens.core.redact import scrub
from lens.models.base import Completion, CompletionRequest

KEY_VERSION = 1
CACHE_FILE = "models.sqlite"
# The one environment variable lens reads besides API keys: where its caches live.
CACHE_DIR_ENV = "LENS_CACHE_DIR"


def default_cache_dir() -> Path:
    """``$LENS_CACHE_DIR``, else ``$XDG_CACHE_HOME/lens``, else ``~/.cache/lens``."""
    override = os.environ.get(CACHE_DIR_ENV)
    if override:
        return Path(override).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "lens"


def default_cache_path() -> Path:
    return default_cache_dir() / CACHE_FILE


def cache_key(
    *,
    provider: str,
    model: str,
    base_url: str | None,
    request: CompletionRequest,
    backend_options: dict[str, Any] | None = None,
) -> str:
    payload = {
        "v": KEY_VERSION,
        "provider": provider,
        "model": model,
        "base_url": base_url,
        "messages": [m.model_dump(mode="json") for m in request.messages],
        "tools": [t.model_dump(mode="json") for t in request.tools],
        "tool_choice": request.tool_choice,
        "response_schema": request.response_schema,
        "temperature": request.temperature,
        "top_p": request.top_p,
        "max_tokens": request.max_tokens,
        "seed": request.seed,
        "stop": request.stop,
        "repeat": request.repeat,
        "backend": backend_options or {},
    }
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


_SCHEMA = """
CREATE TABLE IF NOT EXISTS completions (
    key TEXT PRIMARY KEY,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    created REAL NOT NULL,
    completion TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    hits INTEGER NOT NULL,
    misses INTEGER NOT NULL,
    updated REAL NOT NULL
);
"""


# lens's mark on its own cache file: SQLite's ``application_id`` header field ("LENS") and the
# cache schema's version in ``user_version``, both set when lens creates the file. A file without
# them is not written to unless its tables are exactly those of a cache made before the mark.
APPLICATION_ID = 0x4C454E53
SCHEMA_VERSION = 1
_TABLES = {
    "completions": ["key", "provider", "model", "created", "completion"],
    "runs": ["run_id", "hits", "misses", "updated"],
}


class NotLensCache(UserError):
    """A file that is not lens's model cache, given where one was expected; left unchanged."""


def _refusal(path: Path, why: str) -> NotLensCache:
    return NotLensCache(
        f"{path}: not a lens model cache ({why}); lens reads and writes only a cache file it "
        "created. Give the path of a lens cache, or a path where none exists yet to start one "
        "(`--path`, or `cache.path` in the run config)")


def _inspect(path: Path) -> str:
    """``"lens"`` for a file carrying lens's mark, ``"unmarked"`` for a cache lens made before
    the mark (exactly its two tables and their columns); raises :class:`NotLensCache` for
    anything else; ``"empty"`` for a file of no bytes, which SQLite reads as a database without
    tables (another process may have just created it). Reads the file read-only, so a refused
    file is left byte-identical."""
    if path.stat().st_size == 0:
        return "empty"
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=30.0)
    except sqlite3.Error as exc:
        raise _refusal(path, f"cannot open it read-only: {exc}") from None
    try:
        app_id = db.execute("PRAGMA application_id").fetchone()[0]
        version = db.execute("PRAGMA user_version").fetchone()[0]
        tables = {name: [c[1] for c in db.execute(f'PRAGMA table_info("{name}")')]
                  for (name,) in db.execute(
                      "SELECT name FROM sqlite_master WHERE type = 'table' "
                      "AND name NOT LIKE 'sqlite_%'")}
    except sqlite3.DatabaseError as exc:
        raise _refusal(path, f"not an SQLite database: {exc}") from None
    finally:
        db.close()
    if app_id == APPLICATION_ID:
        if version > SCHEMA_VERSION:
            raise NotLensCache(f"{path}: a lens model cache of schema version {version}, newer "
                               f"than this lens reads ({SCHEMA_VERSION}); upgrade lens")
        return "lens"
    if app_id != 0:
        raise _refusal(path, f"it belongs to another application: SQLite application_id "
                             f"{app_id:#010x}")
    if tables == _TABLES and version == 0:
        return "unmarked"
    found = ", ".join(sorted(tables)) or "none"
    raise _refusal(path, f"no lens mark, and its tables ({found}) are not a lens cache's")


def _stamp(db: sqlite3.Connection) -> None:
    db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


class ModelEntries(TypedDict):
    model: str  # provider/model
    entries: int
    bytes: int


class RunCounts(TypedDict):
    run_id: str
    hits: int
    misses: int
    updated: float  # seconds since the epoch


class CacheStats(TypedDict):
    path: str
    entries: int
    bytes_on_disk: int
    models: list[ModelEntries]
    runs: list[RunCounts]


class ModelCache:
    """One SQLite file shared by concurrent calls (and processes: WAL plus a busy timeout).

    Opens only lens's own cache (see :data:`APPLICATION_ID`): a missing file is created and
    marked, a cache from before the mark is marked when opened for writing, anything else raises
    :class:`NotLensCache` before a byte of it changes. ``read_only`` opens without writing
    (``lens cache stats``)."""

    def __init__(self, path: Path | str, *, read_only: bool = False) -> None:
        self.path = Path(path)
        kind = self.kind(self.path)
        self._lock = threading.Lock()
        if read_only:
            if kind in ("new", "empty"):
                raise FileNotFoundError(f"{self.path}: no cache yet")
            self._db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True,
                                       check_same_thread=False, timeout=30.0,
                                       isolation_level=None)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30.0,
                                       isolation_level=None)
            if kind != "lens":
                _stamp(self._db)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
        self.hits = 0
        self.misses = 0

    @staticmethod
    def kind(path: Path) -> str:
        """What is at ``path``: ``"new"`` (nothing), ``"empty"`` (a file of no bytes),
        ``"lens"`` or ``"unmarked"`` (a cache from before the mark); raises
        :class:`NotLensCache` for anything else, reading nothing but the file's own tables."""
        return _inspect(path) if path.exists() else "new"

    def get(self, key: str) -> Completion | None:
        with self._lock:
            row = self._db.execute(
                "SELECT completion FROM completions WHERE key = ?", (key,)
            ).fetchone()
            if row is None:
                self.misses += 1
                return None
            self.hits += 1
        return Completion.model_validate_json(row[0])

    def put(self, key: str, completion: Completion) -> None:
        blob = scrub(completion.model_dump_json())
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO completions (key, provider, model, created, completion) "
                "VALUES (?, ?, ?, ?, ?)",
                (key, completion.provider, completion.model, time.time(), blob),
            )

    def record_run(self, run_id: str) -> None:
        """Store this process's hit/miss counts under ``run_id`` (added to earlier attempts)."""
        with self._lock:
            self._db.execute(
                "INSERT INTO runs (run_id, hits, misses, updated) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(run_id) DO UPDATE SET hits = hits + excluded.hits, "
                "misses = misses + excluded.misses, updated = excluded.updated",
                (run_id, self.hits, self.misses, time.time()),
            )
            self.hits = self.misses = 0

    def stats(self) -> CacheStats:
        with self._lock:
            rows = self._db.execute(
                "SELECT provider, model, COUNT(*), SUM(LENGTH(completion)) FROM completions "
                "GROUP BY provider, model ORDER BY provider, model"
            ).fetchall()
            runs = self._db.execute(
                "SELECT run_id, hits, misses, updated FROM runs ORDER BY updated DESC"
            ).fetchall()
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*")
                   if p.is_file())
        return {
            "path": str(self.path),
            "entries": sum(r[2] for r in rows),
            "bytes_on_disk": size,
            "models": [{"model": f"{r[0]}/{r[1]}", "entries": r[2], "bytes": r[3] or 0}
                       for r in rows],
            "runs": [{"run_id": r[0], "hits": r[1], "misses": r[2], "updated": r[3]}
                     for r in runs],
        }

    def clear(self, model: str | None = None) -> int:
        """Delete cached completions (of one ``provider/model`` when given); returns the count."""
        with self._lock:
            if model is None:
                n = self._db.execute("DELETE FROM completions").rowcount
                self._db.execute("DELETE FROM runs")
            else:
                provider, _, name = model.partition("/")
                n = self._db.execute(
                    "DELETE FROM completions WHERE provider = ? AND model = ?", (provider, name)
                ).rowcount
            self._db.execute("VACUUM")
        return int(n)

    def close(self) -> None:
        with self._lock:
            self._db.close()
