"""The listing file of a unit: each item written once, a checkpoint a line of keys; a resumed
unit's later line wins, and a line a crash tore leaves its checkpoint out."""

from __future__ import annotations

from pathlib import Path

from lens.memory.listing import MemoryItem, MemoryListing
from lens.runner.memory_states import ListingLine, append_listing, listing_file, load_listings


def line(checkpoint: int, *texts: str) -> ListingLine:
    listing = MemoryListing(items=[MemoryItem(item_id=f"e{i}", text=t)
                                   for i, t in enumerate(texts)])
    return ListingLine(unit_key="a|s|r0", adapter="a", scope_id="s", repeat=0,
                       checkpoint=checkpoint, episodes_ingested=checkpoint, digest=f"d{checkpoint}",
                       listing=listing)


def test_items_are_written_once_and_read_back_per_checkpoint(tmp_path: Path) -> None:
    written: set[str] = set()
    append_listing(tmp_path, line(1, "one"), written)
    append_listing(tmp_path, line(2, "one", "two"), written)
    text = listing_file(tmp_path, "a|s|r0").read_text(encoding="utf-8")
    assert text.count('"text":"one"') == 1 and text.count('"text":"two"') == 1
    got = load_listings(tmp_path)
    assert [i.text for i in got[("a|s|r0", 2)].listing.items] == ["one", "two"]
    assert got[("a|s|r0", 1)].digest == "d1"
    # A resumed unit writes again with a fresh set: its line wins.
    append_listing(tmp_path, line(2, "one", "three"), set())
    assert [i.text for i in load_listings(tmp_path)[("a|s|r0", 2)].listing.items] == [
        "one", "three"]


def test_a_torn_line_leaves_its_checkpoint_out(tmp_path: Path) -> None:
    append_listing(tmp_path, line(1, "one"), set())
    path = listing_file(tmp_path, "a|s|r0")
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 3])  # the item line cut in the middle
    assert load_listings(tmp_path) == {}
