"""The memory states a run recorded: what each unit's memory held at each checkpoint.

Two things per (unit, checkpoint), written by the runner (lens/runner/memory_state.py) for an
adapter that lists its memory (``CapabilityManifest.memory_listing``):

- ``memory_state`` events in ``events.jsonl``: the state's digest before the first question
  (``phase: before``, with the time from the last ingest to the memory being ready and whether
  its listing settled) and after the last (``phase: after``, with ``changed``);
- ``RUN_DIR/memory/<unit>.jsonl``: the listing itself as it stood before the first question,
  which the write-side metrics score (lens/scoring/measures/write_side.py). Each item is written
  once per unit (``{"key": ..., "item": {...}}``, keyed by a hash of its content) and each
  checkpoint is one line naming its items' keys, so a store that grows by a few items per
  checkpoint adds those items and a list of keys, not a copy of itself.

A unit run again (``--resume``) appends again; the last line of a checkpoint wins, and a line a
crash tore is skipped (a checkpoint naming an item whose line was torn is left out).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from lens.core.redact import scrub_bytes
from lens.core.safenames import child
from lens.memory.listing import MemoryItem, MemoryListing
from lens.runs.store import _error_name

FOLDER = "memory"
STATE_EVENT = "memory_state"


class ItemLine(BaseModel):
    model_config = ConfigDict(extra="forbid")

    key: str
    item: MemoryItem


class _CheckpointOfUnit(BaseModel):
    """Which unit and checkpoint a stored line belongs to, and the digest of its state."""

    unit_key: str
    adapter: str
    scope_id: str
    repeat: int
    checkpoint: int
    episodes_ingested: int
    digest: str


class CheckpointLine(_CheckpointOfUnit):
    """One checkpoint's listing of one unit, as stored: its items by key."""

    model_config = ConfigDict(extra="forbid")

    listing_digest: str | None = None
    items: list[str]


def item_key(item: MemoryItem) -> str:
    return hashlib.sha256(item.model_dump_json().encode("utf-8")).hexdigest()[:32]


class ListingLine(_CheckpointOfUnit):
    """One checkpoint's listing of one unit, as stored."""

    model_config = ConfigDict(extra="ignore")

    listing: MemoryListing


def listing_file(root: Path, unit_key: str) -> Path:
    return child(root / FOLDER, _error_name(unit_key), "a unit's listing file", ".jsonl")


def append_listing(root: Path, line: ListingLine, written: set[str]) -> None:
    """Append one checkpoint's listing to its unit's file: the items not in ``written`` (the
    keys this unit already wrote, updated here), then the checkpoint's line."""
    path = listing_file(root, line.unit_key)
    path.parent.mkdir(parents=True, exist_ok=True)
    keys = [item_key(i) for i in line.listing.items]
    out = []
    for key, item in zip(keys, line.listing.items, strict=True):
        if key not in written:
            out.append(ItemLine(key=key, item=item).model_dump_json())
            written.add(key)
    out.append(CheckpointLine(
        items=keys, listing_digest=line.listing.digest,
        **line.model_dump(exclude={"listing"})).model_dump_json())
    with open(path, "ab") as fh:
        fh.write(scrub_bytes(("\n".join(out) + "\n").encode("utf-8")))
        fh.flush()


def _lines(path: Path) -> Iterator[ListingLine]:
    items: dict[str, MemoryItem] = {}
    with open(path, encoding="utf-8", errors="replace") as fh:
        for text in fh:
            try:
                raw = json.loads(text)
                if isinstance(raw, dict) and "item" in raw:
                    entry = ItemLine.model_validate(raw)
                    items[entry.key] = entry.item
                    continue
                line = CheckpointLine.model_validate(raw)
            except (ValidationError, ValueError, RecursionError):
                # A line torn by a crash (that checkpoint was not finished) or nested past
                # what the parser can hold.
                continue
            if all(k in items for k in line.items):
                yield ListingLine(
                    listing=MemoryListing(items=[items[k] for k in line.items],
                                          digest=line.listing_digest),
                    **line.model_dump(exclude={"items", "listing_digest"}))


def listings_by_unit(root: Path) -> Iterator[dict[tuple[str, int], ListingLine]]:
    """Each unit's recorded listings by (unit key, checkpoint), the latest line of each, one
    unit's file at a time: a pass over a run's listings holds one unit's (a store that lists
    its whole memory repeats the scope's records in each of its listings)."""
    folder = root / FOLDER
    if not folder.is_dir():
        return
    for path in sorted(folder.glob("*.jsonl")):
        yield {(line.unit_key, line.checkpoint): line for line in _lines(path)}


def load_listings(root: Path) -> dict[tuple[str, int], ListingLine]:
    """Every recorded listing by (unit key, checkpoint); the latest line of each wins."""
    out: dict[tuple[str, int], ListingLine] = {}
    for unit in listings_by_unit(root):
        out.update(unit)
    return out


@dataclass
class CheckpointState:
    """The recorded state of one unit at one checkpoint (from the events)."""

    unit_key: str
    adapter: str
    scope_id: str
    checkpoint: int
    before: str | None = None
    after: str | None = None
    ready_s: float | None = None
    settled: bool | None = None
    items: int | None = None
    bytes: int | None = None
    # The listing raised at this checkpoint (before or after the questions): the message.
    error: str | None = None

    @property
    def changed(self) -> bool | None:
        """Whether the state differs after the last question (None: not read after)."""
        if self.before is None or self.after is None:
            return None
        return self.before != self.after


def checkpoint_states(events: Iterable[dict[str, Any]]) -> list[CheckpointState]:
    """The recorded states, one per (unit, checkpoint) in the order first seen; a unit run
    again replaces its earlier readings."""
    found: dict[tuple[str, int], CheckpointState] = {}
    for e in events:
        if e.get("kind") != STATE_EVENT or not isinstance(e.get("checkpoint"), int):
            continue
        key = (str(e.get("key")), int(e["checkpoint"]))
        phase = e.get("phase")
        if phase == "before":
            found[key] = CheckpointState(
                unit_key=key[0], adapter=str(e.get("adapter")), scope_id=str(e.get("scope_id")),
                checkpoint=key[1], before=_str(e.get("digest")), ready_s=_num(e.get("ready_s")),
                settled=e.get("settled") if isinstance(e.get("settled"), bool) else None,
                items=_int(e.get("items")), bytes=_int(e.get("bytes")))
        elif phase == "after" and key in found:
            found[key].after = _str(e.get("digest"))
        elif phase == "error":
            state = found.setdefault(key, CheckpointState(
                unit_key=key[0], adapter=str(e.get("adapter")), scope_id=str(e.get("scope_id")),
                checkpoint=key[1]))
            state.error = _str(e.get("error")) or "the listing failed"
    return list(found.values())


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None
