"""The parts the adapters are built from: chunking, filters, fusion, timeline budgets, the
embedding cache and the numpy encoder."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import numpy as np
import pytest

from lens.adapters.chunking import episode_units, split_ref, split_text
from lens.adapters.filters import DateRange
from lens.adapters.hybrid import rrf
from lens.adapters.in_context import FullContextAdapter, RecencyAdapter
from lens.adapters.sqlite_fts import SqliteFtsAdapter
from lens.data.dataset import Episode
from lens.memory.adapter import create_adapter
from tests.support.extras import missing_reason, requires_extra

T0 = datetime(2024, 2, 1, tzinfo=UTC)


def ep(i: int, text: str) -> Episode:
    return Episode(episode_id=f"e{i}", scope_id="s", timestamp=T0 + timedelta(days=i), text=text)


def test_split_text_covers_everything_and_breaks_on_paragraphs() -> None:
    paras = [f"Paragraph {i}: " + "word " * 30 for i in range(12)]
    text = "\n\n".join(p.strip() for p in paras)
    pieces = split_text(text, 400, overlap_chars=0)
    assert all(len(p) <= 400 for p in pieces)
    assert all(p.startswith("Paragraph") for p in pieces)  # cut where a paragraph starts
    assert "".join(pieces).replace("\n", "").replace(" ", "") == text.replace("\n", "").replace(
        " ", "")
    overlapped = split_text(text, 400, overlap_chars=100)
    assert len(overlapped) >= len(pieces)
    assert split_text("short", 400) == ["short"]
    with pytest.raises(ValueError):
        split_text("x", 0)


def test_chunk_refs_round_trip() -> None:
    units = episode_units(ep(1, "a. " * 400), chunk_chars=200)
    assert [u.ref_id for u in units] == [f"e1#c{i}" for i in range(len(units))]
    assert split_ref("e1#c12") == ("e1", 12)
    assert split_ref("e1") == ("e1", None)
    assert split_ref("odd#cx") == ("odd#cx", None)
    assert [u.ref_id for u in episode_units(ep(1, "whole"), None)] == ["e1"]


def test_date_range_bare_end_date_is_inclusive() -> None:
    r = DateRange.from_filters({"start_date": "2024-02-02", "end_date": "2024-02-03"})
    assert not r.admits(T0)
    assert r.admits(T0 + timedelta(days=2, hours=23))
    assert not r.admits(T0 + timedelta(days=3))
    with pytest.raises(ValueError, match="unknown filter"):
        DateRange.from_filters({"author": "x"})
    with pytest.raises(ValueError, match="not an ISO-8601 date"):
        DateRange.from_filters({"start_date": "yesterday"})


def test_rrf_rewards_agreement() -> None:
    units = {n: episode_units(ep(i, n), None)[0] for i, n in enumerate("abcd")}
    fused = rrf([[units["a"], units["b"]], [units["c"], units["b"], units["d"]]], 60)
    # b, second in both lists, beats a and c, each first in one list only; ties keep the order
    # first seen.
    assert [u.text for u, _ in fused] == ["b", "a", "c", "d"]
    assert [s for _, s in fused] == pytest.approx([2 / 62, 1 / 61, 1 / 61, 1 / 63])


def test_full_context_newest_first_within_budget() -> None:
    a = FullContextAdapter(max_chars=250)
    a.reset("s")
    for i in range(5):
        a.ingest(ep(i, f"{i}" * 100))
    hits = a.search("anything at all")
    assert [h.ref_id for h in hits] == ["e4", "e3", "e2"]
    assert hits[2].metadata["truncated"] is True and hits[2].text == "2" * 50 + "…"
    assert sum(len(h.text.rstrip("…")) for h in hits) == 250
    assert [h.ref_id for h in a.search("x", limit=1)] == ["e4"]
    assert [h.ref_id for h in a.search("x", filters={"end_date": "2024-02-02"})] == ["e1", "e0"]


def test_recency_latest_n_and_reingest_replaces() -> None:
    a = RecencyAdapter(n=2)
    a.reset("s")
    for i in range(4):
        a.ingest(ep(i, f"text {i}"))
    a.ingest(ep(0, "edited"))  # same id again: replaced, not duplicated
    assert [h.ref_id for h in a.search("q")] == ["e3", "e2"]
    doc = a.retrieve("e0")
    assert doc is not None and doc.text == "edited"


def test_fts_ranks_the_same_with_and_without_the_date_join() -> None:
    # Unfiltered searches rank inside FTS5 and join only the winners; a date filter ranks after
    # the join. A range admitting everything must give the same hits, order and scores.
    a = SqliteFtsAdapter(max_results=5)
    a.reset("s")
    words = ["kafka", "broker", "latency", "spike", "pool", "retry", "gateway", "disk"]
    for i in range(60):
        a.ingest(ep(i, " ".join(words[(i * k) % len(words)] for k in range(1, 2 + i % 6))))
    everything = DateRange(start=T0 - timedelta(days=1), end=T0 + timedelta(days=365))
    for query in ("kafka latency", "pool retry gateway", "disk", "spike broker kafka"):
        match = a.match_expression(query)
        assert match is not None
        fast = a.ranked(match, DateRange(), 5)
        joined = a.ranked(match, everything, 5)
        assert [(u.ref_id, round(s, 9)) for u, s in fast] == [
            (u.ref_id, round(s, 9)) for u, s in joined]
        assert len(fast) == 5


def test_chunked_fts_retrieves_chunk_and_episode() -> None:
    async def main() -> None:
        a = create_adapter("sqlite_fts_chunked", {"chunk_chars": 120, "chunk_overlap": 0})
        await a.reset("s")
        text = ("Intro line about nothing in particular. " * 4 + "\n\n"
                + "The zebra crossing sensor failed twice overnight. " * 2)
        await a.ingest(ep(1, text))
        hits = await a.search("zebra sensor")
        assert hits and hits[0].ref_id.startswith("e1#c")
        assert hits[0].metadata["episode_id"] == "e1"
        chunk = await a.retrieve(hits[0].ref_id)
        whole = await a.retrieve("e1")
        assert chunk is not None and "zebra" in chunk.text and len(chunk.text) <= 120
        assert whole is not None and whole.text == text
        await a.ingest(ep(1, "replaced text without the animal"))
        assert await a.search("zebra") == []
        await a.aclose()

    anyio.run(main)


# --- embeddings --------------------------------------------------------------------------------

enc_mod = pytest.importorskip("lens.adapters.embedding")


@pytest.fixture(scope="module")
def encoder() -> enc_mod.MiniLMEncoder:
    reason = missing_reason("vector")
    if reason:
        pytest.skip(reason)
    return enc_mod.shared_encoder()


def test_encoder_unit_vectors_and_meaning(encoder: enc_mod.MiniLMEncoder) -> None:
    texts = ["The database ran out of connections during the peak.",
             "Connection pool exhaustion hit the primary DB at peak load.",
             "My grandmother bakes bread every Sunday morning."]
    v = encoder.encode(texts)
    assert v.shape == (3, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    sim = v @ v.T
    assert sim[0, 1] > 0.5 > sim[0, 2]  # paraphrase close, unrelated far


def test_encoder_padding_does_not_change_a_vector(encoder: enc_mod.MiniLMEncoder) -> None:
    short = "Disk usage warning on metrics-db-01."
    long = "Rotated the access logs; " * 30
    alone = encoder.encode([short])[0]
    batched = encoder.encode([long, short], batch_size=2)[1]  # padded to the long one's length
    assert np.allclose(alone, batched, atol=1e-5)


@requires_extra("vector")
def test_embedding_cache_avoids_re_encoding(tmp_path: Path) -> None:
    from lens.adapters.embedder import Embedder

    path = tmp_path / "e.sqlite"
    first = Embedder(cache=str(path))
    texts = ["alpha beta", "gamma delta", "alpha beta"]
    v1 = first.embed(texts)
    assert first.encoded == 2 and first.cache_hits == 1  # duplicates encode once
    first.close()
    second = Embedder(cache=str(path))
    v2 = second.embed(texts)
    assert second.encoded == 0 and second.cache_hits == 3
    assert np.array_equal(v1, v2)
    second.close()
    rows = sqlite3.connect(path).execute("SELECT model, count(*) FROM embeddings GROUP BY model")
    assert rows.fetchall() == [("all-MiniLM-L6-v2@256", 2)]


def test_encoder_matches_sentence_transformers(encoder: enc_mod.MiniLMEncoder) -> None:
    """Vectors recorded from sentence-transformers (torch) for the same packaged model; the
    third text is longer than 256 tokens, so truncation is checked too."""
    import json

    ref = json.loads((Path(__file__).parent / "data" / "minilm_reference.json").read_text())
    got = encoder.encode(ref["texts"])
    want = np.array(ref["vectors"], dtype=np.float32)
    assert encoder.token_count(ref["texts"][2]) == 256
    assert np.abs(got - want).max() < 1e-6


def test_fts_batches_commits_but_every_read_sees_every_episode(tmp_path: Path) -> None:
    from lens.adapters.sqlite_fts import COMMIT_EVERY

    path = tmp_path / "fts.sqlite"
    a = SqliteFtsAdapter(path=str(path))
    a.reset("s")
    for i in range(COMMIT_EVERY + 3):
        extra = " kafka broker outage" if i % 97 == 5 else ""
        a.ingest(ep(i, f"routine shift report {i}{extra}"))
    # Three episodes are past the last batch commit; a second connection does not see them yet.
    other = sqlite3.connect(path)
    assert other.execute("SELECT count(*) FROM units").fetchone()[0] == COMMIT_EVERY
    hits = {h.ref_id for h in a.search("kafka outage")}
    assert hits == {f"e{i}" for i in range(COMMIT_EVERY + 3) if i % 97 == 5}
    assert a.retrieve(f"e{COMMIT_EVERY + 2}") is not None
    # The search committed the batch, and close commits anything ingested after it.
    assert other.execute("SELECT count(*) FROM units").fetchone()[0] == COMMIT_EVERY + 3
    a.ingest(ep(9999, "late arrival"))
    a.close()
    assert other.execute("SELECT count(*) FROM units").fetchone()[0] == COMMIT_EVERY + 4
    other.close()


def test_encoder_caps_blas_threads_while_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    reason = missing_reason("vector")
    if reason:
        pytest.skip(reason)
    import threadpoolctl

    encoder = enc_mod.MiniLMEncoder()
    if not any(i["user_api"] == "blas" for i in threadpoolctl.threadpool_info()):
        pytest.skip("numpy has no BLAS that threadpoolctl can see")
    seen: list[int] = []
    real_forward = encoder._forward

    def spy(ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        seen.extend(i["num_threads"] for i in threadpoolctl.threadpool_info()
                    if i["user_api"] == "blas")
        return real_forward(ids, mask)

    def blas() -> dict[str, int]:
        return {i["filepath"]: i["num_threads"] for i in threadpoolctl.threadpool_info()
                if i["user_api"] == "blas"}

    encoder.encode(["warm up"])  # the first encode may load more libraries (scipy's BLAS)
    before = blas()
    monkeypatch.setattr(encoder, "_forward", spy)
    encoder.blas_threads = 1
    encoder.encode(["a short sentence", "another one"])
    assert seen and set(seen) == {1}
    assert blas() == before
