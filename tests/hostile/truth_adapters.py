"""Adapters whose failures a run must not hide, named in configs as
``tests.hostile.truth_adapters:X``."""

from __future__ import annotations

import re
from typing import Any

from lens.adapters.sqlite_fts import SqliteFtsAdapter
from lens.memory.adapter import Document, SearchResult


class StrictQuerySyntax(SqliteFtsAdapter):
    """A search engine with a query language of its own that refuses punctuation it does not
    parse, as a tantivy or Lucene query parser does with raw user text."""

    def search(self, query: str, filters: dict[str, Any] | None = None,
               limit: int | None = None) -> list[SearchResult]:
        bad = re.search(r"[^\w\s]", query)
        if bad:
            raise ValueError(f"Syntax Error: unexpected {bad.group()!r} in query")
        return super().search(query, filters, limit)


class RowIds(SqliteFtsAdapter):
    """Finds the right episodes but hands out its own table's row ids as refs."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._rows: dict[str, str] = {}

    def search(self, query: str, filters: dict[str, Any] | None = None,
               limit: int | None = None) -> list[SearchResult]:
        hits = super().search(query, filters, limit)
        out = []
        for h in hits:
            row = self._rows.setdefault(h.ref_id, f"row-{len(self._rows) + 17}")
            out.append(h.model_copy(update={"ref_id": row}))
        return out

    def retrieve(self, ref_id: str) -> Document | None:
        episode = next((e for e, r in self._rows.items() if r == ref_id), None)
        doc = super().retrieve(episode) if episode else None
        return doc.model_copy(update={"ref_id": ref_id}) if doc else None


class FailsReset(SqliteFtsAdapter):
    """Cannot even start its unit."""

    def reset(self, scope_id: str) -> None:
        raise RuntimeError("the index directory is locked")
