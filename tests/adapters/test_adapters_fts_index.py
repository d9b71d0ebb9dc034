"""sqlite_fts ranks with FTS5's own bm25() and nothing else: its scores are FTS5's, replacing and
adding episodes is seen by the next search, date filters apply, and options of the ranking
lens no longer has are refused with the reason."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta

import pytest

from lens.adapters.sqlite_fts import SqliteFtsAdapter
from lens.core.errors import ConfigError
from lens.data.dataset import Episode
from lens.memory.adapter import create_adapter

T0 = datetime(2024, 3, 1, tzinfo=UTC)


def ep(i: int, text: str, prefix: str = "e") -> Episode:
    return Episode(episode_id=f"{prefix}{i}", scope_id="s", timestamp=T0 + timedelta(days=i),
                   text=text)


def fts5_bm25(a: SqliteFtsAdapter, expression: str, k: int) -> list[tuple[str, float]]:
    """FTS5's ranking, asked directly of the adapter's tables."""
    rows = a.db.execute(
        "SELECT u.ref_id, bm25(units_fts) FROM units_fts JOIN units u ON u.rowid = units_fts.rowid"
        " WHERE units_fts MATCH ? ORDER BY bm25(units_fts), u.rowid LIMIT ?",
        (expression, k)).fetchall()
    return [(ref, -score) for ref, score in rows]


def test_scores_and_order_are_fts5_bm25() -> None:
    a = SqliteFtsAdapter(max_results=20)
    a.reset("s")
    words = ["kafka", "broker", "latency", "spike", "pool", "retry", "gateway", "disk"]
    for i in range(300):
        a.ingest(ep(i, " ".join(words[(i * k) % len(words)] for k in range(1, 2 + i % 7))))
    for query in ("kafka latency", "pool retry gateway disk", "spike", "broker kafka spike"):
        match = a.match_expression(query)
        assert match is not None
        got = [(h.ref_id, round(h.score, 9)) for h in a.search(query, limit=20)]
        assert got == [(r, round(s, 9)) for r, s in fts5_bm25(a, match.expression, 20)]
    a.close()


def test_the_schema_holds_no_second_index() -> None:
    a = SqliteFtsAdapter()
    names = {r[0] for r in a.db.execute("SELECT name FROM sqlite_master")}
    assert "units_fts" in names
    assert not {n for n in names if "vocab" in n or "terms" in n}
    a.close()


def test_a_rarer_word_outranks_a_common_one_and_ties_keep_insertion_order() -> None:
    a = SqliteFtsAdapter(max_results=5)
    a.reset("s")
    for i in range(40):
        a.ingest(ep(i, f"daily report shift {i}"))
    a.ingest(ep(50, "daily report incident"))
    assert a.search("report incident")[0].ref_id == "e50"
    for i in range(60, 64):
        a.ingest(ep(i, "identical twin text"))
    twins = a.search("twin")
    assert [h.ref_id for h in twins] == ["e60", "e61", "e62", "e63"]
    assert len({h.score for h in twins}) == 1
    a.close()


@pytest.mark.parametrize("chunk_chars", [None, 120])
def test_replaced_and_new_episodes_are_searched(chunk_chars: int | None) -> None:
    a = SqliteFtsAdapter(chunk_chars=chunk_chars, chunk_overlap=0, max_results=50)
    a.reset("s")
    a.ingest_many([ep(i, f"alpha beta note {i} " * 3) for i in range(100)])
    assert a.search("zebra") == []
    replaced = [3, 40, 99]
    for i in replaced:
        a.ingest(ep(i, "zebra crossing alpha"))
    a.ingest_many([ep(i, "zebra new", prefix="new") for i in range(3)])
    zebra = {h.ref_id.split("#")[0] for h in a.search("zebra")}
    assert zebra == {f"e{i}" for i in replaced} | {f"new{i}" for i in range(3)}
    # The replaced text is gone, not merely outranked.
    assert all("note" not in (a.retrieve(f"e{i}").text)  # type: ignore[union-attr]
               for i in replaced)
    a.reset("s")
    assert a.search("alpha beta") == []
    a.close()


def test_date_filters() -> None:
    a = SqliteFtsAdapter()
    a.reset("s")
    for i in range(40):
        a.ingest(ep(i, f"latency report {'spike' if i % 3 == 0 else 'normal'} day {i}"))
    hits = a.search("latency spike", filters={"start_date": "2024-03-10",
                                              "end_date": "2024-03-19"})
    assert hits and all("2024-03-10" <= h.metadata["timestamp"][:10] <= "2024-03-19"
                        for h in hits)
    assert hits[0].ref_id in {"e9", "e12", "e15", "e18"}
    assert a.search("latency", filters={"start_date": "2025-01-01"}) == []
    a.close()


def test_a_store_written_with_the_old_index_tables_still_opens(tmp_path: object) -> None:
    """Stores from before carry two fts5vocab tables lens no longer reads: they are ignored."""
    path = f"{tmp_path}/old.sqlite"
    a = SqliteFtsAdapter(path=path)
    a.ingest(ep(1, "kept across versions"))
    a.close()
    db = sqlite3.connect(path)
    db.executescript("CREATE VIRTUAL TABLE units_vocab USING fts5vocab(units_fts, 'row');"
                     "CREATE VIRTUAL TABLE units_terms USING fts5vocab(units_fts, 'instance');")
    db.close()
    b = SqliteFtsAdapter(path=path)
    assert [h.ref_id for h in b.search("versions")] == ["e1"]
    b.close()


def test_removed_pruning_options_are_refused_with_the_reason() -> None:
    with pytest.raises(ConfigError, match=r"max_df is no longer an option.*exact BM25"):
        create_adapter("sqlite_fts", {"max_df": 0.2})
    with pytest.raises(ConfigError, match="max_df and prune_above are no longer options"):
        create_adapter("sqlite_fts_chunked", {"prune_above": 5000, "max_df": 0.1})
