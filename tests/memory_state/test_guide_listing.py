"""The listing example of docs/writing-an-adapter.md works as the guide says: taken from the
guide itself, beside the dbm memory it extends, it passes the conformance suite's listing check
and lists what it was given."""

from __future__ import annotations

import importlib
import sys
from datetime import UTC, datetime
from pathlib import Path

import anyio

from lens.data.dataset import Episode
from lens.testing.conformance import run_check
from tests.adapters.test_adapters_guide_example import guide_files


def test_guide_listing_example(tmp_path: Path) -> None:
    files = guide_files()
    for name in ("dbm_memory.py", "listed_memory.py"):
        (tmp_path / name).write_text(files[name], encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        module = importlib.import_module("listed_memory")
        result = anyio.run(run_check, "memory_listing_well_formed", module.ListedDbmMemory)
        memory = module.ListedDbmMemory(path=str(tmp_path / "m"))
        memory.ingest(Episode(episode_id="e1", scope_id="s", text="checkout p99 410 ms",
                              timestamp=datetime(2024, 5, 1, tzinfo=UTC)))
        listing = memory.list_memory("s", 1)
        memory.close()
    finally:
        sys.path.remove(str(tmp_path))
        for name in ("listed_memory", "dbm_memory"):
            sys.modules.pop(name, None)
    assert result.status == "passed", result
    (item,) = listing.items
    assert (item.item_id, item.source_episodes, item.changed_at) == (
        "e1", ["e1"], datetime(2024, 5, 1, tzinfo=UTC))
