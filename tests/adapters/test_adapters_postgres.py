"""The postgres adapter against a real PostgreSQL server started on loopback for this module."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar

import anyio
import pytest

from lens.adapters.postgres import PostgresAdapter
from lens.data.dataset import Episode
from lens.memory.adapter import MemoryAdapter, create_adapter
from lens.testing import AdapterConformance
from tests.adapters.pg_server import Server, running
from tests.support.extras import skip_module_unless

skip_module_unless("postgres")

CACHE = str(Path(tempfile.gettempdir()) / "lens-tests" / "embeddings.sqlite")


@pytest.fixture(scope="module")
def pg() -> Iterator[Server]:
    with running() as server:
        if isinstance(server, str):
            pytest.skip(f"no PostgreSQL server could be started: {server}")
        yield server


class _PgConformance(AdapterConformance):
    options: ClassVar[dict[str, Any]] = {}

    @pytest.fixture(autouse=True)
    def _server(self, pg: Server) -> None:
        self.dsn = pg.dsn

    def make_adapter(self) -> MemoryAdapter:
        return create_adapter("postgres", {"dsn": self.dsn, "embedding_cache": CACHE,
                                           **self.options})


class TestPostgresKeyword(_PgConformance):
    options: ClassVar[dict[str, Any]] = {"search": "keyword"}


class TestPostgresHybrid(_PgConformance):
    options: ClassVar[dict[str, Any]] = {"search": "hybrid"}


class TestPostgresVectorChunked(_PgConformance):
    options: ClassVar[dict[str, Any]] = {"search": "vector", "chunk_chars": 100,
                                         "chunk_overlap": 20}


def _ep(i: int, text: str) -> Episode:
    return Episode(episode_id=f"p{i}", scope_id="s",
                   timestamp=datetime(2024, 5, 1, tzinfo=UTC) + timedelta(days=i), text=text)


def test_schema_per_instance_and_dropped_on_close(pg: Server) -> None:
    async def main() -> None:
        import asyncpg

        a = create_adapter("postgres", {"dsn": pg.dsn, "search": "keyword"})
        b = create_adapter("postgres", {"dsn": pg.dsn, "search": "keyword"})
        await a.reset("s1")
        await b.reset("s2")
        await a.ingest(_ep(1, "alpha reactor coolant pressure warning"))
        await b.ingest(_ep(1, "beta cafeteria menu update"))
        assert [h.ref_id for h in await a.search("coolant")] == ["p1"]
        assert await b.search("coolant") == []  # same episode id, other instance: isolated
        conn = await asyncpg.connect(pg.dsn)
        try:
            schemas = {r[0] for r in await conn.fetch(
                "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'lens_%'")}
            assert len(schemas) == 2
            await a.aclose()
            await b.aclose()
            left = await conn.fetch("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'lens_%'")
            assert left == []
        finally:
            await conn.close()

    anyio.run(main)


def test_without_pgvector_vectors_are_real_arrays(pg: Server) -> None:
    """The fallback path (the pgvector path is test_adapters_pgvector.py's)."""
    async def main() -> None:
        import asyncpg

        conn = await asyncpg.connect(pg.dsn)
        try:
            if await conn.fetchval(
                    "SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'"):
                pytest.skip("this server has pgvector, so the real[] fallback is not used")
        finally:
            await conn.close()
        a = create_adapter("postgres", {"dsn": pg.dsn, "search": "vector",
                                        "embedding_cache": CACHE})
        try:
            await a.reset("s")
            await a.ingest(_ep(1, "alpha reactor coolant pressure warning"))
            await a.ingest(_ep(2, "beta cafeteria menu update"))
            assert isinstance(a, PostgresAdapter) and a.pgvector is False
            assert "real[] (no pgvector)" in (await a.get_capabilities()).description
            hits = await a.search("nuclear plant cooling problem", limit=1)
            assert [h.ref_id for h in hits] == ["p1"]
        finally:
            await a.aclose()

    anyio.run(main)


def test_missing_dsn_is_a_config_error() -> None:
    from lens.core.errors import ConfigError

    async def main() -> None:
        a = create_adapter("postgres", {"search": "keyword"})
        with pytest.raises(ConfigError, match="dsn"):
            await a.reset("s")
        await a.aclose()

    anyio.run(main)
