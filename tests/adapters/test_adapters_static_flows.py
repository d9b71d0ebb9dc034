"""``encoder: static`` where the lens embedder flows into other stores: mem0 (raw mode) and
postgres (vector search, a real server on loopback). Each is skipped when its extra is missing."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import anyio
import pytest

from lens.memory.adapter import MemoryAdapter, create_adapter
from lens.testing import AdapterConformance
from tests.support.extras import requires_extra

CACHE = str(Path(tempfile.gettempdir()) / "lens-tests" / "embeddings.sqlite")
STATIC: dict[str, Any] = {"embedding_cache": CACHE, "encoder": "static"}


@requires_extra("mem0")
class TestMem0RawStatic(AdapterConformance):
    adapter_name = "mem0"
    adapter_options: ClassVar[dict[str, Any]] = STATIC


@pytest.fixture(scope="module")
def pg_dsn() -> Iterator[str]:
    from tests.adapters.pg_server import running

    with running() as server:
        if isinstance(server, str):
            pytest.skip(f"no PostgreSQL server could be started: {server}")
        yield server.dsn


@requires_extra("postgres")
class TestPostgresVectorStatic(AdapterConformance):
    @pytest.fixture(autouse=True)
    def _server(self, pg_dsn: str) -> None:
        self.dsn = pg_dsn

    def make_adapter(self) -> MemoryAdapter:
        return create_adapter("postgres", {"dsn": self.dsn, "search": "vector", **STATIC})


def test_capabilities_say_static_in_postgres_and_mem0() -> None:
    async def main() -> list[str]:
        out = []
        for name in ("postgres", "mem0"):
            adapter = create_adapter(name, {"encoder": "static", "embedding_cache": "none"})
            try:
                out.append((await adapter.get_capabilities()).description)
            finally:
                await adapter.aclose()
        return out

    for description in anyio.run(main):
        assert "static token vectors" in description
