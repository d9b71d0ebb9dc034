"""PostgreSQL memory: full-text search, pgvector similarity, or both fused (optional extra
``lens[postgres]``, which installs asyncpg).

For memory that outgrows one process: every adapter instance works in a schema of its own
(``<schema_prefix>_<random>``) in the database named by ``dsn``, so concurrent run units never
see each other; the schema is dropped at ``aclose`` unless ``keep_schema`` is set.

Search modes (option ``search``):
- ``keyword``: ``to_tsvector``/``ts_rank_cd`` over units, matching any word of the query;
- ``vector``: cosine similarity of all-MiniLM-L6-v2 embeddings (computed in lens, cached like
  the ``vector`` adapter's, with the same ``encoder`` option: ``contextual`` or ``static``).
  With the pgvector extension available (installed on the server, and ``CREATE EXTENSION
  vector`` allowed or already done) vectors are a ``vector(<model dimension>)`` column (384
  for the default model) ranked exactly (no index) by ``<=>``; without it they are a
  ``real[]`` column ranked by a SQL dot product, exact but slower, and the capabilities say so;
- ``hybrid`` (default): reciprocal-rank fusion of the two.
Filters: ``start_date`` / ``end_date`` (ISO-8601, inclusive). Chunking as in ``sqlite_fts``.
"""

from __future__ import annotations

import contextlib
import secrets
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.to_thread
from pydantic import Field

from lens.adapters.chunking import Unit, episode_units, split_ref, unit_items, unit_results
from lens.adapters.embedder import Embedder, EmbedderOptions
from lens.adapters.filters import DateRange, search_bounds
from lens.adapters.hybrid import rrf
from lens.adapters.options import UnitOptions
from lens.adapters.snippet import TOKEN
from lens.core.distribution import install_hint
from lens.core.errors import ConfigError
from lens.data.dataset import Episode
from lens.memory.adapter import (
    CapabilityManifest,
    Document,
    MemoryAdapter,
    SearchResult,
    read_options,
)
from lens.memory.listing import MemoryListing

if TYPE_CHECKING:
    import asyncpg


class PostgresOptions(EmbedderOptions, UnitOptions):
    dsn: str | None = Field(default=None, description="postgresql://user@host:port/database")
    search: Literal["keyword", "vector", "hybrid"] = "hybrid"
    schema_prefix: str = Field(default="lens", pattern=r"^[a-z_][a-z0-9_]{0,40}$")
    keep_schema: bool = False
    text_search_config: str = Field(default="english", pattern=r"^[a-z_]+$")
    rrf_k: int = Field(default=60, ge=1)
    candidates: int = Field(default=30, ge=1, le=500)
    pool_size: int = Field(default=4, ge=1, le=64)


def ts_query(text: str) -> str | None:
    """A ``to_tsquery`` expression matching any word of ``text``; only word characters pass."""
    words = list(dict.fromkeys(w for w in TOKEN.findall(text.lower()) if len(w) > 1))
    return " | ".join(words) if words else None


class PostgresAdapter(MemoryAdapter):
    Options = PostgresOptions

    def __init__(self, **options: Any) -> None:
        self.opts = read_options(self, PostgresOptions, options)
        # A random suffix: one schema per adapter instance, so parallel units never collide.
        self.schema = f"{self.opts.schema_prefix}_{secrets.token_hex(6)}"
        self.embedder = (Embedder(self.opts.model, self.opts.embedding_cache,
                                  encoder=self.opts.encoder)
                         if self.opts.search != "keyword" else None)
        self.pgvector: bool | None = None  # known once connected
        self._pool: asyncpg.Pool | None = None
        self._connect_lock = anyio.Lock()
        self._write_lock = anyio.Lock()
        self._pending: list[Unit] = []

    # --- connection and schema -----------------------------------------------------------

    async def _db(self) -> asyncpg.Pool:
        async with self._connect_lock:
            if self._pool is None:
                self._pool = await self._open()
            return self._pool

    async def _open(self) -> asyncpg.Pool:
        if not self.opts.dsn:
            raise ConfigError("adapter 'postgres': option 'dsn' is required "
                              "(e.g. postgresql://user@127.0.0.1:5432/lens)")
        try:
            import asyncpg
        except ImportError:
            raise ConfigError("adapter 'postgres' needs asyncpg: "
                              f"{install_hint('postgres')}") from None
        pool = await asyncpg.create_pool(self.opts.dsn, min_size=1, max_size=self.opts.pool_size)
        async with pool.acquire() as conn:
            # Fails when pgvector is not installed on the server or there is no right to create
            # it (exact SQL fallback), but also when another instance created it at the same
            # moment (IF NOT EXISTS does not guard that race): whether it exists now counts.
            with contextlib.suppress(asyncpg.PostgresError):
                await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            self.pgvector = bool(await conn.fetchval(
                "SELECT count(*) FROM pg_extension WHERE extname = 'vector'"))
            embedder = self.embedder
            if self.pgvector and embedder is not None:
                # A declared dimension is what pgvector's indexes need (a kept schema can be
                # indexed later), and it makes a vector of the wrong length an error.
                dim = await anyio.to_thread.run_sync(lambda: embedder.dim)
                vec_type = f"vector({dim})"
            else:
                vec_type = "vector" if self.pgvector else "real[]"
            s, tsconfig = self.schema, self.opts.text_search_config
            await conn.execute(f"""
                CREATE SCHEMA IF NOT EXISTS {s};
                CREATE TABLE IF NOT EXISTS {s}.episodes(
                    episode_id text PRIMARY KEY, ts timestamptz NOT NULL, text text NOT NULL);
                CREATE TABLE IF NOT EXISTS {s}.units(
                    ref_id text PRIMARY KEY, episode_id text NOT NULL, seq bigserial,
                    ts timestamptz NOT NULL, text text NOT NULL,
                    tsv tsvector GENERATED ALWAYS AS (to_tsvector('{tsconfig}', text)) STORED,
                    embedding {vec_type});
                CREATE INDEX IF NOT EXISTS units_tsv ON {s}.units USING gin(tsv);
                CREATE INDEX IF NOT EXISTS units_episode ON {s}.units(episode_id);
                CREATE INDEX IF NOT EXISTS units_ts ON {s}.units(ts);
            """)
        return pool

    # --- the contract ----------------------------------------------------------------------

    async def reset(self, scope_id: str) -> None:
        pool = await self._db()
        async with self._write_lock:
            self._pending.clear()
            await pool.execute(f"TRUNCATE {self.schema}.units, {self.schema}.episodes")

    async def ingest(self, episode: Episode) -> None:
        pool = await self._db()
        units = episode_units(episode, self.opts.chunk_chars, self.opts.chunk_overlap)
        async with self._write_lock, pool.acquire() as conn, conn.transaction():
            s = self.schema
            await conn.execute(f"DELETE FROM {s}.units WHERE episode_id = $1", episode.episode_id)
            await conn.execute(
                f"INSERT INTO {s}.episodes(episode_id, ts, text) VALUES($1, $2, $3) "
                "ON CONFLICT (episode_id) DO UPDATE SET ts = EXCLUDED.ts, text = EXCLUDED.text",
                episode.episode_id, episode.timestamp, episode.text)
            await conn.executemany(
                f"INSERT INTO {s}.units(ref_id, episode_id, ts, text) VALUES($1, $2, $3, $4)",
                [(u.ref_id, u.episode_id, u.timestamp, u.text) for u in units])
            self._pending = [u for u in self._pending if u.episode_id != episode.episode_id]
            if self.embedder is not None:
                self._pending.extend(units)
        if len(self._pending) >= 32:
            await self._flush()

    async def _flush(self) -> None:
        """Embed the units ingested since the last flush and store their vectors."""
        if self.embedder is None:
            return
        pool = await self._db()
        async with self._write_lock:
            if not self._pending:
                return
            units, self._pending = self._pending, []
            vecs = await anyio.to_thread.run_sync(self.embedder.embed, [u.text for u in units])
            rows = [(self._vec_param(v), u.ref_id) for u, v in zip(units, vecs, strict=True)]
            cast = "::vector" if self.pgvector else ""
            await pool.executemany(
                f"UPDATE {self.schema}.units SET embedding = $1{cast} WHERE ref_id = $2", rows)

    def _vec_param(self, vec: Any) -> Any:
        values = [float(x) for x in vec]
        # pgvector takes its text form; real[] takes a Python list directly.
        return "[" + ",".join(f"{x:.7g}" for x in values) + "]" if self.pgvector else values

    async def prepare(self, scope_id: str, checkpoint: int) -> None:
        await self._flush()

    def _where(self, dates: DateRange, args: list[Any]) -> str:
        clauses = []
        if dates.start is not None:
            args.append(dates.start)
            clauses.append(f"ts >= ${len(args)}")
        if dates.end is not None:
            args.append(dates.end)
            clauses.append(f"ts <= ${len(args)}")
        return "".join(f" AND {c}" for c in clauses)

    async def _keyword(self, query: str, dates: DateRange, k: int) -> list[Unit]:
        tsq = ts_query(query)
        if tsq is None:
            return []
        args: list[Any] = [tsq]
        where = self._where(dates, args)
        args.append(k)
        pool = await self._db()
        tsconfig = self.opts.text_search_config
        rows = await pool.fetch(
            f"SELECT ref_id, episode_id, ts, text, "
            f"ts_rank_cd(tsv, to_tsquery('{tsconfig}', $1)) AS rank "
            f"FROM {self.schema}.units WHERE tsv @@ to_tsquery('{tsconfig}', $1){where} "
            f"ORDER BY rank DESC, seq LIMIT ${len(args)}", *args)
        return [Unit(r["ref_id"], r["episode_id"], r["ts"], r["text"]) for r in rows]

    async def _vector(self, query: str, dates: DateRange, k: int) -> list[Unit]:
        assert self.embedder is not None
        await self._flush()
        qvec = (await anyio.to_thread.run_sync(self.embedder.embed, [query]))[0]
        args: list[Any] = [self._vec_param(qvec)]
        where = self._where(dates, args)
        args.append(k)
        if self.pgvector:
            order = "embedding <=> $1::vector"
        else:
            # float8 products: float4 multiplication raises on underflow of tiny components.
            order = ("(SELECT -sum(a::float8 * b::float8) "
                     "FROM unnest(embedding, $1::real[]) AS t(a, b))")
        pool = await self._db()
        rows = await pool.fetch(
            f"SELECT ref_id, episode_id, ts, text FROM {self.schema}.units "
            f"WHERE embedding IS NOT NULL{where} ORDER BY {order}, seq LIMIT ${len(args)}", *args)
        return [Unit(r["ref_id"], r["episode_id"], r["ts"], r["text"]) for r in rows]

    async def search(
        self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None
    ) -> list[SearchResult]:
        bounds = search_bounds(query, filters, limit, self.opts.max_results)
        if bounds is None:
            return []
        return unit_results(await self._ranked(query, *bounds), query, self.opts.snippet_chars)

    async def _ranked(self, query: str, dates: DateRange, k: int) -> list[tuple[Unit, float]]:
        """The ``k`` best units scored by reciprocal rank: in the one leg of ``search``, or
        fused over both legs for ``hybrid`` (each ranking ``candidates``, or ``k``)."""
        if self.opts.search == "keyword":
            legs = [await self._keyword(query, dates, k)]
        elif self.opts.search == "vector":
            legs = [await self._vector(query, dates, k)]
        else:
            n = max(self.opts.candidates, k)
            legs = [await self._keyword(query, dates, n), await self._vector(query, dates, n)]
        return rrf(legs, self.opts.rrf_k)[:k]

    async def retrieve(self, ref_id: str) -> Document | None:
        pool = await self._db()
        _, chunk = split_ref(ref_id)
        table, key = ("episodes", "episode_id") if chunk is None else ("units", "ref_id")
        row = await pool.fetchrow(
            f"SELECT ts, text FROM {self.schema}.{table} WHERE {key} = $1", ref_id)
        if row is None:
            return None
        meta: dict[str, Any] = {"timestamp": row["ts"].isoformat()}
        if chunk is not None:
            meta["episode_id"] = split_ref(ref_id)[0]
        return Document(ref_id=ref_id, text=row["text"], metadata=meta)

    async def list_memory(self, scope_id: str, checkpoint: int) -> MemoryListing:
        """Every stored unit in the order it was written."""
        pool = await self._db()
        rows = await pool.fetch(
            f"SELECT ref_id, episode_id, ts, text FROM {self.schema}.units ORDER BY ts, ref_id")
        return unit_items([Unit(r["ref_id"], r["episode_id"], r["ts"], r["text"]) for r in rows])

    async def get_capabilities(self) -> CapabilityManifest:
        modes = {"keyword": ["keyword"], "vector": ["semantic"],
                 "hybrid": ["keyword", "semantic", "hybrid"]}[self.opts.search]
        if self.opts.search == "keyword":
            how = "full-text search"
        else:
            store = {True: "pgvector", False: "real[] (no pgvector)",
                     None: "pgvector when available"}[self.pgvector]
            label = self.embedder.label if self.embedder is not None else ""
            how = f"{self.opts.search} search ({label}), vectors in {store}"
        return self.opts.capabilities(modes, f"PostgreSQL {how}")

    async def aclose(self) -> None:
        async with self._connect_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            try:
                if not self.opts.keep_schema:
                    await pool.execute(f"DROP SCHEMA IF EXISTS {self.schema} CASCADE")
            finally:
                await pool.close()
        if self.embedder is not None:
            self.embedder.close()
