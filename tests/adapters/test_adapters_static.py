"""The static encoder (token vectors distilled from the packaged MiniLM) and ``encoder: static``.

Every test distils only the tokens its texts use (a few thousand at most, seconds), never the
whole vocabulary; one table file is shared by the module so each token is distilled once.
"""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from lens.core.errors import ConfigError
from lens.memory.adapter import create_adapter
from lens.testing import AdapterConformance
from tests.support.extras import missing_reason, requires_extra

static_mod = pytest.importorskip("lens.adapters.static_embedding")
enc_mod = pytest.importorskip("lens.adapters.embedding")
# The bench's choice of query sentences, so the test and the bench measure the same thing.
distinctive_sentences = pytest.importorskip("bench.static_recipe").distinctive_sentences

TEXTS = [
    "The database ran out of connections during the peak.",
    "Connection pool exhaustion hit the primary DB at peak load.",
    "My grandmother bakes bread every Sunday morning.",
    "p99 latency on /geo_lookup rose from 180ms to 410ms after the 14:05 deploy.",
]


def _cache() -> str:
    """The vector adapters' shared test cache (as in test_adapters_conformance.py)."""
    import tempfile

    return str(Path(tempfile.gettempdir()) / "lens-tests" / "embeddings.sqlite")


@pytest.fixture(scope="module")
def table_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    reason = missing_reason("vector")
    if reason:
        pytest.skip(reason)
    return tmp_path_factory.mktemp("static") / "embeddings.sqlite"


@pytest.fixture(scope="module")
def encoder(table_path: Path) -> Any:
    return static_mod.StaticEncoder(table_path=table_path)


def test_token_vector_is_the_teachers_embedding_of_the_token(encoder: Any) -> None:
    teacher = enc_mod.shared_encoder()
    words = ["database", "queue", "deploy", "bread"]
    ids = [encoder.tokenizer.token_to_id(w) for w in words]
    assert all(i is not None for i in ids)  # each is one WordPiece token
    encoder.encode(words)
    rows = encoder.table.vecs[ids]
    # Distilled through the packaged model: the row is MiniLM's own sentence vector of the word.
    assert np.abs(rows - teacher.encode(words)).max() < 1e-5


def test_vectors_unit_norm_deterministic_and_meaningful(encoder: Any) -> None:
    v = encoder.encode(TEXTS)
    assert v.shape == (4, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    # The same vector whatever the batch holds, and on every call.
    alone = np.stack([encoder.encode([t])[0] for t in TEXTS])
    reordered = encoder.encode(TEXTS[::-1])[::-1]
    assert np.array_equal(v, alone) and np.array_equal(v, reordered)
    sim = v @ v.T
    assert sim[0, 1] > sim[0, 2] and sim[0, 1] > sim[1, 2]  # paraphrase closer than unrelated
    empty = encoder.encode(["", "   "])
    assert not empty.any()  # no token, no direction


def test_whole_text_counts_past_the_contextual_window(encoder: Any) -> None:
    head = "Routine shift, dashboards reviewed, nothing of note. " * 60  # about 600 tokens
    a = encoder.encode([head + "The kafka broker crashed and the billing queue stalled."])[0]
    b = encoder.encode([head + "Lemon soap pallets were restocked in warehouse seven."])[0]
    assert not np.allclose(a, b, atol=1e-4)


@requires_extra("vector")
def test_token_table_is_persisted_and_reused(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "e.sqlite"
    first = static_mod.StaticEncoder(table_path=path)
    v1 = first.encode(TEXTS)
    assert first.distilled > 0
    assert first.table.stored() == first.distilled
    first.close()

    calls: list[int] = []
    real_forward = enc_mod.MiniLMEncoder._forward

    def counting(self: Any, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        calls.append(len(ids))
        return real_forward(self, ids, mask)

    monkeypatch.setattr(enc_mod.MiniLMEncoder, "_forward", counting)
    second = static_mod.StaticEncoder(table_path=path)
    v2 = second.encode(TEXTS)
    assert calls == [] and second.distilled == 0  # every token vector came from the file
    assert np.array_equal(v1, v2)
    # A token the file lacks is distilled, and only that token.
    new_word = "hippopotamus"
    ids = sorted(set(second.tokenizer.encode(new_word, add_special_tokens=False).ids))
    new = int((~second.table.known[ids]).sum())
    assert new > 0
    second.encode([new_word])
    assert second.distilled == new and sum(calls) == new
    second.close()


def test_lazy_distillation_matches_one_batch(table_path: Path, tmp_path: Path) -> None:
    """A token's vector does not depend on which tokens it was distilled with."""
    lazy = static_mod.StaticEncoder(table_path=tmp_path / "lazy.sqlite")
    for text in TEXTS:  # one small batch of new tokens a call
        lazy.encode([text])
    batch = static_mod.StaticEncoder(table_path=tmp_path / "batch.sqlite")
    batch.encode(TEXTS)
    ids = np.flatnonzero(lazy.table.known)
    assert np.array_equal(ids, np.flatnonzero(batch.table.known))
    assert np.allclose(lazy.table.vecs[ids], batch.table.vecs[ids], atol=1e-6)
    assert np.allclose(lazy.encode(TEXTS), batch.encode(TEXTS), atol=1e-6)


@requires_extra("vector")
def test_cache_keys_distinguish_the_encoders(tmp_path: Path) -> None:
    from lens.adapters.embedder import Embedder

    path = tmp_path / "e.sqlite"
    static = Embedder(cache=str(path), encoder="static")
    contextual = Embedder(cache=str(path))
    vs = static.embed(TEXTS[:2])
    vc = contextual.embed(TEXTS[:2])
    assert not np.allclose(vs, vc, atol=1e-3)
    key = static.key_model
    assert static_mod.RECIPE in key and static.encoder.fingerprint[:16] in key
    static.close()
    contextual.close()
    rows = sqlite3.connect(path).execute(
        "SELECT model, count(*) FROM embeddings GROUP BY model ORDER BY model").fetchall()
    assert rows == sorted([("all-MiniLM-L6-v2@256", 2), (key, 2)])
    # The token table sits in the same file, keyed by the model files' content hash.
    tables = sqlite3.connect(path).execute(
        "SELECT DISTINCT table_key FROM token_vectors").fetchall()
    assert tables == [(f"all-MiniLM-L6-v2:d{static_mod.DISTILL_VERSION}:"
                       f"{static.encoder.fingerprint}",)]


def test_fingerprint_is_the_model_files_content(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    folder.mkdir()
    for name in ("config.json", "tokenizer.json", "model.safetensors"):
        (folder / name).write_bytes(name.encode())
    before = static_mod.model_fingerprint(folder)
    (folder / "model.safetensors").write_bytes(b"other weights")
    assert static_mod.model_fingerprint(folder) != before


def test_retrieval_on_a_lens_scope(encoder: Any, shared_datasets: Path) -> None:
    data = json.loads((shared_datasets / "scope_01_with_distractors.json").read_text())
    episodes = sorted(data["scopes"][0]["episodes"], key=lambda e: e["timestamp"])
    queries = distinctive_sentences(episodes)
    assert len(queries) >= 50
    E = encoder.encode([e["text"] for e in episodes])
    Q = encoder.encode([q for _, q in queries])
    ranks = [int(((E @ qv) > (E[i] @ qv)).sum()) + 1 for (i, _), qv in zip(queries, Q,
                                                                          strict=True)]
    top5 = sum(r <= 5 for r in ranks) / len(ranks)
    # One sentence against the mean of a whole 2-5 kB report: about half land in the top 5 of
    # 120 (0.49 when written), where chance is 5/120.
    assert top5 >= 0.4 > 8 * 5 / len(episodes), f"top-5 rate {top5:.2f}"
    assert math.isclose(float(np.linalg.norm(E[0])), 1.0, abs_tol=1e-5)


@requires_extra("vector")
class TestVectorStatic(AdapterConformance):
    adapter_name = "vector"
    adapter_options: ClassVar[dict[str, Any]] = {"embedding_cache": _cache(),
                                                 "encoder": "static"}


@requires_extra("vector")
class TestHybridChunkedStatic(AdapterConformance):
    adapter_name = "hybrid_chunked"
    adapter_options: ClassVar[dict[str, Any]] = {
        "embedding_cache": _cache(), "encoder": "static", "chunk_chars": 100,
        "chunk_overlap": 20}


@pytest.mark.parametrize("name", ["vector", "vector_chunked", "hybrid", "mem0", "postgres"])
def test_unknown_encoder_is_a_config_error_naming_the_field(name: str) -> None:
    with pytest.raises(ConfigError, match=rf"'{name}\.options\.encoder'.*'contextual' or "
                                          r"'static'"):
        create_adapter(name, {"encoder": "fasttext"})


def test_window_with_static_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"'vector\.options\.max_seq_length'.*contextual"):
        create_adapter("vector", {"encoder": "static", "max_seq_length": 128})


@requires_extra("vector")
def test_capabilities_name_the_encoder() -> None:
    import anyio

    async def main() -> None:
        static = create_adapter("vector", {"encoder": "static", "embedding_cache": "none"})
        contextual = create_adapter("hybrid", {"embedding_cache": "none"})
        try:
            s = (await static.get_capabilities()).description
            c = (await contextual.get_capabilities()).description
        finally:
            await static.aclose()
            await contextual.aclose()
        assert "static token vectors" in s
        assert "static" not in c and "all-MiniLM-L6-v2@256" in c

    anyio.run(main)
