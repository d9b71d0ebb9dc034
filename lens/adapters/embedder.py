"""Embeddings with a persistent cache keyed by (model, text hash).

Two encoders: ``contextual`` (the default) runs all-MiniLM-L6-v2 over each text (see
:mod:`lens.adapters.embedding`); ``static`` averages token vectors distilled once from the same
model (see :mod:`lens.adapters.static_embedding`), hundreds of times faster and somewhat less
precise. The cache keys name the encoder, so their vectors never mix.

Re-ingesting a scope (a resumed run, a second adapter over the same scope, a repeat) looks every
text up before encoding it, so it costs a SQLite read instead of a forward pass. The cache is
``embeddings.sqlite`` in lens's cache folder (``$LENS_CACHE_DIR``, else
``$XDG_CACHE_HOME/lens``, else ``~/.cache/lens``: the folder of the model cache too) unless the
adapter's ``embedding_cache`` option names another file, or ``"none"`` to keep it in memory only.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from lens.adapters.embedding import DEFAULT_MODEL, Matrix, MiniLMEncoder, shared_encoder, window
from lens.adapters.static_embedding import StaticEncoder, shared_static_encoder
from lens.models.cache import default_cache_dir

NO_CACHE = "none"
ENCODERS = ("contextual", "static")
EncoderKind = Literal["contextual", "static"]


class EmbedderOptions(BaseModel):
    """The options of an adapter that embeds with :class:`Embedder`: the model, the encoder
    and where the vectors are cached."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(default=DEFAULT_MODEL, description="packaged model name or model folder")
    encoder: EncoderKind = Field(
        default="contextual", description="'contextual': the model over each text (best "
        "quality, a few texts/s on a CPU); 'static': token vectors distilled once from the "
        "model, averaged (hundreds of texts/s, reads whole texts, less precise)")
    embedding_cache: str | None = Field(
        default=None, description="cache file; default embeddings.sqlite in lens's cache folder "
        "($LENS_CACHE_DIR, else $XDG_CACHE_HOME/lens); 'none' keeps it in memory")


def default_cache_path() -> Path:
    return default_cache_dir() / "embeddings.sqlite"


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """A SQLite table of float32 vectors; safe to share between threads and processes."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path) if path else ":memory:", check_same_thread=False,
                                   timeout=30)
        if path is not None:
            self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS embeddings(model TEXT, text_sha256 TEXT, dim INTEGER, "
            "vec BLOB, PRIMARY KEY(model, text_sha256)) WITHOUT ROWID"
        )
        self._db.commit()
        self._lock = threading.Lock()

    def get_many(self, model: str, keys: Sequence[str]) -> dict[str, Matrix]:
        found: dict[str, Matrix] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                part = list(keys[start:start + 500])
                marks = ",".join("?" * len(part))
                rows = self._db.execute(
                    f"SELECT text_sha256, dim, vec FROM embeddings WHERE model = ? "
                    f"AND text_sha256 IN ({marks})", [model, *part]).fetchall()
                for key, dim, blob in rows:
                    vec = np.frombuffer(blob, dtype=np.float32)
                    if vec.shape == (dim,):
                        found[key] = vec
        return found

    def put_many(self, model: str, items: dict[str, Matrix]) -> None:
        if not items:
            return
        with self._lock:
            self._db.executemany(
                "INSERT OR REPLACE INTO embeddings(model, text_sha256, dim, vec) VALUES(?,?,?,?)",
                [(model, k, int(v.shape[0]), np.asarray(v, dtype=np.float32).tobytes())
                 for k, v in items.items()])
            self._db.commit()

    def close(self) -> None:
        with self._lock:
            self._db.close()


class Embedder:
    """Batched, cached sentence embeddings for one model."""

    def __init__(self, model: str = DEFAULT_MODEL, cache: str | None = None,
                 max_seq_length: int | None = None, batch_size: int = 32,
                 encoder: EncoderKind = "contextual") -> None:
        if encoder not in ENCODERS:
            raise ValueError(f"encoder must be one of {ENCODERS}, not {encoder!r}")
        self.model = model
        self.kind = encoder
        self.max_seq_length = max_seq_length
        self.cache_path = (None if cache == NO_CACHE
                           else Path(cache) if cache else default_cache_path())
        self.batch_size = batch_size
        self.encoded = 0  # texts that missed the cache and went through the model
        self.cache_hits = 0
        self._cache: EmbeddingCache | None = None
        self._lock = threading.Lock()

    @property
    def encoder(self) -> MiniLMEncoder | StaticEncoder:
        if self.kind == "static":
            # The token table lives in the cache's file: one file to move or delete.
            return shared_static_encoder(self.model, self.cache_path)
        return shared_encoder(self.model, self.max_seq_length)

    @property
    def cache(self) -> EmbeddingCache:
        # Opened on first use, so listing or configuring an adapter touches no file.
        with self._lock:
            if self._cache is None:
                self._cache = EmbeddingCache(self.cache_path)
            return self._cache

    @property
    def key_model(self) -> str:
        """The cache key's model part. Contextual: the model and its truncation length, since a
        shorter window gives other vectors. Static: the model, the recipe version and the model
        files' content hash."""
        if self.kind == "static":
            return shared_static_encoder(self.model, self.cache_path).key
        return f"{self.model}@{window(self.model, self.max_seq_length)}"

    @property
    def label(self) -> str:
        """What a capability description says about the encoder; loads no weights."""
        if self.kind == "static":
            return f"{self.model} static token vectors, whole text"
        return self.key_model

    @property
    def dim(self) -> int:
        return self.encoder.dim

    def embed(self, texts: Sequence[str]) -> Matrix:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        keys = [text_key(t) for t in texts]
        cached = self.cache.get_many(self.key_model, sorted(set(keys)))
        missing: dict[str, str] = {}
        for key, text in zip(keys, texts, strict=True):
            if key not in cached:
                missing.setdefault(key, text)
        if missing:
            vecs = self.encoder.encode(list(missing.values()), batch_size=self.batch_size)
            fresh = dict(zip(missing.keys(), vecs, strict=True))
            self.cache.put_many(self.key_model, fresh)
            cached.update(fresh)
        self.encoded += len(missing)
        self.cache_hits += len(texts) - len(missing)
        for i, key in enumerate(keys):
            out[i] = cached[key]
        return out

    def close(self) -> None:
        with self._lock:
            if self._cache is not None:
                self._cache.close()
                self._cache = None


class LocalEmbedder:
    """lens's local embedding model (all-MiniLM-L6-v2, 384 dimensions, the ``vector`` extra)
    in the caller's own process, with lens's embedding cache: public as
    ``lens.plugin_api.LocalEmbedder``.

    For an adapter that needs vectors and nothing else from lens. Its calls are not metered:
    an adapter whose embedding calls should count in its memory cost reaches the same model
    through the model gateway (``lens.EmbeddingGatewayOptions``). The model loads on first use;
    ``close`` releases the cache file (the conformance suite's aclose check counts it).
    """

    def __init__(self, *, cache: bool | str | Path = True,
                 encoder: EncoderKind = "contextual") -> None:
        """``cache``: True for lens's embedding cache file (shared with the ``vector``
        adapters and the gateway), False for none, or a file of the caller's own.
        ``encoder``: ``contextual`` (the model itself) or ``static`` (its distilled token
        vectors, much faster and somewhat less precise)."""
        where = None if cache is True else NO_CACHE if cache is False else str(cache)
        self._embedder = Embedder(cache=where, encoder=encoder)

    @property
    def model(self) -> str:
        return self._embedder.model

    @property
    def dim(self) -> int:
        """The vectors' length (loads the model)."""
        return self._embedder.dim

    def embed(self, texts: Sequence[str]) -> Matrix:
        """One L2-normalised float32 row per text, in order; cached texts are not encoded
        again. CPU-bound: call it from a thread (a ``SyncMemoryAdapter``'s methods run in one),
        not on the event loop."""
        return self._embedder.embed(texts)

    def close(self) -> None:
        self._embedder.close()
