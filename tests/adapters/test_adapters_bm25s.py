"""The bm25s keyword adapter: the conformance suite, BM25 scores checked against the formula
computed here, ties, filters, replacement, and a clear message when the extra is missing."""

from __future__ import annotations

import math
import re
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

import pytest

from lens.core.distribution import install_hint
from lens.core.errors import ConfigError
from lens.data.dataset import Episode
from lens.memory.adapter import create_adapter
from lens.testing import AdapterConformance

pytest.importorskip("bm25s")

from lens.adapters.bm25s_adapter import Bm25sAdapter, tokens

T0 = datetime(2024, 3, 1, tzinfo=UTC)


def ep(i: int, text: str, prefix: str = "e") -> Episode:
    return Episode(episode_id=f"{prefix}{i}", scope_id="s", timestamp=T0 + timedelta(days=i),
                   text=text)


class TestBm25s(AdapterConformance):
    adapter_name = "bm25s"


class TestBm25sChunked(AdapterConformance):
    adapter_name = "bm25s_chunked"
    adapter_options: ClassVar[dict[str, Any]] = {"chunk_chars": 100, "chunk_overlap": 20}


def lucene_bm25(docs: list[list[str]], query: list[str], k1: float, b: float) -> list[float]:
    """BM25 as Lucene scores it (bm25s's default), written out independently: Lucene's idf,
    and the term-frequency part without the constant (k1 + 1) factor, which only scales."""
    n = len(docs)
    avg = sum(map(len, docs)) / n
    df = Counter(w for d in docs for w in set(d))
    out = []
    for d in docs:
        tf = Counter(d)
        s = 0.0
        for w in set(query):
            if tf[w]:
                idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
                s += idf * tf[w] / (tf[w] + k1 * (1 - b + b * len(d) / avg))
        out.append(s)
    return out


def test_scores_are_bm25_and_order_best_first() -> None:
    words = ["kafka", "broker", "latency", "spike", "pool", "retry", "gateway", "disk"]
    texts = [" ".join(words[(i * k) % len(words)] for k in range(1, 2 + i % 7))
             for i in range(120)]
    a = Bm25sAdapter(max_results=50, k1=1.2, b=0.75)
    a.reset("s")
    for i, t in enumerate(texts):
        a.ingest(ep(i, t))
    for query in ("kafka latency", "pool retry gateway disk", "spike"):
        expected = lucene_bm25([tokens(t) for t in texts], tokens(query), 1.2, 0.75)
        hits = a.search(query, limit=50)
        assert hits, query
        for h in hits:
            assert h.score == pytest.approx(expected[int(h.ref_id[1:])], rel=1e-5)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        matched = sum(1 for s in expected if s > 0)
        assert len(hits) == min(50, matched)


def test_no_match_is_no_result_and_ties_keep_arrival_order() -> None:
    a = Bm25sAdapter()
    a.reset("s")
    for i in range(5):
        a.ingest(ep(i, "identical twin text"))
    a.ingest(ep(9, "something else"))
    assert [h.ref_id for h in a.search("twin")] == ["e0", "e1", "e2", "e3", "e4"]
    assert a.search("absent words") == []
    assert a.search("a ?") == []


def test_one_build_per_change() -> None:
    a = Bm25sAdapter()
    a.reset("s")
    for i in range(20):
        a.ingest(ep(i, f"report {i} latency"))
    a.prepare("s", 20)
    for q in ("latency", "report", "latency report"):
        a.search(q)
    assert a.builds == 1
    a.ingest(ep(30, "latency spike"))
    assert a.search("spike")[0].ref_id == "e30"
    assert a.builds == 2


def test_date_filters_and_replacement() -> None:
    a = Bm25sAdapter(chunk_chars=None)
    a.reset("s")
    for i in range(40):
        a.ingest(ep(i, f"latency report {'spike' if i % 3 == 0 else 'normal'} day {i}"))
    hits = a.search("latency spike", filters={"start_date": "2024-03-10",
                                              "end_date": "2024-03-19"})
    assert hits and all("2024-03-10" <= h.metadata["timestamp"][:10] <= "2024-03-19"
                        for h in hits)
    assert hits[0].ref_id in {"e9", "e12", "e15", "e18"}
    assert a.search("latency", filters={"start_date": "2025-01-01"}) == []
    a.ingest(ep(3, "zebra crossing"))
    assert [h.ref_id for h in a.search("zebra")] == ["e3"]
    assert "e3" not in {h.ref_id for h in a.search("spike", limit=40)}
    doc = a.retrieve("e3")
    assert doc is not None and doc.text == "zebra crossing"


def test_without_the_extra_the_message_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "bm25s", None)  # makes `import bm25s` fail
    with pytest.raises(ConfigError, match=re.escape(install_hint("bm25"))):
        create_adapter("bm25s", {})
