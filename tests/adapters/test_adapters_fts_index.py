"""sqlite_fts's in-memory ranking: the unicode61 tokenizer agrees with FTS5 token for token, and
the in-memory index ranks exactly as FTS5's bm25() does (same units, same order, same scores)."""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

import adapters.sqlite_fts as sqlite_fts
from adapters import bm25_index
from adapters.bm25_index import Bm25Index
from adapters.chunking import episode_units
from adapters.filters import DateRange
from adapters.fts5_data import row_lengths
from adapters.sqlite_fts import SqliteFtsAdapter
from adapters.unicode61 import MAX_TOKEN_BYTES, TOKENIZE, Unicode61, shared_tokenizer
from bench.adapters import QUERIES, episode
from lens.adapter import ConfigError, create_adapter
from lens.dataset import Episode

T0 = datetime(2024, 3, 1, tzinfo=UTC)

TRICKY = [
    "Hello, World! HELLO world",
    "foo_bar snake_case __dunder__ kebab-case dot.separated",
    "O'Brien can't won’t l’été",
    "café CAFÉ cafe\u0301 naïve NAÏVE Ångström øre Łódź ǖ ǅungla",
    "\u0301leading combining, x\u0301\u0302y double, a \u0301 b",
    "straße STRASSE ﬁle ﬂow İstanbul ıi ΣΊΣΥΦΟΣ ς",
    "p99: 120ms | err: 0.45% | 1,234.56 | v2.3.1 | 0x1F | ٣٤٥ ²³ ½ Ⅻ",
    "日本語のテキスト 中文文本 한국어 텍스트 カタカナー",
    "emoji 😀 in text 👍🏽 ZWJ 👨‍👩‍👧 flags 🇫🇷 end",
    "Ｆｕｌｌｗｉｄｔｈ １２３ ＡＢＣ",
    "private \ue000\ue001 use and unassigned \U000e0080 \U0003fffe",
    "nbsp\u00a0here thin\u2009space zero\u200bwidth soft\u00adhyphen",
    "tab\tnew\nline\r\nform\x0cfeed nul\x00char \x1funit",
    "mathematical 𝐀𝐁𝐂 𝟏𝟐𝟑 script ℌ ℵ",
    "",
    "   ",
    "a",
]


def fts5_tokens(texts: list[str]) -> list[list[str]]:
    """The tokens FTS5 indexes for each text, in order."""
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='{TOKENIZE}')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    db.executemany("INSERT INTO t(rowid, x) VALUES(?, ?)", list(enumerate(texts, 1)))
    out: list[list[str]] = [[] for _ in texts]
    for doc, term in db.execute("SELECT doc, term FROM v ORDER BY doc, offset"):
        out[doc - 1].append(term)
    return out


def assert_same_tokens(texts: list[str], tokenizer: Unicode61) -> None:
    for text, expected in zip(texts, fts5_tokens(texts), strict=True):
        assert tokenizer.tokens(text) == expected, text[:200]


# --- tokenizer ---------------------------------------------------------------------------------


def test_tokenizer_matches_fts5_on_tricky_strings() -> None:
    assert_same_tokens(TRICKY, Unicode61())
    assert_same_tokens(TRICKY, shared_tokenizer())


def test_tokenizer_slow_path_matches_fts5() -> None:
    # The character-by-character loop serves texts with characters whose folded form would
    # fool translate-and-split; SQLite 3.40 has none, so run it directly.
    tokenizer = Unicode61()
    expected = fts5_tokens(TRICKY)
    for text, tokens in zip(TRICKY, expected, strict=True):
        tokenizer.tokens(text)  # learns the characters
        assert tokenizer._tokens_slowly(text) == tokens, text


def test_tokenizer_matches_fts5_on_random_unicode() -> None:
    rng = random.Random(20240301)
    blocks = [(0x20, 0x7F), (0xA0, 0x250), (0x300, 0x370), (0x370, 0x530), (0x590, 0x700),
              (0x900, 0x980), (0x1E00, 0x1F00), (0x2000, 0x2070), (0x3000, 0x30FF),
              (0x4E00, 0x4F00), (0xAC00, 0xAD00), (0xE000, 0xE010), (0xFB00, 0xFB50),
              (0xFF00, 0xFFF0), (0x1D400, 0x1D500), (0x1F300, 0x1F700), (0xE0000, 0xE0100)]
    texts = []
    for _ in range(400):
        chars = []
        for _ in range(rng.randint(1, 60)):
            lo, hi = rng.choice(blocks)
            chars.append(chr(rng.randrange(lo, hi)) if rng.random() < 0.7 else rng.choice(" a1"))
        texts.append("".join(chars))
    assert_same_tokens(texts, Unicode61())


def test_tokenizer_cuts_long_tokens_like_fts5() -> None:
    long_word = "x" * (MAX_TOKEN_BYTES + 500)
    tokens = Unicode61().tokens(f"before {long_word} after")
    assert tokens == ["before", "x" * MAX_TOKEN_BYTES, "after"]
    assert_same_tokens([f"before {long_word} after"], Unicode61())


def lens_units(shared: Path) -> Iterator[tuple[str, list[str]]]:
    """(scope, texts of its units) for whole episodes and 1200-character chunks."""
    for path in sorted(shared.glob("scope_*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for scope in data["scopes"]:
            episodes = [Episode(**e) for e in scope["episodes"]]
            yield scope["scope_id"], [e.text for e in episodes]
            yield scope["scope_id"] + " (chunks)", [
                u.text for e in episodes for u in episode_units(e, 1200, 150)]


def test_tokenizer_matches_fts5_on_every_lens_unit(shared_datasets: Path) -> None:
    tokenizer = shared_tokenizer()
    scopes = list(lens_units(shared_datasets))
    assert scopes, f"no scope files in {shared_datasets}"
    for _, texts in scopes:
        assert_same_tokens(texts, tokenizer)
        # FTS5's stored row lengths (what bm25() reads) equal the token counts too.
        db = sqlite3.connect(":memory:")
        db.execute(f"CREATE VIRTUAL TABLE u USING fts5(x, tokenize='{TOKENIZE}')")
        db.executemany("INSERT INTO u(rowid, x) VALUES(?, ?)", list(enumerate(texts, 1)))
        _, lengths = row_lengths(db, "u")
        assert lengths.tolist() == [len(tokenizer.tokens(t)) for t in texts]


def test_row_lengths_decode_long_varints() -> None:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE u USING fts5(x)")
    sizes = [0, 1, 127, 128, 16383, 16384, 70000]
    db.executemany("INSERT INTO u(rowid, x) VALUES(?, ?)",
                   [(i, "w " * n) for i, n in enumerate(sizes, 1)])
    rowids, lengths = row_lengths(db, "u")
    assert rowids.tolist() == list(range(1, len(sizes) + 1))
    assert lengths.tolist() == sizes


# --- ranking: in memory versus FTS5 ------------------------------------------------------------


def by_fts5(a: SqliteFtsAdapter, query: str, k: int,
            dates: DateRange | None = None) -> list[tuple[str, float]]:
    match = a.match_expression(query)
    assert match is not None
    start, end = (dates or DateRange()).iso_bounds()
    with a._lock:
        return [(u.ref_id, s) for u, s in a._ranked_by_fts5_locked(match.expression, start,
                                                                   end, k)]


def in_memory(a: SqliteFtsAdapter, query: str, k: int,
              dates: DateRange | None = None) -> list[tuple[str, float]]:
    match = a.match_expression(query)
    assert match is not None and match.single_tokens is not None
    before = a.searches_in_memory
    hits = [(u.ref_id, s) for u, s in a.ranked(match, dates or DateRange(), k)]
    assert a.searches_in_memory == before + 1, "the in-memory path was not taken"
    return hits


def assert_same_ranking(a: SqliteFtsAdapter, query: str, k: int,
                        dates: DateRange | None = None) -> int:
    expected = by_fts5(a, query, k, dates)
    got = in_memory(a, query, k, dates)
    assert [r for r, _ in got] == [r for r, _ in expected], (query, k)
    # Both sides run the same double operations in the same order, so the scores are equal to
    # the last bit on x86-64; the tolerance leaves room for a C compiler that fuses them.
    for (_, s), (_, e) in zip(got, expected, strict=True):
        assert s == pytest.approx(e, rel=1e-12, abs=1e-12), (query, k)
    return len(got)


@pytest.fixture
def always_in_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_fts, "MEMORY_RANKING_DF", 0)


def ranking_queries(a: SqliteFtsAdapter, texts: list[str], n: int, seed: int) -> list[str]:
    """Queries of 1-6 words sampled from the stored texts (common and rare words alike)."""
    rng = random.Random(seed)
    words = [w for t in texts for w in t.split() if any(c.isalnum() for c in w)]
    queries = []
    while len(queries) < n:
        q = " ".join(rng.choice(words) for _ in range(rng.randint(1, 6)))
        m = a.match_expression(q)
        if m is not None and m.single_tokens:
            queries.append(q)
    return queries


@pytest.mark.usefixtures("always_in_memory")
def test_in_memory_ranking_equals_fts5_on_lens_scopes(shared_datasets: Path) -> None:
    compared = 0
    for path in sorted(shared_datasets.glob("scope_*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for scope in data["scopes"]:
            episodes = [Episode(**e) for e in scope["episodes"]]
            prompts = [q["prompt"] for q in data["questions"]
                       if q["scope_id"] == scope["scope_id"]]
            for chunk_chars in (None, 1200):
                a = SqliteFtsAdapter(chunk_chars=chunk_chars, max_results=100)
                a.reset(scope["scope_id"])
                a.ingest_many(episodes)
                queries = [p for p in prompts if a.match_expression(p).single_tokens]
                assert len(queries) >= len(prompts) // 2
                queries += ranking_queries(a, [e.text for e in episodes], 40, seed=len(prompts))
                mid = episodes[len(episodes) // 2].timestamp
                window = DateRange(start=mid - timedelta(days=10), end=mid + timedelta(days=3))
                for q in queries:
                    for k in (1, 10, 100):
                        compared += assert_same_ranking(a, q, k)
                    compared += assert_same_ranking(a, q, 10, window)
                a.close()
    assert compared > 10_000


def synthetic_episodes(n: int, seed: int, prefix: str = "s") -> list[Episode]:
    """Zipf-distributed words, some texts repeated verbatim (exact score ties)."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(3000)]
    weights = [1 / (i + 1) for i in range(len(vocab))]
    texts: list[str] = []
    for _ in range(n):
        if texts and rng.random() < 0.05:
            texts.append(rng.choice(texts))
        else:
            texts.append(" ".join(rng.choices(vocab, weights, k=rng.randint(3, 120))))
    return [Episode(episode_id=f"{prefix}{i}", scope_id="s",
                    timestamp=T0 + timedelta(hours=i), text=t) for i, t in enumerate(texts)]


@pytest.mark.usefixtures("always_in_memory")
def test_in_memory_ranking_equals_fts5_on_a_large_store() -> None:
    a = SqliteFtsAdapter(max_results=100)
    a.reset("s")
    episodes = synthetic_episodes(12_000, seed=7)
    a.ingest_many(episodes)
    rng = random.Random(11)
    queries = [" ".join(f"w{int(rng.paretovariate(0.8)) % 3000}"
                        for _ in range(rng.randint(1, 6))) for _ in range(150)]
    queries += ["w0", "w0 w1", "w0 w0", "w1 w2 w3 w4 w5 w6 w7", "w2999 w0", "w9999 w0"]
    for i, q in enumerate(queries):
        for k in (1, 10, 100):
            assert_same_ranking(a, q, k)
        lo = T0 + timedelta(hours=rng.randrange(12_000))
        window = DateRange(start=lo, end=lo + timedelta(hours=rng.randrange(1, 5000)))
        assert_same_ranking(a, q, 10, window if i % 2 else DateRange(end=lo))
    a.close()


@pytest.mark.usefixtures("always_in_memory")
def test_in_memory_ranking_equals_fts5_on_the_bench_text() -> None:
    a = SqliteFtsAdapter(max_results=100)
    a.reset("bench")
    a.ingest_many([episode(i) for i in range(3000)])
    for q in QUERIES:
        for k in (1, 10, 100):
            assert_same_ranking(a, q, k)
    a.close()


def brute_force(index: Bm25Index, terms: list[str], k: int, start: str | None,
                end: str | None) -> list[tuple[int, float]]:
    """Every live unit scored, term contributions added in query order; best k by (-score,
    rowid)."""
    scores: dict[int, float] = {}
    admit = index._admitted(start, end)
    weights = [index._weights_of(t) for t in terms]
    for slot in np.flatnonzero(index._live.view & admit):
        total, found = 0.0, False
        for w in weights:
            at = np.searchsorted(w.slots, slot)
            hit = at < len(w.slots) and w.slots[at] == slot
            total += float(w.contrib[at]) if hit else 0.0
            found = found or bool(hit)
        if found:
            scores[int(index._rowid.data[slot])] = total
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:k]


@pytest.mark.parametrize("few", [bm25_index._FEW, 0])
def test_pruning_keeps_the_exact_top_k_on_tie_heavy_stores(
        few: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # Few distinct lengths and counts make many equal scores: the pruning bounds and the
    # tie-break are exercised on every query. Checked against scoring every unit. With few=0
    # the pruning runs through every term instead of stopping at a few hundred candidates.
    monkeypatch.setattr(bm25_index, "_FEW", few)
    rng = random.Random(5)
    for trial in range(30):
        docs = {}
        n = rng.choice([rng.randint(1, 60), rng.randint(300, 900)])
        vocab = [f"t{i}" for i in range(rng.randint(2, 12))]
        for rowid in range(1, n + 1):
            docs[rowid] = [rng.choice(vocab[: rng.randint(1, len(vocab))])
                           for _ in range(rng.choice([1, 3, 3, 8]))]
        index = Bm25Index(lambda term, docs=docs: (
            np.array([r for r, toks in docs.items() if term in toks], dtype=np.int64),
            np.array([toks.count(term) for toks in docs.values() if term in toks],
                     dtype=np.int64)))
        rowids = np.array(sorted(docs), dtype=np.int64)
        index.load(rowids, np.array([len(docs[r]) for r in rowids]),
                   [f"2024-01-{1 + r % 28:02d}" for r in rowids])
        for _ in range(20):
            terms = [rng.choice([*vocab, "absent"]) for _ in range(rng.randint(1, 6))]
            k = rng.choice([1, 2, 5, 10, 50, 200])
            start, end = rng.choice([(None, None), ("2024-01-05", None),
                                     ("2024-01-03", "2024-01-09"), (None, "2024-01-02")])
            assert index.search(terms, k, start, end) == brute_force(index, terms, k, start,
                                                                     end), (trial, terms, k)


# --- the in-memory index kept current ----------------------------------------------------------


def ep(i: int, text: str, prefix: str = "e") -> Episode:
    return Episode(episode_id=f"{prefix}{i}", scope_id="s", timestamp=T0 + timedelta(days=i),
                   text=text)


@pytest.mark.usefixtures("always_in_memory")
@pytest.mark.parametrize("chunk_chars", [None, 120])
def test_replace_and_new_units_after_the_index_is_built(chunk_chars: int | None) -> None:
    a = SqliteFtsAdapter(chunk_chars=chunk_chars, chunk_overlap=0, max_results=50)
    a.reset("s")
    episodes = synthetic_episodes(600, seed=3)
    a.ingest_many(episodes)
    queries = ["w0 w5", "w1", "w17 w3 w200", "zebra w2", "w0 w1 w2 w3"]
    for q in queries:
        assert_same_ranking(a, q, 20)
    assert a._index is not None
    # Replace some episodes (one of them the newest, whose rowids SQLite hands out again),
    # add new ones, and replace one of those before any search sees it.
    replaced = [*episodes[::37], episodes[-1]]
    for e in replaced:
        a.ingest(e.model_copy(update={"text": "zebra crossing " + e.text[: len(e.text) // 2]}))
    a.ingest_many(synthetic_episodes(50, seed=4, prefix="new"))
    a.ingest(ep(1, "zebra zebra w0 replaced before indexing", prefix="new"))
    for q in queries:
        assert_same_ranking(a, q, 20)
    zebra = in_memory(a, "zebra", 50)
    assert {r.split("#")[0] for r, _ in zebra} == {e.episode_id for e in replaced} | {"new1"}
    a.reset("s")
    assert a._index is None
    assert a.search("w0 w1") == []
    a.ingest(ep(1, "w0 w1 fresh start"))
    assert [h.ref_id.split("#")[0] for h in a.search("w0 w1")] == ["e1"]
    a.close()


@pytest.mark.usefixtures("always_in_memory")
def test_word_counts_past_one_byte_after_the_index_is_built() -> None:
    # Postings store counts in the narrowest type that holds them; a later unit with a larger
    # count widens it.
    a = SqliteFtsAdapter()
    a.reset("s")
    a.ingest_many([ep(i, f"alpha beta {'gamma ' * (i % 3)}") for i in range(50)])
    assert_same_ranking(a, "alpha gamma", 10)
    a.ingest(ep(60, "gamma " * 300 + "alpha"))
    a.ingest(ep(61, "gamma " * 70_000))
    assert_same_ranking(a, "alpha gamma", 10)
    assert [r for r, _ in in_memory(a, "gamma", 2)] == ["e61", "e60"]
    a.close()


@pytest.mark.usefixtures("always_in_memory")
def test_many_new_units_rebuild_the_index_instead_of_tokenizing() -> None:
    a = SqliteFtsAdapter(max_results=30)
    a.reset("s")
    a.ingest_many(synthetic_episodes(1500, seed=5))
    assert_same_ranking(a, "w0 w3", 30)
    first = a._index
    a.ingest_many(synthetic_episodes(1500, seed=6, prefix="more"))
    a.prepare("s", 3000)
    assert a._index is not first and not a._pending
    for q in ("w0 w3", "w1", "w42 w7 w0"):
        assert_same_ranking(a, q, 30)
    a.close()


@pytest.mark.usefixtures("always_in_memory")
def test_date_filters_on_the_in_memory_path() -> None:
    a = SqliteFtsAdapter()
    a.reset("s")
    for i in range(40):
        a.ingest(ep(i, f"latency report {'spike' if i % 3 == 0 else 'normal'} day {i}"))
    hits = a.search("latency spike", filters={"start_date": "2024-03-10",
                                              "end_date": "2024-03-19"})
    assert a._index is not None and a.searches_in_memory >= 1
    assert hits and all("2024-03-10" <= h.metadata["timestamp"][:10] <= "2024-03-19"
                        for h in hits)
    assert hits[0].ref_id in {"e9", "e12", "e15", "e18"}
    assert a.search("latency", filters={"start_date": "2025-01-01"}) == []
    assert_same_ranking(a, "latency spike", 10, DateRange.from_filters({"end_date": "2024-03-05"}))
    a.close()


# --- which path a query takes ------------------------------------------------------------------


def test_cheap_queries_stay_in_fts5_and_costly_ones_build_the_index(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_fts, "MEMORY_RANKING_DF", 50)
    a = SqliteFtsAdapter()
    a.reset("s")
    for i in range(60):
        a.ingest(ep(i, f"common words everywhere, unit {i}" + (" rare" if i == 7 else "")))
    assert [h.ref_id for h in a.search("rare")] == ["e7"]
    assert a.searches_fts5 == 1 and a.searches_in_memory == 0 and a._index is None
    # 60 units hold "common": over the threshold, so the index is built and ranks it.
    costly = a.search("common rare")
    assert a._index is not None and a.searches_in_memory == 1
    assert costly[0].ref_id == "e7"
    # Once built it ranks everything it can, cheap queries included.
    assert [h.ref_id for h in a.search("rare")] == ["e7"]
    assert a.searches_in_memory == 2
    # A word FTS5 splits into several tokens is a phrase, which needs positions: FTS5 ranks it.
    a.ingest(ep(99, "the rare_unit is here"))
    assert [h.ref_id for h in a.search("rare_unit")] == ["e99"]
    assert a.searches_fts5 == 2
    a.close()


def test_small_stores_never_build_the_index() -> None:
    a = SqliteFtsAdapter()
    a.reset("s")
    for i in range(100):
        a.ingest(ep(i, f"daily report p99 latency normal shift {i}"))
    for q in ("daily report", "p99 latency normal shift", "shift 42"):
        assert a.search(q)
    assert a._index is None and a.searches_in_memory == 0
    a.close()


def test_removed_pruning_options_are_refused_with_the_reason() -> None:
    with pytest.raises(ConfigError, match=r"max_df is no longer an option.*exact BM25"):
        create_adapter("sqlite_fts", {"max_df": 0.2})
    with pytest.raises(ConfigError, match="max_df and prune_above are no longer options"):
        create_adapter("sqlite_fts_chunked", {"prune_above": 5000, "max_df": 0.1})
