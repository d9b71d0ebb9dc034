"""Question records saved in batches: one worker-thread hop and one fsync per batch.

A record is made durable off the event loop (an fsync can stall for milliseconds). Handing
each record to a worker thread on its own cost more of lens's CPU per question than any other
single step at hundreds of questions in flight (``bench/RESULTS.md``, "Runner"): questions
finish in bursts, and every hop wakes a thread and then the loop. Here the records that finish
while one batch is being written wait for it and then go together in the next one; a lone
record still goes at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

import anyio
import anyio.to_thread

T = TypeVar("T")


class _Slot(Generic[T]):
    __slots__ = ("done", "error", "item")

    def __init__(self, item: T) -> None:
        self.item = item
        self.done = False
        self.error: Exception | None = None


class BatchSaver(Generic[T]):
    def __init__(self, save_many: Callable[[list[T]], None]) -> None:
        self._save_many = save_many
        self._pending: list[_Slot[T]] = []
        self._flushing = False
        self._flushed: anyio.Event | None = None  # made inside the event loop

    async def save(self, item: T) -> None:
        """Return once ``item`` is saved; raise what saving its batch raised."""
        slot = _Slot(item)
        self._pending.append(slot)
        while not slot.done:
            if self._flushing and self._flushed is not None:
                await self._flushed.wait()
                continue
            # Whoever finds no batch in flight writes everything pending, its own included;
            # if it is cancelled, the next waiter to wake takes over.
            self._flushing = True
            self._flushed = anyio.Event()
            batch, self._pending = self._pending, []
            try:
                await anyio.to_thread.run_sync(self._save_many, [s.item for s in batch])
            except Exception as exc:
                for s in batch:
                    s.error = exc
            finally:
                for s in batch:
                    s.done = True
                self._flushing = False
                self._flushed.set()
        if slot.error is not None:
            raise slot.error
