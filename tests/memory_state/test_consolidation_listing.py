"""The consolidating memories list their model-written notes (from every episode folded so far,
changed at the newest one's time) beside the raw episodes their search reaches, and pass the
conformance suite's listing check; with a scripted model client."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import anyio
import pytest

from lens.adapters.consolidators import CoreAdapter, FacetedAdapter, SummaryAdapter
from lens.data.dataset import Episode
from lens.memory.listing import MemoryListing
from lens.testing.conformance import run_check
from tests.shapes.fakes import EchoClient

CLASSES = {"summary": SummaryAdapter, "core": CoreAdapter, "faceted": FacetedAdapter}


async def _listing(cls: type) -> MemoryListing:
    adapter = cls(client=EchoClient(), episodes_per_fold=2)
    t0 = datetime(2024, 5, 1, tzinfo=UTC)
    await adapter.reset("s")
    for i in range(1, 4):
        await adapter.ingest(Episode(episode_id=f"ep{i}", scope_id="s",
                                     timestamp=t0 + timedelta(hours=i),
                                     text=f"Sensor {i} read {i * 11} units."))
    await adapter.prepare("s", 3)
    listing = await adapter.list_memory("s", 3)
    await adapter.aclose()
    return listing


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_consolidating_memories_list_their_notes(name: str) -> None:
    listing = anyio.run(_listing, CLASSES[name])
    notes = [i for i in listing.items if i.item_id.startswith("note:")]
    raw = [i for i in listing.items if not i.item_id.startswith("note:")]
    assert notes and notes[0].item_id == "note:memory"
    assert all(n.source_episodes == ["ep1", "ep2", "ep3"] for n in notes)
    assert all(n.changed_at == datetime(2024, 5, 1, 3, tzinfo=UTC) for n in notes)
    assert [i.item_id for i in raw] == ["ep1", "ep2", "ep3"]
    if name == "faceted":
        assert any(n.item_id.startswith("note:facet:") for n in notes)
    result = anyio.run(run_check, "memory_listing_well_formed",
                       lambda: CLASSES[name](client=EchoClient(), episodes_per_fold=2))
    assert result.status == "passed", result
