"""Every shipped adapter passes the conformance suite (mem0 and postgres in their own modules)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, ClassVar

from lens.adapters.sqlite_fts import SqliteFtsAdapter
from lens.testing import AdapterConformance
from tests.support.extras import requires_extra


def _cache() -> str:
    """Vector adapters in tests share one cache file, never the user's cache."""
    return str(Path(tempfile.gettempdir()) / "lens-tests" / "embeddings.sqlite")


class TestNull(AdapterConformance):
    adapter_name = "null"


class TestSqliteFts(AdapterConformance):
    adapter_name = "sqlite_fts"


class TestSqliteFtsOnDisk(AdapterConformance):
    def make_adapter(self) -> SqliteFtsAdapter:

        return SqliteFtsAdapter(path=str(Path(tempfile.mkdtemp()) / "m.db"))


class TestSqliteFtsChunked(AdapterConformance):
    adapter_name = "sqlite_fts_chunked"
    adapter_options: ClassVar[dict[str, Any]] = {"chunk_chars": 100, "chunk_overlap": 20}


@requires_extra("vector")
class TestVector(AdapterConformance):
    adapter_name = "vector"
    adapter_options: ClassVar[dict[str, Any]] = {"embedding_cache": _cache()}


@requires_extra("vector")
class TestVectorChunked(AdapterConformance):
    adapter_name = "vector_chunked"
    adapter_options: ClassVar[dict[str, Any]] = {
        "embedding_cache": _cache(), "chunk_chars": 100, "chunk_overlap": 20}


@requires_extra("vector")
class TestHybrid(AdapterConformance):
    adapter_name = "hybrid"
    adapter_options: ClassVar[dict[str, Any]] = {"embedding_cache": _cache()}


@requires_extra("vector")
class TestHybridChunked(AdapterConformance):
    adapter_name = "hybrid_chunked"
    adapter_options: ClassVar[dict[str, Any]] = {
        "embedding_cache": _cache(), "chunk_chars": 100, "chunk_overlap": 20}


class TestFullContext(AdapterConformance):
    adapter_name = "full_context"


class TestRecency(AdapterConformance):
    adapter_name = "recency"
