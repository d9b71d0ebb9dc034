"""What a memory holds: the optional listing an adapter gives of its own state.

An adapter that declares ``CapabilityManifest.memory_listing`` answers ``list_memory(scope_id,
checkpoint)`` with a :class:`MemoryListing`: the items it stores (a document, a chunk, a note, an
extracted fact), each with the episodes it came from and when it was written or last changed.
lens reads it twice per checkpoint (before the first question and after the last) to fix the
state that answered (:func:`state_digest`), and scores what the memory wrote from it
(lens/scoring/measures/write_side.py). Without the capability every write-side figure is
unknown, never 0.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

# Items a listing may hold: past this the listing is a protocol violation, not a memory (the
# process executor's reply limit would stop it anyway, with a less clear message).
MAX_ITEMS = 200_000


class MemoryItem(BaseModel):
    """One thing the memory stores, as text."""

    model_config = ConfigDict(extra="forbid")

    item_id: str = Field(min_length=1)
    text: str
    # The episodes the item was written from (empty when the system does not keep that).
    source_episodes: list[str] = Field(default_factory=list)
    # When the item was written or last changed, on the dataset's clock (the newest source
    # episode's timestamp) or the system's own; None when the system does not say.
    changed_at: datetime | None = None


class MemoryListing(BaseModel):
    """Everything a memory holds for one scope at one checkpoint."""

    model_config = ConfigDict(extra="forbid")

    items: list[MemoryItem] = Field(default_factory=list, max_length=MAX_ITEMS)
    # A digest of the memory's whole state, when the system keeps more than it lists (a graph,
    # embeddings, an agent's core memory): lens then fixes the state by this, not by the items.
    digest: str | None = Field(default=None, min_length=1, max_length=200)


def _canonical(item: MemoryItem) -> list[Any]:
    return [item.item_id, item.text, sorted(item.source_episodes),
            item.changed_at.isoformat() if item.changed_at else None]


def items_digest(items: Iterable[MemoryItem]) -> str:
    """sha256 over the items in id order: the same items give the same digest, whatever order
    the system listed them in; any text, source or change time that differs changes it."""
    rows = sorted((_canonical(i) for i in items), key=lambda r: (r[0], r[1]))
    body = json.dumps(rows, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def state_digest(listing: MemoryListing) -> str:
    """The digest that names the memory state: the adapter's own when it gives one (prefixed, so
    the two kinds never collide), else the items'."""
    if listing.digest is not None:
        return f"adapter:{listing.digest}"
    return f"items:{items_digest(listing.items)}"


def listing_bytes(listing: MemoryListing) -> int:
    """The bytes of text the memory holds (UTF-8), the size figure's numerator."""
    return sum(len(i.text.encode("utf-8")) for i in listing.items)


def read_listing(raw: object) -> MemoryListing | None:
    """An adapter's reply to ``list_memory`` as a listing (None stays None); a malformed reply
    raises ``ValueError`` naming what is wrong."""
    if raw is None or isinstance(raw, MemoryListing):
        return raw
    return MemoryListing.model_validate(raw)
