"""A streamed dataset's scopes kept on disk, so that a run holds one scope's text at a time.

A dataset loaded as an outline (:func:`lens.data.dataset_load.load_dataset_dropping` with
``outline=True``) holds its scopes with every episode's text and meta left out; the whole
scopes go to a :class:`ScopeSpill`, an unnamed temporary file (removed by the system when the
process ends, however it ends) with one compressed record per scope: the scope's canonical
JSON, the same bytes the dataset's content hash is made of, so hashing it reads them back
without building a model. :meth:`lens.data.dataset.Dataset.full_scope` reads one scope back
whole.
"""

from __future__ import annotations

import os
import tempfile
import zlib
from typing import Any

from lens.data.dataset import Episode, Scope
from lens.data.dataset_hash import CanonicalJson, canonical_json

# zlib's fastest level: a dataset's text takes about a third of its size on disk, at a cost
# well under what parsing it took.
_LEVEL = 1


class ScopeSpill:
    """Whole scopes on disk, by scope id; read back from any thread."""

    def __init__(self) -> None:
        # Held open for the dataset's life: closing it removes it.
        self._file = tempfile.TemporaryFile(prefix="lens-scopes-")  # noqa: SIM115
        self._end = 0
        self._at: dict[str, tuple[int, int]] = {}
        # Each scope's episode lengths in characters, in stream order (what a cost plan reads).
        self._sizes: dict[str, list[int]] = {}

    def add(self, scope: Scope) -> Scope:
        """Keep ``scope`` on disk; returns its outline (its episodes without their text)."""
        blob = zlib.compress(canonical_json(scope.model_dump(mode="json")).encode("utf-8"),
                             _LEVEL)
        self._file.write(blob)
        self._at[scope.scope_id] = (self._end, len(blob))
        self._end += len(blob)
        self._sizes[scope.scope_id] = [len(e.text) for e in scope.ordered_episodes()]
        return outline(scope)

    def canonical(self, scope_id: str) -> CanonicalJson:
        """The scope's canonical JSON, as the content hash reads it."""
        offset, size = self._at[scope_id]
        self._file.flush()
        blob = os.pread(self._file.fileno(), size, offset)
        return CanonicalJson(zlib.decompress(blob).decode("utf-8"))

    def load(self, scope_id: str) -> Scope:
        """The whole scope, as it was streamed."""
        return Scope.model_validate_json(self.canonical(scope_id))

    def sizes(self, scope_id: str) -> list[int]:
        return self._sizes[scope_id]

    def close(self) -> None:
        self._file.close()


# What every outline episode shares: a dataset of 250,000 episodes (LongMemEval `_m`) keeps
# its outline at about 0.3 kB an episode instead of 1 kB.
_NO_META: dict[str, Any] = {}
_EPISODE_FIELDS: set[str] = set(Episode.model_fields)


def outline(scope: Scope) -> Scope:
    """``scope`` with every episode's text and meta left out (its ids and times kept; the
    scope's meta kept); built without validation, from a scope already validated."""
    episodes = [Episode.model_construct(_EPISODE_FIELDS, episode_id=e.episode_id,
                                        scope_id=e.scope_id, timestamp=e.timestamp, text="",
                                        meta=_NO_META)
                for e in scope.episodes]
    return Scope.model_construct(scope_id=scope.scope_id, episodes=episodes, meta=scope.meta)
