"""The conformance suite fails adapters that break the contract, each on the rule it breaks."""

from __future__ import annotations

import os
import sqlite3
from typing import Any

import anyio
import pytest

from lens.adapters.sqlite_fts import SqliteFtsAdapter
from lens.memory.adapter import CapabilityManifest, Document, SearchResult
from lens.memory.listing import MemoryItem, MemoryListing
from lens.testing import run_check, run_conformance


class _Base(SqliteFtsAdapter):
    pass


class LeaksAcrossReset(_Base):
    def reset(self, scope_id: str) -> None:  # forgets to forget
        return None


class ListingChangesState(_Base):
    """Each listing writes a note: the memory changes by being looked at."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.looks = 0

    def list_memory(self, scope_id: str, checkpoint: int) -> MemoryListing:
        self.looks += 1
        listed = super().list_memory(scope_id, checkpoint)
        return MemoryListing(items=[*listed.items,
                                    MemoryItem(item_id="looks", text=f"looked {self.looks}")])


class ListingFromTheFuture(_Base):
    """Names an episode it was never given as an item's source."""

    def list_memory(self, scope_id: str, checkpoint: int) -> MemoryListing:
        return MemoryListing(items=[MemoryItem(item_id="n", text="a note",
                                               source_episodes=["never_given"])])


class ListsUndeclared(_Base):
    def get_capabilities(self) -> CapabilityManifest:
        return super().get_capabilities().model_copy(update={"memory_listing": False})


class IgnoresLimit(_Base):
    def search(self, query: str, filters: dict[str, Any] | None = None,
               limit: int | None = None) -> list[SearchResult]:
        return super().search(query, filters, None)


class RaisesOnUnknownRef(_Base):
    def retrieve(self, ref_id: str) -> Document | None:
        doc = super().retrieve(ref_id)
        if doc is None:
            raise KeyError(ref_id)
        return doc


class DeclaresFilterItIgnores(_Base):
    def search(self, query: str, filters: dict[str, Any] | None = None,
               limit: int | None = None) -> list[SearchResult]:
        return super().search(query, None, limit)


class RetrieveLoses(_Base):
    def retrieve(self, ref_id: str) -> Document | None:
        return None


class NotJsonSafe(_Base):
    def search(self, query: str, filters: dict[str, Any] | None = None,
               limit: int | None = None) -> list[SearchResult]:
        hits = super().search(query, filters, limit)
        for h in hits:
            h.metadata["when"] = (1, 2)  # a tuple comes back from JSON as a list
        return hits


class LeaksFiles(_Base):
    def __init__(self) -> None:
        super().__init__()
        self._fd = os.open(os.devnull, os.O_RDONLY)


class LiesAboutMaxResults(_Base):
    def get_capabilities(self) -> CapabilityManifest:
        return super().get_capabilities().model_copy(update={"max_results": 2})


class FindsNothing(_Base):
    def search(self, query: str, filters: dict[str, Any] | None = None,
               limit: int | None = None) -> list[SearchResult]:
        return []


class RawQuerySyntax(_Base):
    """Hands the agent's words to SQLite FTS5's MATCH as they are: a query language, whose
    parser refuses punctuation, quotes and operators it cannot read."""

    def search(self, query: str, filters: dict[str, Any] | None = None,
               limit: int | None = None) -> list[SearchResult]:
        con = sqlite3.connect(":memory:")
        try:
            con.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
            con.execute("SELECT * FROM t WHERE t MATCH ?", (query,)).fetchall()
        finally:
            con.close()
        return super().search(query, filters, limit)


@pytest.mark.parametrize(("cls", "check", "message"), [
    (LeaksAcrossReset, "reset_isolates_scopes", "survived reset"),
    (LeaksAcrossReset, "memory_listing_well_formed", "still holds the previous scope"),
    (ListingChangesState, "memory_listing_well_formed", "two listings in a row differ"),
    (ListingFromTheFuture, "memory_listing_well_formed", "never ingested: ['never_given']"),
    (ListsUndeclared, "memory_listing_well_formed", "do not declare memory_listing"),
    (IgnoresLimit, "limit_respected", "limit=1"),
    (RaisesOnUnknownRef, "unknown_ref_is_none", "KeyError"),
    (DeclaresFilterItIgnores, "declared_filters_work", "let through"),
    (RetrieveLoses, "retrieve_returns_referenced", "for a ref search just returned"),
    (NotJsonSafe, "results_json_serialisable", "JSON round trip"),
    (LeaksFiles, "aclose_releases_resources", "file descriptor"),
    (LiesAboutMaxResults, "exact_phrase_found", "max_results"),
    (FindsNothing, "exact_phrase_found", "did not return"),
    (RawQuerySyntax, "hostile_queries_answered", "raised OperationalError: fts5: syntax error"),
])
def test_suite_fails_the_broken_rule(cls: type, check: str, message: str) -> None:
    result = anyio.run(run_check, check, cls)
    assert result.status == "failed", result
    assert message in result.detail
    # The same adapter's honest base passes that check: the failure is the defect, not the suite.
    assert anyio.run(run_check, check, _Base).status == "passed"


def test_whole_suite_reports_every_check() -> None:
    results = anyio.run(run_conformance, LeaksAcrossReset)
    # Its listing keeps the previous scope too, which the listing's own check says.
    assert [r.name for r in results if r.status == "failed"] == [
        "reset_isolates_scopes", "memory_listing_well_formed"]
    with pytest.raises(ValueError, match="unknown check"):
        anyio.run(run_conformance, _Base, ["nope"])
