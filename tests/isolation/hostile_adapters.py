"""Adapters that attack their own process; named ``tests.isolation.hostile_adapters:Class`` in
configs, so the local executor runs each in a process of its own."""

from __future__ import annotations

import gc
import os
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from lens.data.dataset import Episode
from lens.memory.adapter import (
    CapabilityManifest,
    Document,
    MemoryAdapter,
    SearchResult,
    SyncMemoryAdapter,
)
from lens.memory.listing import MemoryListing


class Honest(MemoryAdapter):
    def __init__(self) -> None:
        self.eps: list[Episode] = []

    async def reset(self, scope_id: str) -> None:
        self.eps.clear()

    async def ingest(self, episode: Episode) -> None:
        self.eps.append(episode)

    async def search(self, query: str, filters: dict[str, Any] | None = None,
                     limit: int | None = None) -> list[SearchResult]:
        return [SearchResult(ref_id=e.episode_id, text=e.text) for e in self.eps[-3:]]

    async def retrieve(self, ref_id: str) -> Document | None:
        return next((Document(ref_id=e.episode_id, text=e.text) for e in self.eps
                     if e.episode_id == ref_id), None)

    async def get_capabilities(self) -> CapabilityManifest:
        return CapabilityManifest()


class ExitsInIngest(Honest):
    async def ingest(self, episode: Episode) -> None:
        if len(self.eps) == 2:
            os._exit(3)
        await super().ingest(episode)


class BlocksLoop(Honest):
    async def search(self, query: str, filters: dict[str, Any] | None = None,
                     limit: int | None = None) -> list[SearchResult]:
        time.sleep(3600)
        return []


class HogsMemory(Honest):
    async def ingest(self, episode: Episode) -> None:
        hoard = []
        while True:
            hoard.append(bytearray(64 * 1024 * 1024))


class PrintsToStdout(Honest):
    async def search(self, query: str, filters: dict[str, Any] | None = None,
                     limit: int | None = None) -> list[SearchResult]:
        print("\x00\x00\x00\x05hello, this would break a naive protocol")
        return await super().search(query, filters, limit)


class LooksForGold(Honest):
    """Searches its own process for anything that looks like ground truth."""

    async def search(self, query: str, filters: dict[str, Any] | None = None,
                     limit: int | None = None) -> list[SearchResult]:
        found = [repr(o)[:80] for o in gc.get_objects()
                 if isinstance(o, str) and "GOLDSECRET" in o]
        return [SearchResult(ref_id="leak", text=" ".join(found[:3]) or "nothing")]


class _SyncBase(SyncMemoryAdapter):
    def __init__(self) -> None:
        self.eps: list[Episode] = []

    def reset(self, scope_id: str) -> None:
        self.eps.clear()

    def ingest(self, episode: Episode) -> None:
        self.eps.append(episode)

    def search(self, query: str, filters: dict[str, Any] | None = None,
               limit: int | None = None) -> list[SearchResult]:
        return [SearchResult(ref_id=e.episode_id, text=e.text) for e in self.eps[-2:]]

    def retrieve(self, ref_id: str) -> Document | None:
        return None

    def get_capabilities(self) -> CapabilityManifest:
        return CapabilityManifest()


class SyncHangs(_SyncBase):
    def search(self, query: str, filters: dict[str, Any] | None = None,
               limit: int | None = None) -> list[SearchResult]:
        time.sleep(3600)
        return []


class SyncSlow(_SyncBase):
    def search(self, query: str, filters: dict[str, Any] | None = None,
               limit: int | None = None) -> list[SearchResult]:
        time.sleep(6)
        return super().search(query, filters, limit)


class SlowHonest(Honest):
    """Honest, but each search takes a moment, so a run lasts long enough to be interrupted."""

    async def search(self, query: str, filters: dict[str, Any] | None = None,
                     limit: int | None = None) -> list[SearchResult]:
        import anyio

        await anyio.sleep(0.7)
        return await super().search(query, filters, limit)


class HeldHonest(Honest):
    """Honest, but from its ``hold_after + 1``-th distinct query on (the second question's, by
    default) a search waits at a gate: it writes ``held`` into the folder its ``gate`` option
    names and returns only once ``release`` appears there. A test interrupts or kills the run
    at that known point (so many questions answered, the next in flight), whatever the
    machine's speed."""

    class Options(BaseModel):
        gate: str
        hold_after: int = 1

    def __init__(self, gate: str, hold_after: int = 1) -> None:
        super().__init__()
        self.gate = Path(gate)
        self.hold_after = hold_after
        self.queries: list[str] = []

    async def search(self, query: str, filters: dict[str, Any] | None = None,
                     limit: int | None = None) -> list[SearchResult]:
        import anyio

        if query not in self.queries:
            self.queries.append(query)
        if self.queries.index(query) >= self.hold_after \
                and not (self.gate / "release").exists():
            (self.gate / "held").write_text(query, encoding="utf-8")
            while not (self.gate / "release").exists():
                await anyio.sleep(0.05)
        return await super().search(query, filters, limit)


class BreaksContract(Honest):
    """Returns a result of the wrong shape from the method its ``breaks`` option names: a dict
    where a ``SearchResult``, a ``Document`` or a ``CapabilityManifest`` belongs, a number where
    a standing context's text or a memory listing belongs."""

    class Options(BaseModel):
        breaks: str

    def __init__(self, breaks: str) -> None:
        super().__init__()
        self.breaks = breaks

    async def search(self, query: str, filters: dict[str, Any] | None = None,
                     limit: int | None = None) -> list[SearchResult]:
        results = await super().search(query, filters, limit)
        if self.breaks == "search":
            return [r.model_dump() for r in results]  # type: ignore[misc]  # the breach
        return results

    async def retrieve(self, ref_id: str) -> Document | None:
        doc = await super().retrieve(ref_id)
        if self.breaks == "retrieve" and doc is not None:
            return doc.model_dump()  # type: ignore[return-value]  # the breach
        return doc

    async def get_capabilities(self) -> CapabilityManifest:
        caps = CapabilityManifest(standing_context=self.breaks == "standing_context",
                                  memory_listing=self.breaks == "list_memory")
        if self.breaks == "get_capabilities":
            return caps.model_dump()  # type: ignore[return-value]  # the breach
        return caps

    async def standing_context(self, scope_id: str, checkpoint: int) -> str | None:
        return 42  # type: ignore[return-value]  # the breach (asked only when declared)

    async def list_memory(self, scope_id: str, checkpoint: int) -> MemoryListing | None:
        return 42  # type: ignore[return-value]  # the breach (asked only when declared)
