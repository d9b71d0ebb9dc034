"""Dense retrieval: sentence embeddings and exact cosine top-k over numpy.

Episodes (or, for ``vector_chunked``, their chunks) are embedded with all-MiniLM-L6-v2 running on
numpy (see :mod:`lens.adapters.embedding`). The model reads at most 256 tokens (about 1,000
characters of English), so a whole-episode vector sees only the start of a long episode: use
``vector_chunked`` when episodes are long. With ``encoder: static`` a text's vector is the
weighted mean of token vectors distilled once from the same model (see
:mod:`lens.adapters.static_embedding`): hundreds of episodes per second instead of a few, the whole
text read, weaker where numbers and word order carry the meaning. Ingest only queues
episodes; they are embedded in batches when the queue fills, before a search, and at each
checkpoint (``prepare``). Brute-force cosine is exact, and at 100k units of 384 floats one query
is a 150 MB matrix-vector product.
Filters: ``start_date`` / ``end_date`` (ISO-8601, inclusive).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from pydantic import Field, ValidationInfo, field_validator

from lens.adapters.chunking import (
    Unit,
    episode_document,
    episode_units,
    search_ranked,
    split_ref,
    unit_document,
    unit_items,
)
from lens.adapters.embedder import Embedder, EmbedderOptions
from lens.adapters.filters import DateRange
from lens.adapters.options import UnitOptions
from lens.data.dataset import Episode
from lens.memory.adapter import (
    CapabilityManifest,
    Document,
    SearchResult,
    SyncMemoryAdapter,
    read_options,
)
from lens.memory.listing import MemoryListing

DEFAULT_CHUNK_CHARS = 1000


class VectorOptions(EmbedderOptions, UnitOptions):
    batch_size: int = Field(default=32, ge=1, le=512)
    max_seq_length: int | None = Field(default=None, ge=16, le=512)

    @field_validator("max_seq_length")
    @classmethod
    def _window_needs_contextual(cls, value: int | None, info: ValidationInfo) -> int | None:
        # A static vector reads every token at the same cost; a window would only lose text.
        if value is not None and info.data.get("encoder") == "static":
            raise ValueError("applies to the contextual encoder only (the static encoder "
                             "reads the whole text)")
        return value


class VectorChunkedOptions(VectorOptions):
    chunk_chars: int | None = Field(default=DEFAULT_CHUNK_CHARS, ge=100)


class UnitMatrix:
    """Unit-length vectors of the units held, growing by doubling so ingest stays linear."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.units: list[Unit] = []
        self._vecs = np.zeros((0, dim), dtype=np.float32)
        self._ts = np.zeros(0, dtype=np.float64)

    def __len__(self) -> int:
        return len(self.units)

    def add(self, units: list[Unit], vecs: np.ndarray) -> None:
        if not self.units:
            self.dim = int(vecs.shape[1])
            self._vecs = np.zeros((0, self.dim), dtype=np.float32)
        n, need = len(self.units), len(self.units) + len(units)
        if need > self._vecs.shape[0]:
            cap = max(need, 2 * self._vecs.shape[0], 64)
            grown = np.zeros((cap, self.dim), dtype=np.float32)
            grown[:n] = self._vecs[:n]
            ts = np.zeros(cap, dtype=np.float64)
            ts[:n] = self._ts[:n]
            self._vecs, self._ts = grown, ts
        self._vecs[n:need] = vecs
        self._ts[n:need] = [u.timestamp.timestamp() for u in units]
        self.units.extend(units)

    def remove_episode(self, episode_id: str) -> None:
        keep = [i for i, u in enumerate(self.units) if u.episode_id != episode_id]
        if len(keep) == len(self.units):
            return
        self._vecs = self._vecs[keep].copy()
        self._ts = self._ts[keep].copy()
        self.units = [self.units[i] for i in keep]

    def top(self, query: np.ndarray, k: int, dates: DateRange) -> list[tuple[Unit, float]]:
        n = len(self.units)
        if n == 0:
            return []
        # einsum, not BLAS: a matrix-vector product is memory-bound, and OpenBLAS's sgemv
        # hands half of it to a second thread that, with the other core busy, took a fixed
        # 8 ms to wake (10k units: 8.0 ms with BLAS, 0.74 ms with einsum; 100k: 16 vs 7.5 ms).
        scores = np.einsum("ij,j->i", self._vecs[:n], query)
        if not dates.empty:
            ts = self._ts[:n]
            ok = np.ones(n, dtype=bool)
            if dates.start is not None:
                ok &= ts >= dates.start.timestamp()
            if dates.end is not None:
                ok &= ts <= dates.end.timestamp()
            scores = np.where(ok, scores, -np.inf)
        k = min(k, n)
        idx = np.argpartition(-scores, k - 1)[:k]
        idx = idx[np.argsort(-scores[idx], kind="stable")]
        return [(self.units[i], float(scores[i])) for i in idx if np.isfinite(scores[i])]


class VectorAdapter(SyncMemoryAdapter):
    Options = VectorOptions

    def __init__(self, **options: Any) -> None:
        self.opts = read_options(self, VectorOptions, options)
        self.embedder = Embedder(self.opts.model, self.opts.embedding_cache,
                                 self.opts.max_seq_length, self.opts.batch_size, self.opts.encoder)
        self._lock = threading.RLock()
        self._matrix = UnitMatrix(0)
        self._episodes: dict[str, Episode] = {}
        self._units: dict[str, Unit] = {}
        self._pending: list[Unit] = []

    def reset(self, scope_id: str) -> None:
        with self._lock:
            self._matrix = UnitMatrix(0)
            self._episodes.clear()
            self._units.clear()
            self._pending.clear()

    def ingest(self, episode: Episode) -> None:
        with self._lock:
            if episode.episode_id in self._episodes:
                self._drop(episode.episode_id)
            self._episodes[episode.episode_id] = episode
            for unit in episode_units(episode, self.opts.chunk_chars, self.opts.chunk_overlap):
                self._units[unit.ref_id] = unit
                self._pending.append(unit)
            # Embedding as we go bounds the work of any one call (the runner times each
            # ingest and prepare call); a batch is still a full batch for the model.
            if len(self._pending) >= self.opts.batch_size:
                self._flush()

    def _drop(self, episode_id: str) -> None:
        self._episodes.pop(episode_id, None)
        self._pending = [u for u in self._pending if u.episode_id != episode_id]
        for ref in [r for r, u in self._units.items() if u.episode_id == episode_id]:
            del self._units[ref]
        self._matrix.remove_episode(episode_id)

    def _flush(self) -> None:
        if self._pending:
            units, self._pending = self._pending, []
            self._matrix.add(units, self.embedder.embed([u.text for u in units]))

    def prepare(self, scope_id: str, checkpoint: int) -> None:
        with self._lock:
            self._flush()

    def ranked(self, query: str, dates: DateRange, k: int) -> list[tuple[Unit, float]]:
        """The ``k`` units most similar to ``query``, best first (cosine similarity)."""
        with self._lock:
            self._flush()
            qvec = self.embedder.embed([query])[0]
            return self._matrix.top(qvec, k, dates)

    def search(
        self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None
    ) -> list[SearchResult]:
        return search_ranked(self.ranked, self.opts, query, filters, limit)

    def retrieve(self, ref_id: str) -> Document | None:
        with self._lock:
            _, chunk = split_ref(ref_id)
            if chunk is None:
                return episode_document(self._episodes, ref_id)
            unit = self._units.get(ref_id)
            return None if unit is None else unit_document(unit)

    def list_memory(self, scope_id: str, checkpoint: int) -> MemoryListing:
        """Every stored unit, embedded or waiting for its batch (both answer searches)."""
        with self._lock:
            return unit_items(list(self._units.values()))

    def get_capabilities(self) -> CapabilityManifest:
        return self.opts.capabilities(["semantic"],
                                      f"dense retrieval ({self.embedder.label}, cosine)")

    def close(self) -> None:
        self.embedder.close()


class VectorChunkedAdapter(VectorAdapter):
    """``vector`` over chunks of ``chunk_chars`` characters (default 1000, about 250 tokens)."""

    Options = VectorChunkedOptions

