"""The state that answered, fixed: each checkpoint's memory read before and after its questions.

For an adapter that lists its memory, the runner reads the listing once ``prepare`` has returned,
again until two readings in a row agree (a system that extracts in the background is not ready
until its listing settles), and again after the checkpoint's last question. The first digest
names the state every question of the checkpoint was answered from (it goes into each question's
record); a different digest afterwards means the memory changed while it was being questioned (it
learned from the questions, or was still writing), which the checklist fails. The time from the
last ingest of the checkpoint to the settled reading is the memory's time to be ready.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import anyio

from lens.memory.adapter import MemoryAdapter
from lens.memory.contract import check_result
from lens.memory.listing import MemoryListing, listing_bytes, read_listing, state_digest
from lens.runner.memory_states import STATE_EVENT, ListingLine, append_listing
from lens.runs.store import RunStore

# Readings until a changing listing is given up on as not settling; waits between them double
# from the first, so a system still writing is given about 25 s in all.
SETTLE_READS = 10
FIRST_WAIT_S = 0.05


@dataclass(frozen=True)
class UnitPlace:
    """Which unit the readings belong to (the runner's Unit, without importing it)."""

    key: str
    adapter: str
    scope_id: str
    repeat: int
    # The item keys this unit's listing file holds already (each item is written once).
    written: set[str] = field(default_factory=set, compare=False, hash=False)


async def _read(adapter: MemoryAdapter, scope_id: str, checkpoint: int) -> MemoryListing:
    # Checked as the worker checks it for an adapter in a process of its own: a breach reads
    # the same under every isolation.
    raw = check_result("list_memory", await adapter.list_memory(scope_id, checkpoint))
    listing = read_listing(raw)
    if listing is None:
        raise TypeError("list_memory returned None but the adapter's capabilities declare "
                        "memory_listing")
    return listing


async def settle(adapter: MemoryAdapter, scope_id: str,
                 checkpoint: int) -> tuple[MemoryListing, bool, int]:
    """The listing once two readings in a row agree, whether they did, and the readings made."""
    listing = await _read(adapter, scope_id, checkpoint)
    wait = FIRST_WAIT_S
    for reads in range(2, SETTLE_READS + 1):
        again = await _read(adapter, scope_id, checkpoint)
        if state_digest(again) == state_digest(listing):
            return again, True, reads
        listing = again
        await anyio.sleep(wait)
        wait *= 2
    return listing, False, SETTLE_READS


async def before_questions(store: RunStore, place: UnitPlace, adapter: MemoryAdapter,
                           checkpoint: int, episodes_ingested: int,
                           ingest_ended: float) -> str:
    """Read the settled state, record it (event and listing file); its digest."""
    listing, settled, reads = await settle(adapter, place.scope_id, checkpoint)
    ready_s = time.perf_counter() - ingest_ended
    digest = state_digest(listing)
    append_listing(store.root, ListingLine(
        unit_key=place.key, adapter=place.adapter, scope_id=place.scope_id, repeat=place.repeat,
        checkpoint=checkpoint, episodes_ingested=episodes_ingested, digest=digest,
        listing=listing), place.written)
    store.append_event(STATE_EVENT, place.key, phase="before", adapter=place.adapter,
                       scope_id=place.scope_id, checkpoint=checkpoint, digest=digest,
                       items=len(listing.items), bytes=listing_bytes(listing),
                       episodes_ingested=episodes_ingested, ready_s=round(ready_s, 4),
                       settled=settled, reads=reads)
    return digest


async def after_questions(store: RunStore, place: UnitPlace, adapter: MemoryAdapter,
                          checkpoint: int, before: str) -> None:
    """Read the state again after the checkpoint's last question and record whether it moved."""
    listing = await _read(adapter, place.scope_id, checkpoint)
    digest = state_digest(listing)
    store.append_event(STATE_EVENT, place.key, phase="after", adapter=place.adapter,
                       scope_id=place.scope_id, checkpoint=checkpoint, digest=digest,
                       items=len(listing.items), bytes=listing_bytes(listing),
                       changed=digest != before)
